package evidence

import (
	"sort"
	"sync"
	"time"
)

// Event is one moment that matters, with the source that saw it.
//
// An event has up to two times. At is when faultline saw it: when an
// informer delivered the change to the watcher, a poll returned it, or
// faultline itself acted. ClusterAt is when the cluster recorded it, read
// from the object where the object holds the time of that change (a pod's
// creationTimestamp, a Ready condition's lastTransitionTime, a Lease's
// renewTime); it is zero where the object holds none (a taint removed, an
// endpoint turning not-ready, faultline's own events). The two are on
// different clocks: At on faultline's, ClusterAt on that of whichever
// component wrote the field.
type Event struct {
	At time.Time `json:"at"`
	// ClusterAt is when the cluster recorded the change, to
	// ClusterPrecision: a Kubernetes metav1.Time field holds whole seconds
	// (the change happened within the second that begins at ClusterAt), a
	// metav1.MicroTime field microseconds.
	ClusterAt time.Time `json:"clusterAt,omitzero"`
	// ClusterField names the field ClusterAt was read from
	// ("metadata.creationTimestamp").
	ClusterField     string    `json:"clusterField,omitempty"`
	ClusterPrecision Precision `json:"clusterPrecision,omitempty"`
	// Replayed marks an event delivered by a listing of what already was
	// rather than as it changed: an informer's relisting after its watch
	// broke (see the watch package), or the first list of a polled
	// collection. Its At is when the listing delivered it, which can be
	// long after the change; ClusterAt, where there is one, says when the
	// change happened.
	Replayed bool   `json:"replayed,omitempty"`
	Source   Source `json:"source"`
	// Subject is what the event is about ("node/worker1", "pod/default/web-0").
	Subject string `json:"subject"`
	// Kind names the change ("ready-unknown", "taint-added", "fault-injected").
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	// Lasted, for an event that reports a state seen to hold over a
	// stretch rather than at one moment (an effect probe's look that
	// waited out a timeout), is how long before At it held.
	Lasted time.Duration `json:"lasted,omitempty"`
}

// Precision is how finely a cluster time is recorded.
type Precision string

const (
	// Seconds: a metav1.Time field (creationTimestamp, deletionTimestamp,
	// a condition's lastTransitionTime, a taint's timeAdded, an Event's
	// lastTimestamp), which the API serializes as RFC 3339 with whole
	// seconds (in JSON and in protobuf alike).
	Seconds Precision = "second"
	// Microseconds: a metav1.MicroTime field (a Lease's renewTime and
	// acquireTime, an Event's eventTime and series.lastObservedTime).
	Microseconds Precision = "microsecond"
)

// Duration is the precision as a duration (zero for an unknown one).
func (p Precision) Duration() time.Duration {
	switch p {
	case Seconds:
		return time.Second
	case Microseconds:
		return time.Microsecond
	}
	return 0
}

// ClusterClock renders the event's cluster time of day (UTC) to its
// precision: whole seconds, or microseconds; "" when it has none.
func (e Event) ClusterClock() string {
	if e.ClusterAt.IsZero() {
		return ""
	}
	layout := "15:04:05"
	if e.ClusterPrecision == Microseconds {
		layout = "15:04:05.000000"
	}
	return e.ClusterAt.UTC().Format(layout)
}

// WithCluster returns e with its cluster time: at, truncated to p (what
// the API server would have stored), read from field. A zero at leaves e
// as it is.
func (e Event) WithCluster(at time.Time, field string, p Precision) Event {
	if at.IsZero() {
		return e
	}
	if d := p.Duration(); d > 0 {
		at = at.Truncate(d)
	}
	e.ClusterAt, e.ClusterField, e.ClusterPrecision = at.UTC(), field, p
	return e
}

// Happened returns the stretch in which the event can have happened. A
// live event happened when it was seen (From = To = At; the watch's
// delivery delay is not counted). A replayed event with a cluster time
// happened from ClusterAt to ClusterAt plus its precision, and not after
// it was seen. A replayed event without one has only At to go by.
func (e Event) Happened() (from, to time.Time) {
	if !e.Replayed || e.ClusterAt.IsZero() {
		return e.At, e.At
	}
	from, to = e.ClusterAt, e.ClusterAt.Add(e.ClusterPrecision.Duration())
	if e.At.Before(to) && !e.At.Before(from) {
		to = e.At
	}
	return from, to
}

// Within reports whether the event can have happened between from and to,
// both included (see Happened).
func (e Event) Within(from, to time.Time) bool {
	f, t := e.Happened()
	return !t.Before(from) && !f.After(to)
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
