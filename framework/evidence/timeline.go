package evidence

import (
	"sort"
	"sync"
	"time"
)

// Event is one moment that matters, stamped as it happened, with the source
// that saw it.
type Event struct {
	At     time.Time `json:"at"`
	Source Source    `json:"source"`
	// Subject is what the event is about ("node/worker1", "pod/default/web-0").
	Subject string `json:"subject"`
	// Kind names the change ("ready-unknown", "taint-added", "fault-injected").
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// Timeline is a run's events in time order.
type Timeline []Event

// Sorted returns the events ordered by time (stable for equal times).
func (t Timeline) Sorted() Timeline {
	out := append(Timeline(nil), t...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// OfKind returns the events of the given kind, in timeline order.
func (t Timeline) OfKind(kind string) Timeline {
	var out Timeline
	for _, e := range t {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// Recorder collects events from several goroutines (watchers, the sampler,
// the scenario engine itself).
type Recorder struct {
	mu     sync.Mutex
	events Timeline
}

// Add records one event.
func (r *Recorder) Add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Timeline returns what has been recorded so far, in time order.
func (r *Recorder) Timeline() Timeline {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events.Sorted()
}
