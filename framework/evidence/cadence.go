package evidence

import (
	"maps"
	"slices"
	"time"
)

// Cadence is how often a stretch of snapshots was taken: the intervals
// between consecutive ticks, and, per source, between its answers that held
// a value (a source's own resolution, which a hung or cut source lowers).
type Cadence struct {
	Snapshots int
	// Median and Max interval between consecutive snapshots' ticks (zero
	// with fewer than two snapshots).
	Median, Max time.Duration
	// SlowestSource is the source that went longest without an answer
	// holding a value (between two ticks it answered at, or between the
	// stretch's first or last tick and its nearest one; the whole stretch
	// for a source that never answered), and SourceMax how long.
	SlowestSource Source
	SourceMax     time.Duration
}

// CadenceOf measures snaps (in any order).
func CadenceOf(snaps []Snapshot) Cadence {
	c := Cadence{Snapshots: len(snaps)}
	if len(snaps) < 2 {
		return c
	}
	taken := make([]time.Time, len(snaps))
	for i, s := range snaps {
		taken[i] = s.Taken
	}
	slices.SortFunc(taken, func(a, b time.Time) int { return a.Compare(b) })
	gaps := make([]time.Duration, 0, len(taken)-1)
	for i := 1; i < len(taken); i++ {
		gaps = append(gaps, taken[i].Sub(taken[i-1]))
	}
	slices.Sort(gaps)
	c.Median, c.Max = gaps[len(gaps)/2], gaps[len(gaps)-1]
	if len(gaps)%2 == 0 {
		c.Median = (gaps[len(gaps)/2-1] + gaps[len(gaps)/2]) / 2
	}
	// A source answers at a tick when any of its questions holds a value.
	// Its longest stretch without one runs between the ticks it answered
	// at, and from the first tick to its first, and from its last to the
	// last tick: a source that never answered went the whole stretch
	// without.
	first, last := taken[0], taken[len(taken)-1]
	reads := map[Source][]time.Time{}
	for _, s := range snaps {
		for src, qs := range s.Answers {
			if _, ok := reads[src]; !ok && deployed(qs) {
				reads[src] = nil
			}
			for _, a := range qs {
				if a.Readable() {
					reads[src] = append(reads[src], s.Taken)
					break
				}
			}
		}
	}
	for _, src := range slices.Sorted(maps.Keys(reads)) {
		at := append([]time.Time{first}, reads[src]...)
		at = append(at, last)
		slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(at); i++ {
			if g := at[i].Sub(at[i-1]); g > c.SourceMax {
				c.SourceMax, c.SlowestSource = g, src
			}
		}
	}
	return c
}

// deployed reports whether a source's answers show it exists in the lab:
// a source that only says "not deployed" (a virtual address the lab has
// not) has no cadence to measure.
func deployed(qs map[Question]Answer) bool {
	for _, a := range qs {
		if a.State != NotAsked && a.Class() != "not deployed" {
			return true
		}
	}
	return false
}
