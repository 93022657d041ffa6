// Package apiretry says which failed Kubernetes API requests are worth
// asking again. A fault's inject, a suite's fixture change and a
// quiesce all talk to API servers behind a virtual address that
// keepalived moves, on a machine whose load makes a server time a
// request out; each asks again for the same reasons, so the reasons live
// here once.
package apiretry

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
