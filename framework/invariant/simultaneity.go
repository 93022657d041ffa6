package invariant

import (
	"sort"
	"time"
)

// Two invariants (single-copy, single-leader) must tell "active in two
// places at the same moment" from "active in two places one after the
// other". A read only says a thing was active at some instant within
// [Taken, ReadAt]; two reads in the same round therefore never prove
// simultaneity on their own. What does prove it is continuity: the same
// holder (one container ID, one process) seen active by two reads was
// active throughout between them, because it cannot stop and come back
// (a runtime never restarts an exited container under the same ID; a
// controller that loses its lease exits). So a holder seen active at
// reads r1 and r2 was certainly active over [r1.ReadAt, r2.Taken].

// sighting is one read of one place that saw a holder active.
type sighting struct {
	Place  string // the node or host read
	Holder string // what was active there (container ID, process)
	Taken  time.Time
	ReadAt time.Time
}

// placeRead is one readable read of a place, with the holders it saw
// active (possibly none).
type placeRead struct {
	Place  string
	Taken  time.Time
	ReadAt time.Time
	Active []string
}

// certainSpan is an interval over which a holder was certainly active.
type certainSpan struct {
	Place, Holder string
	From, To      time.Time
}

// overlap is a proven moment at which two places had a holder active.
type overlap struct {
	At   time.Time
	A, B certainSpan
	// BSighting is set when B is a single read lying wholly inside A.
	BSighting *sighting
}

// spansOf turns a place's reads into the spans its holders were certainly
// active. A read of the place that saw the holder inactive splits its
// sightings (it cannot happen for a true container ID or process, but the
// evidence decides, not the assumption).
func spansOf(reads []placeRead) ([]certainSpan, []sighting) {
	sort.SliceStable(reads, func(i, j int) bool { return reads[i].Taken.Before(reads[j].Taken) })
	type run struct{ first, last sighting }
	open := map[string]*run{}
	var spans []certainSpan
	var sightings []sighting
	closeRun := func(r *run) {
		if r.first.ReadAt.Before(r.last.Taken) {
			spans = append(spans, certainSpan{Place: r.first.Place, Holder: r.first.Holder, From: r.first.ReadAt, To: r.last.Taken})
		}
	}
	for _, rd := range reads {
		active := map[string]bool{}
		for _, h := range rd.Active {
			active[h] = true
			s := sighting{Place: rd.Place, Holder: h, Taken: rd.Taken, ReadAt: rd.ReadAt}
			sightings = append(sightings, s)
			if r, ok := open[h]; ok {
				r.last = s
			} else {
				open[h] = &run{first: s, last: s}
			}
		}
		for h, r := range open {
			if !active[h] {
				closeRun(r)
				delete(open, h)
			}
		}
	}
	holders := make([]string, 0, len(open))
	for h := range open {
		holders = append(holders, h)
	}
	sort.Strings(holders)
	for _, h := range holders {
		closeRun(open[h])
	}
	return spans, sightings
}

// firstOverlap returns the earliest proven moment at which two different
// places each had a holder active, over all places' reads.
func firstOverlap(byPlace map[string][]placeRead) (overlap, bool) {
	var spans []certainSpan
	var sightings []sighting
	places := make([]string, 0, len(byPlace))
	for p := range byPlace {
		places = append(places, p)
	}
	sort.Strings(places)
	for _, p := range places {
		sp, si := spansOf(byPlace[p])
		spans = append(spans, sp...)
		sightings = append(sightings, si...)
	}
	var best overlap
	found := false
	consider := func(o overlap) {
		if !found || o.At.Before(best.At) {
			best, found = o, true
		}
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.Place == b.Place {
				continue
			}
			from := later(a.From, b.From)
			to := earlier(a.To, b.To)
			if !from.After(to) {
				consider(overlap{At: from, A: a, B: b})
			}
		}
		for _, s := range sightings {
			if s.Place == a.Place {
				continue
			}
			if !s.Taken.Before(a.From) && !s.ReadAt.After(a.To) {
				s := s
				consider(overlap{At: s.Taken, A: a, B: certainSpan{Place: s.Place, Holder: s.Holder, From: s.Taken, To: s.ReadAt}, BSighting: &s})
			}
		}
	}
	return best, found
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// blindSpot is a snapshot in which a second active holder could have gone
// unseen: a place was unreadable while another place had one active, or
// two places were unreadable at once.
type blindSpot struct {
	Snapshot   int
	Taken      time.Time
	Active     []string // places seen with a holder active
	Unreadable []string // places not readable in this snapshot
}

// blindSpots finds the snapshots in which places (all places the input
// knows of) could hide a second active holder. reads and gaps are per
// snapshot index.
func blindSpots(places []string, taken []time.Time, readsBySnap map[int][]placeRead) []blindSpot {
	var out []blindSpot
	for i, t := range taken {
		readable := map[string]bool{}
		var active []string
		for _, r := range readsBySnap[i] {
			readable[r.Place] = true
			if len(r.Active) > 0 {
				active = append(active, r.Place)
			}
		}
		var unreadable []string
		for _, p := range places {
			if !readable[p] {
				unreadable = append(unreadable, p)
			}
		}
		if (len(active) > 0 && len(unreadable) > 0) || len(unreadable) > 1 {
			out = append(out, blindSpot{Snapshot: i, Taken: t, Active: active, Unreadable: unreadable})
		}
	}
	return out
}
