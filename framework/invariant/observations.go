package invariant

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
)

// Observation is one source's readable answer to one question in one
// snapshot, decoded. The read began at or after Taken (the round's start)
// and returned at ReadAt, both on faultline's own clock: so the thing read
// was so at some instant within [Taken, ReadAt], and nothing finer is known.
type Observation[T any] struct {
	Source   evidence.Source
	Snapshot int
	Taken    time.Time
	ReadAt   time.Time
	RV       string
	Value    T
}

// Gap is a source that was asked a question and gave no usable answer.
type Gap struct {
	Source   evidence.Source
	Snapshot int
	At       time.Time
	Reason   string
	// Refused is set when the source definitely gave no value (refused,
	// or answered with an error); otherwise (a timeout, a cancelled or
	// unreachable read) the gap is unknown: the source may have served
	// anything then.
	Refused bool
}

// Ordered returns the input's snapshots sorted by when they were taken.
func Ordered(snaps []evidence.Snapshot) []evidence.Snapshot {
	out := append([]evidence.Snapshot(nil), snaps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Taken.Before(out[j].Taken) })
	return out
}

// Collect decodes every answer to q from the sources matching glob, in
// snapshot order. A NotAsked answer is neither evidence nor a gap (the
// source cannot answer q); an unreadable answer, or a value that does not
// decode as T, is a gap.
func Collect[T any](snaps []evidence.Snapshot, glob string, q evidence.Question) ([]Observation[T], []Gap) {
	var obs []Observation[T]
	var gaps []Gap
	for i, s := range snaps {
		for _, src := range s.Sources() {
			if ok, _ := path.Match(glob, string(src)); !ok {
				continue
			}
			a := s.Get(src, q)
			switch a.State {
			case evidence.NotAsked:
				continue
			case evidence.Unreadable:
				gaps = append(gaps, Gap{Source: src, Snapshot: i, At: a.ReadAt, Reason: a.Reason, Refused: a.Refused()})
				continue
			}
			var v T
			if err := a.Decode(&v); err != nil {
				gaps = append(gaps, Gap{Source: src, Snapshot: i, At: a.ReadAt, Reason: err.Error()})
				continue
			}
			obs = append(obs, Observation[T]{Source: src, Snapshot: i, Taken: s.Taken, ReadAt: a.ReadAt, RV: a.ResourceVersion, Value: v})
		}
	}
	return obs, gaps
}

// Latest is src's latest readable answer to q in snaps (in the order
// taken), decoded as T; or, when there is none, why: the last snapshot's
// read of it, or that there was no snapshot. A growing record (a history,
// a log) holds, when read, everything written before, so its latest read
// is the one to judge from.
func Latest[T any](snaps []evidence.Snapshot, src evidence.Source, q evidence.Question) (Observation[T], string) {
	why := "no snapshot to judge"
	for i := len(snaps) - 1; i >= 0; i-- {
		a := snaps[i].Get(src, q)
		var w string
		switch a.State {
		case evidence.NotAsked:
			w = fmt.Sprintf("%s was not asked %s", src, q)
		case evidence.Unreadable:
			w = fmt.Sprintf("%s could not read %s: %s", src, q, a.Reason)
		default:
			var v T
			if err := a.Decode(&v); err != nil {
				w = fmt.Sprintf("%s's %s: %v", src, q, err)
				break
			}
			return Observation[T]{Source: src, Snapshot: i, Taken: snaps[i].Taken, ReadAt: a.ReadAt, RV: a.ResourceVersion, Value: v}, ""
		}
		if i == len(snaps)-1 {
			why = w
		}
	}
	return Observation[T]{}, fmt.Sprintf("no readable %s from %s in the input: %s", q, src, why)
}

// SourcesOf lists the distinct sources of some observations and gaps, in
// name order.
func SourcesOf[T any](obs []Observation[T], gaps []Gap) []string {
	seen := map[string]bool{}
	for _, o := range obs {
		seen[string(o.Source)] = true
	}
	for _, g := range gaps {
		seen[string(g.Source)] = true
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// HostOf returns the host part of a source name ("cri/worker1" → "worker1").
func HostOf(src evidence.Source) string {
	_, host, _ := strings.Cut(string(src), "/")
	return host
}

// Stamp renders a moment for reasons.
func Stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// eventStamp says when a timeline event was seen and, for one a relisting
// replayed, when the cluster recorded it, to its precision, for reasons.
func eventStamp(e evidence.Event) string {
	s := Stamp(e.At)
	if !e.Replayed {
		return s
	}
	if e.ClusterAt.IsZero() {
		return s + " (replayed by a relisting)"
	}
	return fmt.Sprintf("%s (replayed by a relisting; %s %s)", s, e.ClusterField, e.ClusterClock())
}

// GapSummary says which sources were unreadable, with the first reason
// of each, for reasons.
func GapSummary(gaps []Gap) string {
	first := map[evidence.Source]Gap{}
	count := map[evidence.Source]int{}
	var order []evidence.Source
	for _, g := range gaps {
		if _, ok := first[g.Source]; !ok {
			first[g.Source] = g
			order = append(order, g.Source)
		}
		count[g.Source]++
	}
	var parts []string
	for _, src := range order {
		g := first[src]
		parts = append(parts, fmt.Sprintf("%s unreadable %d time(s), first at %s (%s)", src, count[src], Stamp(g.At), g.Reason))
	}
	return strings.Join(parts, "; ")
}
