package apiretry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestDroppedAsksAgainOnlyWithoutTheAPIsOwnAnswer(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"connection refused, wrapped", fmt.Errorf("listing: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"client deadline", context.DeadlineExceeded, true},
		{"server timeout", apierrors.NewServerTimeout(gr, "list", 1), true},
		{"gateway timeout", apierrors.NewTimeoutError("etcd", 1), true},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), true},
		{"unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"internal error", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), true},
		{"not found", apierrors.NewNotFound(gr, "ledger"), false},
		{"already exists", apierrors.NewAlreadyExists(gr, "ledger"), false},
		{"forbidden", apierrors.NewForbidden(gr, "ledger", errors.New("no")), false},
		{"unauthorized", apierrors.NewUnauthorized("who"), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "ledger", nil), false},
		{"bad request", apierrors.NewBadRequest("no"), false},
		{"conflict", apierrors.NewConflict(gr, "ledger", errors.New("changed")), false},
	} {
		if got := Dropped(c.err); got != c.want {
			t.Errorf("Dropped(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDroppedOrConflictAlsoAsksAgainAfterAConflict(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	if !DroppedOrConflict(apierrors.NewConflict(gr, "ledger", errors.New("changed"))) {
		t.Error("a conflict is not asked again")
	}
	if DroppedOrConflict(apierrors.NewForbidden(gr, "ledger", errors.New("no"))) {
		t.Error("a refusal is asked again")
	}
	if !DroppedOrConflict(context.DeadlineExceeded) {
		t.Error("a dropped request is not asked again")
	}
}

func TestCreateAsksAgainWhileDroppedAndTakesAlreadyExistsAsMade(t *testing.T) {
	gr := schema.GroupResource{Resource: "serviceaccounts"}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, c := range []struct {
		name    string
		answers []error
		tries   int
		fails   bool
	}{
		{"made at once", []error{nil}, 1, false},
		{"there already", []error{apierrors.NewAlreadyExists(gr, "elector")}, 1, false},
		{"reset, then made", []error{reset, nil}, 2, false},
		{"reset that landed", []error{reset, apierrors.NewAlreadyExists(gr, "elector")}, 2, false},
		{"refused", []error{apierrors.NewForbidden(gr, "elector", errors.New("no"))}, 1, true},
	} {
		tries := 0
		err := Create(context.Background(), func() error {
			a := c.answers[tries]
			tries++
			return a
		})
		if tries != c.tries || (err != nil) != c.fails {
			t.Errorf("%s: %d tries, error %v; want %d tries, failing %v", c.name, tries, err, c.tries, c.fails)
		}
	}
}

func TestCreateStopsWhenItsContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tries := 0
	err := Create(ctx, func() error {
		tries++
		cancel()
		return context.Canceled
	})
	if err == nil || tries != 1 {
		t.Errorf("%d tries, error %v; want 1 try and its error", tries, err)
	}
}

func TestDoReturnsTheErrorThatStoppedIt(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	cut := fmt.Errorf("Post \"https://10.0.0.1:6443/x\": %w", context.DeadlineExceeded)
	quick := wait.Backoff{Steps: 4, Duration: time.Millisecond}
	for _, c := range []struct {
		name    string
		answers []error
		want    error
		tries   int
	}{
		{"cut off at once", []error{cut}, cut, 1},
		{"reset, then cut off", []error{reset, cut}, cut, 2},
		{"reset every time", []error{reset, reset, reset, reset}, reset, 4},
		{"reset, then done", []error{reset, nil}, nil, 2},
	} {
		tries := 0
		err := Do(context.Background(), quick, func(err error) bool { return errors.Is(err, syscall.ECONNRESET) }, func() error {
			a := c.answers[tries]
			tries++
			return a
		})
		if err != c.want || tries != c.tries {
			t.Errorf("%s: %d tries, error %v; want %d tries, error %v", c.name, tries, err, c.tries, c.want)
		}
	}
}
