// Package invariant defines the guarantees faultline judges, what evidence
// each reads, and the applicability table of fault classes that cannot reach
// what an invariant reads.
package invariant

import (
	"fmt"
	"path"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// Moment says which part of a run an invariant is judged over.
type Moment string

const (
	// PreFault: the baseline and the pre-fault window sampled after it,
	// before anything was injected; long enough for every invariant to be
	// able to fire (see Bounded). A VIOLATED judgement here makes the
	// invariant's verdict DETECTOR_INVALID.
	PreFault Moment = "pre-fault"
	// Window: the snapshots sampled while the fault was in place.
	Window Moment = "window"
	// WindowToSettle: the window's snapshots, those sampled while heal ran,
	// and every settle sample through the final snapshot. Safety
	// invariants are judged over it: a hazard can fall at heal (a frozen
	// process thawed, a stopped service restarted) or after it.
	WindowToSettle Moment = "window, heal and settle"
	// Final: the settle sample a convergence invariant is judged on (the
	// first in which it settled, or the final snapshot), last, after every
	// sample taken before it since the fault. The invariant decides from
	// that last one; the earlier ones only say whether the lab left its
	// baseline at all, which is whether the invariant was exercised.
	Final Moment = "final"
)

// Reading is evidence an invariant reads: a question asked of the sources
// whose names match a glob (path.Match syntax, e.g. "cri/*").
type Reading struct {
	Sources  string            `json:"sources"`
	Question evidence.Question `json:"question"`
}

// Input is what an invariant is judged over.
type Input struct {
	Moment Moment
	// Snapshots are the ones being judged, in the order taken: the
	// baseline and the pre-fault window before the fault; the window's,
	// heal's and settle's samples for a safety invariant; for a
	// convergence invariant every sample since the fault up to the settle
	// sample it is judged on, which is last (see Final).
	Snapshots []evidence.Snapshot
	Timeline  evidence.Timeline
	// Baseline is the pre-fault snapshot, for invariants that compare
	// against where the lab started.
	Baseline *evidence.Snapshot
	// FaultClasses are the classes of what the run injected
	// (fault.Classes: every part of a compound fault), for the moments
	// after the fault; empty before it and in a null arm, which injects
	// nothing. An invariant that compares clocks asks ClocksSkewable.
	FaultClasses []string
}

// ClockSkewClass is the fault class that steps a host's wall clock
// (framework/fault/faults' ClassClockSkew).
const ClockSkewClass = "clock-skew"

// ClocksSkewable says whether the run's fault can skew a host's clock:
// then a time a writer or a component stamped with its own clock proves
// nothing against another host's or faultline's, and an invariant that
// would decide from such a comparison decides from an order no clock sets
// (a store's revisions, faultline's own reads) or judges
// INSUFFICIENT_DATA.
func (in Input) ClocksSkewable() bool {
	for _, c := range in.FaultClasses {
		if c == ClockSkewClass {
			return true
		}
	}
	return false
}

// SplitBrainClass is the fault class after which parts of the control
// plane work from different copies of the cluster's state
// (framework/fault/faults' ClassSplitBrain): an object such as a Lease
// then has a history per copy.
const SplitBrainClass = "split-brain"

// OperatorActionClass is the class of the controls that act on the
// cluster through the API as an operator would
// (framework/fault/controls' ClassOperatorAction): an object such as a
// Lease written by hand, outside the controller that owns it.
const OperatorActionClass = "operator-action"

// LeaseHistoriesSplittable says whether the run's fault can make a
// Lease's holders other than one leader election's in one history: two
// copies of it (a split brain), or a write outside the election (an
// operator's action); it names the class that can. Otherwise client-go's
// election raises leaseTransitions on every change of holder, by an
// update conditional on the record it read, so no two holders read one
// value of it.
func (in Input) LeaseHistoriesSplittable() (string, bool) {
	for _, c := range in.FaultClasses {
		if c == SplitBrainClass || c == OperatorActionClass {
			return c, true
		}
	}
	return "", false
}

// Span is the time the input's snapshots cover.
func (in Input) Span() (from, to time.Time) {
	for i, s := range in.Snapshots {
		if i == 0 || s.Taken.Before(from) {
			from = s.Taken
		}
		if s.Taken.After(to) {
			to = s.Taken
		}
	}
	return from, to
}

// Readable returns the sources that gave a value for r somewhere in the
// input, in the order first seen.
func (in Input) Readable(r Reading) []string {
	seen := map[evidence.Source]bool{}
	var out []string
	for _, s := range in.Snapshots {
		for _, src := range s.Sources() {
			if seen[src] {
				continue
			}
			if ok, _ := path.Match(r.Sources, string(src)); !ok {
				continue
			}
			if s.Get(src, r.Question).Readable() {
				seen[src] = true
				out = append(out, string(src))
			}
		}
	}
	return out
}

// Invariant is one guarantee Kubernetes gives, judged from evidence.
type Invariant interface {
	Name() string
	Phase() verdict.Phase
	// Reads declares all the evidence the invariant judges from.
	Reads() []Reading
	// Judge returns PRESERVED, VIOLATED or INSUFFICIENT_DATA with a reason,
	// the sources that decided it and the moment of the deciding evidence.
	Judge(in Input) verdict.Judgement
}

// Judge judges inv over in and holds the judgement to the rules every
// verdict must meet, whatever the invariant's code does:
//   - its Invariant and Phase are the invariant's own;
//   - only PRESERVED, VIOLATED or INSUFFICIENT_DATA come from an invariant
//     (NOT_APPLICABLE and DETECTOR_INVALID are the engine's to give);
//   - PRESERVED or VIOLATED with no readable answer to anything the
//     invariant declares it reads is not supported by evidence, and
//     becomes INSUFFICIENT_DATA.
func Judge(inv Invariant, in Input) verdict.Judgement {
	j := inv.Judge(in)
	j.Invariant, j.Phase = inv.Name(), inv.Phase()
	switch j.Verdict {
	case verdict.Preserved, verdict.Violated:
	case verdict.InsufficientData:
		return j
	default:
		return verdict.Judgement{
			Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("the invariant returned %q, which an invariant may not give (its reason: %s)", j.Verdict, j.Reason),
		}
	}
	var readable []string
	for _, r := range inv.Reads() {
		readable = append(readable, in.Readable(r)...)
	}
	if len(readable) == 0 {
		return verdict.Judgement{
			Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("no source gave a readable answer to what the invariant reads over the %s (%d snapshots), so its %s is not supported (its reason: %s)", in.Moment, len(in.Snapshots), j.Verdict, j.Reason),
		}
	}
	if len(j.Sources) == 0 {
		j.Sources = readable
	}
	return j
}

// Bounded is an invariant that fires only on a condition that lasted past
// a bound (api-agreement, endpoints-truthful). Before the fault the engine
// samples long enough for every invariant to be able to fire, so that a
// condition already broken then is DETECTOR_INVALID, not blamed on the
// fault: for a bounded invariant that is a span from the baseline longer
// than its bound plus two sampling intervals (a stretch is only known to
// the sampling resolution at either end); for any other, at least three
// rounds after the baseline (two reads of one holder and one of another
// prove two at once).
type Bounded interface {
	Invariant
	// Bound is the longest the invariant lets its condition last.
	Bound() time.Duration
}
