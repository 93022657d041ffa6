// Package evidencetest builds snapshots by hand, for tests that judge or
// read evidence without a lab: one round per call to Run.Round, each
// answer read at an offset into its round. It links "testing": only tests
// import it.
package evidencetest

import (
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
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
