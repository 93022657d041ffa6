package apiretry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
