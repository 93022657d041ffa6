package evidence

import (
	"context"
	"slices"
	"time"

	"github.com/faultline/faultline/lab"
)

// Sampler takes snapshots of a lab. A source that cannot answer is an
// Unreadable answer in the snapshot, not an error: an error means no
// snapshot could be taken at all.
type Sampler interface {
	// Sample asks every source every question once. The events are the
	// moments the sampler saw since its previous call (it may see none).
	Sample(ctx context.Context, l lab.Lab) (Snapshot, []Event, error)
}

// Run is the run a sampler's snapshots are taken for, as the engine gives
// it: the run's ID, its scenario and arm, and the labels its record keeps
// (verdict.Run.Labels: the scenario's generated labels and its own,
// sorted). The framework reads nothing into the labels; a suite's readers
// may (which of the suite's workloads the run uses, say), so that they
// learn it from the run they are opened for and from nothing shared.
type Run struct {
	ID       string
	Scenario string
	Arm      string
	Labels   []string
}

// Equal is whether r and o are the same run, labels included.
func (r Run) Equal(o Run) bool {
	return r.ID == o.ID && r.Scenario == o.Scenario && r.Arm == o.Arm && slices.Equal(r.Labels, o.Labels)
}

// RunSampler is a Sampler that is told which run it samples for. The
// engine tells it at the start of every run, before the suite's Prepare:
// the snapshots from then on, until the next BeginRun, are that run's.
type RunSampler interface {
	Sampler
	BeginRun(Run)
}

// Streamer is a Sampler with a schedule of its own: each source is asked
// at every tick unless its read of an earlier tick is still outstanding,
// so a slow or dead source never delays the others' reads.
type Streamer interface {
	Sampler
	// Stream begins a tick every interval until ctx ends or fn returns
	// false, and hands fn each tick's snapshot, in tick order, with the
	// events seen since the previous one, or the error that kept the tick
	// from being taken (with the snapshot's Taken, when set, the tick's
	// time: the invariants count a failed tick as a round that could not
	// tell). The reads of the last ticks get one interval after
	// the stop to return, and are then cancelled (unreadable, never a
	// value). It returns once fn has had everything it will get.
	Stream(ctx context.Context, l lab.Lab, every time.Duration, fn func(Snapshot, []Event, error) bool)
}

// Stream samples l with s every interval until ctx ends or fn returns
// false: by the sampler's own schedule when it is a Streamer, otherwise one
// Sample per tick (a Sample that runs past a tick delays the next).
func Stream(ctx context.Context, s Sampler, l lab.Lab, every time.Duration, fn func(Snapshot, []Event, error) bool) {
	if st, ok := s.(Streamer); ok {
		st.Stream(ctx, l, every, fn)
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		snap, events, err := s.Sample(ctx, l)
		if ctx.Err() != nil || !fn(snap, events, err) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
