package invariant

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
)

// observation is one source's readable answer to one question in one
// snapshot, decoded. The read began at or after Taken (the round's start)
// and returned at ReadAt, both on faultline's own clock: so the thing read
// was so at some instant within [Taken, ReadAt], and nothing finer is known.
type observation[T any] struct {
	Source   evidence.Source
	Snapshot int
	Taken    time.Time
	ReadAt   time.Time
	RV       string
	Value    T
}

// gap is a source that was asked a question and gave no usable answer.
type gap struct {
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

// ordered returns the input's snapshots sorted by when they were taken.
func ordered(snaps []evidence.Snapshot) []evidence.Snapshot {
	out := append([]evidence.Snapshot(nil), snaps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Taken.Before(out[j].Taken) })
	return out
}

// collect decodes every answer to q from the sources matching glob, in
// snapshot order. A NotAsked answer is neither evidence nor a gap (the
// source cannot answer q); an unreadable answer, or a value that does not
// decode as T, is a gap.
func collect[T any](snaps []evidence.Snapshot, glob string, q evidence.Question) ([]observation[T], []gap) {
	var obs []observation[T]
	var gaps []gap
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
				gaps = append(gaps, gap{Source: src, Snapshot: i, At: a.ReadAt, Reason: a.Reason, Refused: a.Refused()})
				continue
			}
			var v T
			if err := a.Decode(&v); err != nil {
				gaps = append(gaps, gap{Source: src, Snapshot: i, At: a.ReadAt, Reason: err.Error()})
				continue
			}
			obs = append(obs, observation[T]{Source: src, Snapshot: i, Taken: s.Taken, ReadAt: a.ReadAt, RV: a.ResourceVersion, Value: v})
		}
	}
	return obs, gaps
}

// sourcesOf lists the distinct sources of some observations and gaps, in
// name order.
func sourcesOf[T any](obs []observation[T], gaps []gap) []string {
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

// hostOf returns the host part of a source name ("cri/worker1" → "worker1").
func hostOf(src evidence.Source) string {
	_, host, _ := strings.Cut(string(src), "/")
	return host
}

// stamp renders a moment for reasons.
func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// eventStamp says when a timeline event was seen and, for one a relisting
// replayed, when the cluster recorded it, to its precision, for reasons.
func eventStamp(e evidence.Event) string {
	s := stamp(e.At)
	if !e.Replayed {
		return s
	}
	if e.ClusterAt.IsZero() {
		return s + " (replayed by a relisting)"
	}
	return fmt.Sprintf("%s (replayed by a relisting; %s %s)", s, e.ClusterField, e.ClusterClock())
}

// gapSummary says which sources were unreadable, with the first reason
// of each, for reasons.
func gapSummary(gaps []gap) string {
	first := map[evidence.Source]gap{}
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
		parts = append(parts, fmt.Sprintf("%s unreadable %d time(s), first at %s (%s)", src, count[src], stamp(g.At), g.Reason))
	}
	return strings.Join(parts, "; ")
}
