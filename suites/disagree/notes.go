package disagree

import (
	"context"
	"sync"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// NotingSampler is the suite's sampler: the framework's, plus the moments
// faultline itself causes (a forced deletion a fault performs), which no
// watcher can tell apart from the cluster's own doing. A noted moment
// joins the timeline at the next sample.
type NotingSampler struct {
	inner evidence.Sampler

	mu    sync.Mutex
	notes []evidence.Event
}

// NewNotingSampler wraps inner.
func NewNotingSampler(inner evidence.Sampler) *NotingSampler {
	return &NotingSampler{inner: inner}
}

var _ evidence.Sampler = (*NotingSampler)(nil)

// Note adds e to the timeline at the next sample.
func (s *NotingSampler) Note(e evidence.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, e)
}

// Sample is the inner sampler's snapshot with the noted moments added to
// its events. A failed sample keeps the notes for the next one.
func (s *NotingSampler) Sample(ctx context.Context, l lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	snap, events, err := s.inner.Sample(ctx, l)
	if err != nil {
		return snap, events, err
	}
	s.mu.Lock()
	events = append(events, s.notes...)
	s.notes = nil
	s.mu.Unlock()
	return snap, events, nil
}

// DiscardEvents drops what the timeline holds that no run has taken: the
// inner sampler's (when it keeps a timeline of its own) and the notes.
// The suite calls it right after a reset, so that what the watcher saw
// while the lab was put back never opens the next run's timeline.
func (s *NotingSampler) DiscardEvents() int {
	s.mu.Lock()
	n := len(s.notes)
	s.notes = nil
	s.mu.Unlock()
	if d, ok := s.inner.(interface{ DiscardEvents() int }); ok {
		n += d.DiscardEvents()
	}
	return n
}
