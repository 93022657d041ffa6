// Package apiretry says which failed Kubernetes API requests are worth
// asking again. A fault's inject, a suite's fixture change and a
// quiesce all talk to API servers behind a virtual address that
// keepalived moves, on a machine whose load makes a server time a
// request out; each asks again for the same reasons, so the reasons live
// here once.
package apiretry

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Dropped says whether a request failed without the API's own answer (a
// reset or refused connection, a client-side timeout: no status came
// back) or with an answer that says to ask again: a server or gateway
// timeout, too many requests, unavailable, or an internal error (the
// API server's answer when its etcd request failed). Any other status
// (not found, forbidden, invalid, a conflict, ...) is the API's own
// answer, which asking the same request again would not change.
//
// A dropped write may still have landed: a caller that asks again must
// read AlreadyExists after a create, or NotFound after a delete, as the
// change made.
func Dropped(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)
}

// DroppedOrConflict is Dropped, or a conflict: the object changed between
// the read and the write. For a caller that reads the object afresh on
// each try, asking again is the fix.
func DroppedOrConflict(err error) bool {
	return Dropped(err) || apierrors.IsConflict(err)
}

// Backoff is how often a dropped request is asked again: eight tries over
// about 30 s, inside any install's or change's own time, each bounded by
// the caller's context.
var Backoff = wait.Backoff{Steps: 8, Duration: 250 * time.Millisecond, Factor: 2, Cap: 8 * time.Second}

// Do calls fn, and calls it again while again says its error is worth
// it and ctx is not done, waiting between tries as b says (b.Steps tries
// at most). It returns fn's last error as fn gave it.
//
// Written here rather than taken from client-go's retry.OnError, which
// hands back the last error it asked again after, not the one that
// stopped it, whenever the stopping error wraps context.Canceled or
// DeadlineExceeded: a request the caller's deadline cut off on its first
// try came back as nil, a change never made as made.
func Do(ctx context.Context, b wait.Backoff, again func(error) bool, fn func() error) error {
	for {
		err := fn()
		if err == nil || ctx.Err() != nil || !again(err) || b.Steps <= 1 {
			return err
		}
		t := time.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// Create makes a create request (do) where an object that already exists
// is left as it is, asking again while the API server drops it
// (Backoff). AlreadyExists, on the first try or after a dropped one that
// landed, is the object made. It stops asking when ctx is done.
func Create(ctx context.Context, do func() error) error {
	return Do(ctx, Backoff, Dropped, func() error {
		if err := do(); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}
