package verdict

import (
	"fmt"
	"slices"
)

// StabilityKey names one invariant of one scenario × arm: what the
// repetitions of a scenario are compared on.
type StabilityKey struct {
	Suite, Scenario, Arm, Invariant string
}

// Stability is what the runs of one scenario × arm say of one invariant
// over their repetitions: k VIOLATED of the n times the invariant was
// judged (PRESERVED or VIOLATED in a JUDGED run), with every other outcome
// counted apart. Repetitions of one scenario × arm are trials of one
// experiment, so Rate's Wilson interval is the interval of that
// experiment's violation rate; verdicts of different scenarios are not,
// and are never pooled into one Stability.
type Stability struct {
	StabilityKey
	// Role is the pair's role (RoleFinding, RoleControl, RoleNull), as
	// its first run records it.
	Role string
	// Rate counts the invariant's verdicts in the pair's JUDGED runs:
	// VIOLATED and PRESERVED, and in Other INSUFFICIENT_DATA,
	// NOT_APPLICABLE and DETECTOR_INVALID.
	Rate Rate
	// FaultIneffective and Aborted count the pair's runs whose verdicts
	// count nowhere (FAULT_INEFFECTIVE, ABORTED). An ABORTED run that was
	// run again is counted here and its new run where it came out.
	FaultIneffective, Aborted int
	// NotRecorded counts the pair's JUDGED runs that record no verdict of
	// the invariant (runs of a scenario that judged other invariants).
	NotRecorded int
	// Runs counts all the pair's runs; Repetitions the distinct
	// repetitions among them.
	Runs, Repetitions int
}

// Flaky reports whether the invariant's verdict was not the same in every
// judged repetition: VIOLATED in some and PRESERVED in others. A
// repetition whose verdict did not count (INSUFFICIENT_DATA, or a run that
// was FAULT_INEFFECTIVE or ABORTED) says nothing either way, and is
// counted apart, never as a change of verdict.
func (s Stability) Flaky() bool { return s.Rate.Violated > 0 && s.Rate.Preserved > 0 }

// Outcome is the verdict the judged repetitions agree on (VIOLATED or
// PRESERVED), "flaky" when they do not, and "not judged" when none was
// judged.
func (s Stability) Outcome() string {
	switch {
	case s.Flaky():
		return StabilityFlaky
	case s.Rate.Violated > 0:
		return string(Violated)
	case s.Rate.Preserved > 0:
		return string(Preserved)
	}
	return StabilityNotJudged
}

// Outcomes of Stability.Outcome besides the two verdicts.
const (
	StabilityFlaky     = "flaky"
	StabilityNotJudged = "not judged"
)

// CountText is "k VIOLATED of n judged".
func (s Stability) CountText() string {
	return fmt.Sprintf("%d VIOLATED of %d judged", s.Rate.Violated, s.Rate.N())
}

// OtherText counts the outcomes that did not count, "INSUFFICIENT_DATA 1,
// FAULT_INEFFECTIVE 2"; "" when there are none.
func (s Stability) OtherText() string {
	var out string
	add := func(what string, n int) {
		if n == 0 {
			return
		}
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%s %d", what, n)
	}
	for _, v := range All {
		add(string(v), s.Rate.Other[v])
	}
	add(string(FaultIneffective), s.FaultIneffective)
	add(string(RunAborted), s.Aborted)
	add("not recorded", s.NotRecorded)
	return out
}

// PairKey is the scenario × arm of a run, with its suite: the runs of one
// pair are the repetitions of one experiment.
type PairKey struct {
	Suite, Scenario, Arm string
}

// PairOf is the run's pair.
func PairOf(r Run) PairKey { return PairKey{Suite: r.Suite, Scenario: r.Scenario, Arm: r.Arm} }

// Stabilities is the Stability of every scenario × arm × invariant the runs
// record, pairs in the order their first run appears and each pair's
// invariants in the order its runs first judged them.
func Stabilities(runs []Run) []Stability {
	type pair struct {
		runs       []Run
		invariants []string
	}
	var order []PairKey
	pairs := map[PairKey]*pair{}
	for _, r := range runs {
		k := PairOf(r)
		p := pairs[k]
		if p == nil {
			p = &pair{}
			pairs[k] = p
			order = append(order, k)
		}
		p.runs = append(p.runs, r)
		for _, j := range r.Judgements {
			if !slices.Contains(p.invariants, j.Invariant) {
				p.invariants = append(p.invariants, j.Invariant)
			}
		}
	}
	var out []Stability
	for _, k := range order {
		p := pairs[k]
		reps := map[int]bool{}
		var ineffective, aborted int
		for _, r := range p.runs {
			reps[r.RepetitionNumber()] = true
			switch r.RunVerdict {
			case FaultIneffective:
				ineffective++
			case RunAborted:
				aborted++
			}
		}
		for _, inv := range p.invariants {
			s := Stability{
				StabilityKey: StabilityKey{Suite: k.Suite, Scenario: k.Scenario, Arm: k.Arm, Invariant: inv},
				Role:         p.runs[0].RunRole(), FaultIneffective: ineffective, Aborted: aborted,
				Runs: len(p.runs), Repetitions: len(reps),
			}
			for _, r := range p.runs {
				if !r.Counted() {
					continue
				}
				j, ok := judgementOf(r, inv)
				if !ok {
					s.NotRecorded++
					continue
				}
				s.Rate.Add(j.Verdict)
			}
			out = append(out, s)
		}
	}
	return out
}

// StabilityIndex is Stabilities by key.
func StabilityIndex(runs []Run) map[StabilityKey]Stability {
	out := map[StabilityKey]Stability{}
	for _, s := range Stabilities(runs) {
		out[s.StabilityKey] = s
	}
	return out
}

// Repeated reports whether some scenario × arm of the runs ran more than
// once to an outcome of its experiment (JUDGED or FAULT_INEFFECTIVE): only
// then is there a stability to report.
func Repeated(runs []Run) bool {
	seen := map[PairKey]bool{}
	for _, r := range runs {
		if r.RunVerdict == RunAborted {
			continue
		}
		k := PairOf(r)
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

func judgementOf(r Run, invariant string) (Judgement, bool) {
	for _, j := range r.Judgements {
		if j.Invariant == invariant {
			return j, true
		}
	}
	return Judgement{}, false
}
