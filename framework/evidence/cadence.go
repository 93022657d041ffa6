package evidence

import (
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
	// SlowestSource is the source with the longest interval between two
	// of its consecutive answered reads inside the stretch (by read time),
	// and SourceMax that interval; a source with fewer than two answered
	// reads is not counted.
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
	// A source answers when any of its questions holds a value.
	reads := map[Source][]time.Time{}
	for _, s := range snaps {
		for src, qs := range s.Answers {
			var at time.Time
			for _, a := range qs {
				if a.Readable() && a.ReadAt.After(at) {
					at = a.ReadAt
				}
			}
			if !at.IsZero() {
				reads[src] = append(reads[src], at)
			}
		}
	}
	for _, src := range slices.Sorted(func(yield func(Source) bool) {
		for s := range reads {
			if !yield(s) {
				return
			}
		}
	}) {
		at := reads[src]
		slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(at); i++ {
			if g := at[i].Sub(at[i-1]); g > c.SourceMax {
				c.SourceMax, c.SlowestSource = g, src
			}
		}
	}
	return c
}
