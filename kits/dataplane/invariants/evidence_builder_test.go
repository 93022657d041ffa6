package invariants

import (
	"time"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/invariant/invarianttest"
)

// The kit's tests build their input with the core's invarianttest, under
// the short names they use.
type run = invarianttest.Run

var (
	t0         = invarianttest.T0
	sec        = invarianttest.Sec
	newRun     = invarianttest.NewRun
	expect     = invarianttest.Expect
	notVerdict = invarianttest.NotVerdict
	missedAt   = invarianttest.MissedAt
)

// testBound is a bound for the agents' invariants, with a mechanism the
// reasons must state.
func testBound(d time.Duration) invariant.Bound {
	return invariant.Bound{Limit: d, Why: "test mechanism"}
}
