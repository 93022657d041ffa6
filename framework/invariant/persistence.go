package invariant

import (
	"fmt"
	"sort"
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
// one". A tick at which no snapshot could be taken at all (the sampler's
// error, SampleFailedEvent) is such a round too (WithMissed): two stretches
// on either side of it are never joined into one proof. Resolution: the
// sampling interval.

// Condition is what one round says of a guarantee for one key.
type Condition int

const (
	Holds   Condition = iota // the guarantee holds in this round
	Broken                   // it is broken in this round
	Unknown                  // this round cannot tell
)

// Mark is what one round says about one key.
type Mark struct {
	Taken  time.Time
	ReadAt time.Time // the latest read the round's judgement used
	State  Condition
	Detail string
	// Suspect marks an unknown round that could hide the condition on its
	// own: the invariant knows something changed that the subject had
	// still to follow (see Persisting).
	Suspect bool
}

// Stretch is consecutive rounds that are not known to hold.
type Stretch struct {
	First, Last Mark
	// Proven is true when every round of the stretch was broken.
	Proven bool
	// Broken counts the stretch's rounds that were broken; the others
	// could not tell.
	Broken int
}

// Lasted is the proven lower bound of how long the stretch held.
func (s Stretch) Lasted() time.Duration { return s.Last.Taken.Sub(s.First.ReadAt) }

// Persisting returns the first proven-broken stretch longer than bound,
// and the first stretch of broken-or-unknown rounds longer than bound
// (which could hide one), from marks in round order. With suspectUnknown
// false, a round that cannot tell is suspect only once a broken round
// opened the stretch (a silent source is not a wrong one, but a
// difference last seen before the sources fell silent may still be
// there), unless the mark itself is Suspect; with it true, a round that
// cannot tell is suspect on its own (the guarantee needs a positive check
// each round).
func Persisting(marks []Mark, bound time.Duration, suspectUnknown bool) (violated, unsure *Stretch) {
	var proven, open *Stretch
	for _, m := range marks {
		switch m.State {
		case Holds:
			proven, open = nil, nil
			continue
		case Broken:
			if proven == nil {
				proven = &Stretch{First: m, Last: m, Proven: true}
			} else {
				proven.Last = m
			}
			proven.Broken++
			if open == nil {
				open = &Stretch{First: m, Last: m}
			} else {
				open.Last = m
			}
			open.Broken++
		case Unknown:
			proven = nil
			switch {
			case open != nil:
				open.Last = m
			case suspectUnknown || m.Suspect:
				open = &Stretch{First: m, Last: m}
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

// Widened extends s over the rounds of marks that follow it in the same
// run: broken ones for a proven stretch, broken or unknown ones otherwise.
// Persisting stops a stretch at the round that first passed the bound;
// a reason should say how far it went.
func Widened(marks []Mark, s Stretch) Stretch {
	out := s
	started := false
	for _, m := range marks {
		if !started {
			started = m.Taken.Equal(s.Last.Taken)
			continue
		}
		if m.State == Holds || (s.Proven && m.State != Broken) {
			break
		}
		out.Last = m
		if m.State == Broken {
			out.Broken++
		}
	}
	return out
}

// SampleFailedEvent is the timeline event the scenario engine records for
// a tick at which no snapshot could be taken at all, stamped at the tick.
const SampleFailedEvent = "sample-failed"

// MissedTick is a tick of the input at which no snapshot was taken.
type MissedTick struct {
	At  time.Time
	Why string
}

// MissedTicks are the ticks the timeline says could not be taken, strictly
// between the input's first and last snapshots (before the first or after
// the last they join no two rounds).
func MissedTicks(in Input) []MissedTick {
	from, to := in.Span()
	var out []MissedTick
	for _, e := range in.Timeline.OfKind(SampleFailedEvent) {
		if e.At.After(from) && e.At.Before(to) {
			out = append(out, MissedTick{At: e.At, Why: e.Detail})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// WithMissed puts an unknown round into marks (in round order) at each
// missed tick that falls between two of them, so the tick breaks a proof
// as an unreadable round does. It is suspect when the round before it was
// broken or suspect: the subject was still to follow a change.
func WithMissed(marks []Mark, missed []MissedTick) []Mark {
	if len(missed) == 0 || len(marks) == 0 {
		return marks
	}
	out := make([]Mark, 0, len(marks)+len(missed))
	j := 0
	for i, m := range marks {
		for ; j < len(missed) && missed[j].At.Before(m.Taken); j++ {
			if i == 0 {
				continue
			}
			prev := out[len(out)-1]
			out = append(out, Mark{Taken: missed[j].At, ReadAt: missed[j].At, State: Unknown,
				Detail:  "no snapshot could be taken at this tick (" + missed[j].Why + ")",
				Suspect: prev.State == Broken || (prev.State == Unknown && prev.Suspect)})
		}
		out = append(out, m)
	}
	return out
}

// Untold says what the first round of s that could not tell was, for
// reasons.
func Untold(marks []Mark, s Stretch) string {
	for _, m := range marks {
		if m.Taken.Before(s.First.Taken) || m.Taken.After(s.Last.Taken) {
			continue
		}
		if m.State == Unknown {
			return fmt.Sprintf("first round that could not tell, %s: %s", Stamp(m.Taken), m.Detail)
		}
	}
	return "no round in it could tell"
}
