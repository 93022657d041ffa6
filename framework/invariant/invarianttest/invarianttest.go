// Package invarianttest builds the input of an invariant by hand, for the
// tests of invariants written outside the core (the kits' and suites'):
// snapshots of answers read at offsets into rounds, and checks of what
// invariant.Judge makes of them. It links "testing": only tests import it.
package invarianttest

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// T0 is the start of every hand-built run.
var T0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// Sec is T0 plus s seconds.
func Sec(s float64) time.Time { return T0.Add(time.Duration(s * float64(time.Second))) }

// Run builds snapshots by hand: one round per call to Round, answers read
// at an offset after the round's start.
type Run struct {
	t *testing.T
	// Snaps are the snapshots built so far, for a test that sets answers
	// the builder has no helper for.
	Snaps []evidence.Snapshot
}

// NewRun starts a run with no snapshot; t fails it on a bad answer.
func NewRun(t *testing.T) *Run { return &Run{t: t} }

// Round starts a snapshot taken at second s.
func (r *Run) Round(s float64) *Round {
	r.Snaps = append(r.Snaps, evidence.NewSnapshot(Sec(s)))
	return &Round{r: r, i: len(r.Snaps) - 1}
}

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

// Round is one snapshot of a Run.
type Round struct {
	r *Run
	i int
}

// Snapshot is the round's snapshot.
func (rd *Round) Snapshot() *evidence.Snapshot { return &rd.r.Snaps[rd.i] }

// Value records src's answer v (at resource version rv) to q, read after
// seconds into the round.
func (rd *Round) Value(src evidence.Source, q evidence.Question, after float64, v any, rv string) *Round {
	s := &rd.r.Snaps[rd.i]
	a, err := evidence.ValueAnswer(v, s.Taken.Add(time.Duration(after*float64(time.Second))), rv)
	if err != nil {
		rd.r.t.Fatal(err)
	}
	s.Set(src, q, a)
	return rd
}

// Unreadable records that src could not answer q, after seconds into the
// round.
func (rd *Round) Unreadable(src evidence.Source, q evidence.Question, after float64, why string) *Round {
	s := &rd.r.Snaps[rd.i]
	s.Set(src, q, evidence.UnreadableAnswer(why, s.Taken.Add(time.Duration(after*float64(time.Second)))))
	return rd
}

// Expect judges inv through the guarded invariant.Judge and checks the
// verdict and that the reason mentions every word given.
func Expect(t *testing.T, inv invariant.Invariant, in invariant.Input, want verdict.Verdict, words ...string) verdict.Judgement {
	t.Helper()
	j := invariant.Judge(inv, in)
	if j.Verdict != want {
		t.Fatalf("%s: got %s, want %s: %s", inv.Name(), j.Verdict, want, j.Reason)
	}
	for _, w := range words {
		if !strings.Contains(j.Reason, w) {
			t.Errorf("%s: reason lacks %q: %s", inv.Name(), w, j.Reason)
		}
	}
	return j
}

// NotVerdict judges inv and fails when it gives bad: for evidence that
// supports more than one verdict but never bad.
func NotVerdict(t *testing.T, inv invariant.Invariant, in invariant.Input, bad verdict.Verdict) verdict.Judgement {
	t.Helper()
	j := invariant.Judge(inv, in)
	if j.Verdict == bad {
		t.Errorf("%s: got %s, which the evidence does not support: %s", inv.Name(), j.Verdict, j.Reason)
	}
	return j
}

// WantExercised checks that a PRESERVED or VIOLATED judgement says whether
// it was exercised, as want, and that its Exercise mentions every word.
func WantExercised(t *testing.T, j verdict.Judgement, want bool, words ...string) {
	t.Helper()
	if j.Exercised == nil {
		t.Fatalf("%s %s does not say whether it was exercised (exercise %q; reason %s)", j.Invariant, j.Verdict, j.Exercise, j.Reason)
	}
	if *j.Exercised != want {
		t.Errorf("%s %s: exercised %v, want %v (exercise %q)", j.Invariant, j.Verdict, *j.Exercised, want, j.Exercise)
	}
	for _, w := range words {
		if !strings.Contains(j.Exercise, w) {
			t.Errorf("%s: exercise lacks %q: %q", j.Invariant, w, j.Exercise)
		}
	}
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
