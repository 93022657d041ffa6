// Package invarianttest builds the input of an invariant by hand, for the
// tests of invariants written outside the core (the kits' and suites'):
// snapshots of answers read at offsets into rounds (built by
// evidencetest, which the core's own tests use), and checks of what
// invariant.Judge makes of them. It links "testing": only tests import it.
package invarianttest

import (
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/evidencetest"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
)

// T0 is the start of every hand-built run (evidencetest.T0).
var T0 = evidencetest.T0

// Sec is T0 plus s seconds.
func Sec(s float64) time.Time { return evidencetest.Sec(s) }

// Run builds snapshots by hand (evidencetest.Run) and hands them to an
// invariant as its Input.
type Run struct{ *evidencetest.Run }

// Round is one snapshot of a Run.
type Round = evidencetest.Round

// NewRun starts a run with no snapshot; t fails it on a bad answer.
func NewRun(t *testing.T) *Run { return &Run{evidencetest.NewRun(t)} }

// Input is the run's snapshots as the engine hands them to an invariant
// at moment m, the first snapshot its baseline.
func (r *Run) Input(m invariant.Moment) invariant.Input {
	in := invariant.Input{Moment: m, Snapshots: r.Snaps}
	if len(r.Snaps) > 0 {
		b := r.Snaps[0]
		in.Baseline = &b
	}
	return in
}

// Expect judges inv through the guarded invariant.Judge and checks the
// verdict and that the reason mentions every word given.
func Expect(t *testing.T, inv invariant.Invariant, in invariant.Input, want verdict.Verdict, words ...string) verdict.Judgement {
	t.Helper()
	j := invariant.Judge(inv, in)
	verdicttest.WantVerdict(t, j, want, words...)
	return j
}

// NotVerdict judges inv and fails when it gives bad: for evidence that
// supports more than one verdict but never bad.
func NotVerdict(t *testing.T, inv invariant.Invariant, in invariant.Input, bad verdict.Verdict) verdict.Judgement {
	t.Helper()
	j := invariant.Judge(inv, in)
	verdicttest.NotVerdict(t, j, bad)
	return j
}

// WantExercised checks that a PRESERVED or VIOLATED judgement says whether
// it was exercised, as want, and that its Exercise mentions every word.
func WantExercised(t *testing.T, j verdict.Judgement, want bool, words ...string) {
	t.Helper()
	verdicttest.WantExercised(t, j, want, words...)
}

// MissedAt is a timeline of ticks at which no snapshot was taken, at the
// given seconds.
func MissedAt(secs ...float64) evidence.Timeline {
	var tl evidence.Timeline
	for _, s := range secs {
		tl = append(tl, evidence.Event{At: Sec(s), Source: "faultline", Subject: "scenario/x", Kind: invariant.SampleFailedEvent, Detail: "opening the lab's sources: connection refused"})
	}
	return tl
}
