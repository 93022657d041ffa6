package invariant

import (
	"time"
)

// Some guarantees allow a condition for a while (API servers may disagree
// briefly; an endpoint may stay ready until the controllers notice): they
// are broken only when it persists past a bound. A condition seen in
// consecutive rounds i..j is proven to have held at an instant of round
// i's reads and at one of round j's, so for at least Taken(j) − ReadAt(i);
// that lower bound, never more, is what is compared with the bound. A
// round that could not tell (a source unreadable) ends a proven run, but a
// run of bad-or-unknown rounds longer than the bound could hide a
// violation, so it makes the verdict INSUFFICIENT_DATA rather than
// PRESERVED. Unknown rounds are measured the same way as broken ones, so
// "could hide one" means "had they been broken, they would have proved
// one". Resolution: the sampling interval.

type condition int

const (
	holds   condition = iota // the guarantee holds in this round
	broken                   // it is broken in this round
	unknown                  // this round cannot tell
)

// mark is what one round says about one key.
type mark struct {
	Taken  time.Time
	ReadAt time.Time // the latest read the round's judgement used
	State  condition
	Detail string
}

// stretch is consecutive rounds that are not known to hold.
type stretch struct {
	First, Last mark
	// Proven is true when every round of the stretch was broken.
	Proven bool
	// Broken counts the stretch's rounds that were broken; the others
	// could not tell.
	Broken int
}

// Lasted is the proven lower bound of how long the stretch held.
func (s stretch) Lasted() time.Duration { return s.Last.Taken.Sub(s.First.ReadAt) }

// persisting returns the first proven-broken stretch longer than bound,
// and the first stretch of broken-or-unknown rounds longer than bound
// (which could hide one), from marks in round order. With suspectUnknown
// false, a round that cannot tell is suspect only once a broken round
// opened the stretch (a silent source is not a wrong one, but a
// difference last seen before the sources fell silent may still be
// there); with it true, a round that cannot tell is suspect on its own
// (the guarantee needs a positive check each round).
func persisting(marks []mark, bound time.Duration, suspectUnknown bool) (violated, unsure *stretch) {
	var proven, open *stretch
	for _, m := range marks {
		switch m.State {
		case holds:
			proven, open = nil, nil
			continue
		case broken:
			if proven == nil {
				proven = &stretch{First: m, Last: m, Proven: true}
			} else {
				proven.Last = m
			}
			proven.Broken++
			if open == nil {
				open = &stretch{First: m, Last: m}
			} else {
				open.Last = m
			}
			open.Broken++
		case unknown:
			proven = nil
			switch {
			case open != nil:
				open.Last = m
			case suspectUnknown:
				open = &stretch{First: m, Last: m}
			}
		}
		if proven != nil && violated == nil && proven.Lasted() > bound {
			v := *proven
			violated = &v
		}
		if open != nil && unsure == nil && open.Lasted() > bound {
			u := *open
			unsure = &u
		}
	}
	return violated, unsure
}

// widened extends s over the rounds of marks that follow it in the same
// run: broken ones for a proven stretch, broken or unknown ones otherwise.
// persisting stops a stretch at the round that first passed the bound;
// a reason should say how far it went.
func widened(marks []mark, s stretch) stretch {
	out := s
	started := false
	for _, m := range marks {
		if !started {
			started = m.Taken.Equal(s.Last.Taken)
			continue
		}
		if m.State == holds || (s.Proven && m.State != broken) {
			break
		}
		out.Last = m
		if m.State == broken {
			out.Broken++
		}
	}
	return out
}
