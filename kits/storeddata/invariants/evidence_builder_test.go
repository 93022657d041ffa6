package invariants

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// t0 is the start of every hand-built run.
var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// sec is t0 plus s seconds.
func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// run builds snapshots by hand: one round per call to round, answers read
// at an offset after the round's start.
type run struct {
	t     *testing.T
	snaps []evidence.Snapshot
}

func newRun(t *testing.T) *run { return &run{t: t} }

// round starts a snapshot taken at second s.
func (r *run) round(s float64) *round {
	r.snaps = append(r.snaps, evidence.NewSnapshot(sec(s)))
	return &round{r: r, i: len(r.snaps) - 1}
}

type round struct {
	r *run
	i int
}

// value records src's answer to q, read after seconds into the round.
func (rd *round) value(src evidence.Source, q evidence.Question, after float64, v any, rv string) *round {
	s := &rd.r.snaps[rd.i]
	a, err := evidence.ValueAnswer(v, s.Taken.Add(time.Duration(after*float64(time.Second))), rv)
	if err != nil {
		rd.r.t.Fatal(err)
	}
	s.Set(src, q, a)
	return rd
}

// unreadable records that src could not answer q.
func (rd *round) unreadable(src evidence.Source, q evidence.Question, after float64, why string) *round {
	s := &rd.r.snaps[rd.i]
	s.Set(src, q, evidence.UnreadableAnswer(why, s.Taken.Add(time.Duration(after*float64(time.Second)))))
	return rd
}

func (r *run) input(m invariant.Moment) invariant.Input {
	in := invariant.Input{Moment: m, Snapshots: r.snaps}
	if len(r.snaps) > 0 {
		b := r.snaps[0]
		in.Baseline = &b
	}
	return in
}

// expect judges inv through the guarded Judge and checks the verdict and
// that the reason mentions every word given.
func expect(t *testing.T, inv invariant.Invariant, in invariant.Input, want verdict.Verdict, words ...string) verdict.Judgement {
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

// wantExercised checks that a PRESERVED or VIOLATED judgement says whether
// it was exercised, as want, and that its Exercise mentions every word.
func wantExercised(t *testing.T, j verdict.Judgement, want bool, words ...string) {
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
