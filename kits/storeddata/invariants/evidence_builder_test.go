package invariants

import "github.com/faultline/faultline/framework/invariant/invarianttest"

// The kit's tests build their input with the core's invarianttest, under
// the short names they use.
type run = invarianttest.Run

var (
	t0            = invarianttest.T0
	sec           = invarianttest.Sec
	newRun        = invarianttest.NewRun
	expect        = invarianttest.Expect
	wantExercised = invarianttest.WantExercised
)
