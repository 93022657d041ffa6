package evidence

import (
	"context"
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
