// Package verdict holds what a run says of each invariant, the run records
// that carry those verdicts, and the rates papers quote.
package verdict

import (
	"encoding/json"
	"fmt"
)

// Verdict is what one run says of one invariant.
type Verdict string

const (
	// Preserved and Violated are the only verdicts that count towards a rate.
	Preserved Verdict = "PRESERVED"
	Violated  Verdict = "VIOLATED"
	// InsufficientData: the run lacks the evidence the invariant needs.
	InsufficientData Verdict = "INSUFFICIENT_DATA"
	// NotApplicable: the applicability table says the fault class cannot
	// reach what the invariant reads.
	NotApplicable Verdict = "NOT_APPLICABLE"
	// DetectorInvalid: the invariant was already broken before the fault.
	DetectorInvalid Verdict = "DETECTOR_INVALID"
)

// All lists the per-invariant verdicts in report order.
var All = []Verdict{Preserved, Violated, InsufficientData, NotApplicable, DetectorInvalid}

// Valid reports whether v is one of the five per-invariant verdicts.
func (v Verdict) Valid() bool {
	for _, k := range All {
		if v == k {
			return true
		}
	}
	return false
}

// Counts reports whether v counts towards a rate.
func (v Verdict) Counts() bool { return v == Preserved || v == Violated }

func (v Verdict) MarshalJSON() ([]byte, error) {
	if !v.Valid() {
		return nil, fmt.Errorf("verdict: %q is not a verdict", string(v))
	}
	return json.Marshal(string(v))
}

func (v *Verdict) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if !Verdict(s).Valid() {
		return fmt.Errorf("verdict: %q is not a verdict", s)
	}
	*v = Verdict(s)
	return nil
}

// RunVerdict is what a whole run says.
type RunVerdict string

const (
	// RunJudged: the fault took hold; the run's verdicts count.
	RunJudged RunVerdict = "JUDGED"
	// FaultIneffective: the fault left no observable change; none of the
	// run's verdicts count.
	FaultIneffective RunVerdict = "FAULT_INEFFECTIVE"
	// RunAborted: the run did not reach a judgement (reset, inject or heal
	// failed); none of its verdicts count.
	RunAborted RunVerdict = "ABORTED"
)

// Valid reports whether r is a run verdict.
func (r RunVerdict) Valid() bool {
	return r == RunJudged || r == FaultIneffective || r == RunAborted
}

func (r RunVerdict) MarshalJSON() ([]byte, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("run verdict: %q is not a run verdict", string(r))
	}
	return json.Marshal(string(r))
}

func (r *RunVerdict) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if !RunVerdict(s).Valid() {
		return fmt.Errorf("run verdict: %q is not a run verdict", s)
	}
	*r = RunVerdict(s)
	return nil
}
