// Package matchers holds Gomega matchers over evidence, so a scenario reads
// Expect(window).To(Preserve(singleCopy)).
package matchers

import (
	"fmt"

	"github.com/onsi/gomega/types"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// PreserveMatcher judges one invariant over an invariant.Input.
//
// It fails only on a VIOLATED judgement: INSUFFICIENT_DATA is not evidence
// of a violation, so it passes, and the judgement (kept in Judgement) says
// what the run may claim. Negated, it succeeds only on VIOLATED, so
// NotTo(Preserve(x)) never passes for lack of evidence.
type PreserveMatcher struct {
	inv       invariant.Invariant
	judgement verdict.Judgement
	input     invariant.Input
	judged    bool
}

var _ types.GomegaMatcher = (*PreserveMatcher)(nil)

// Preserve matches evidence (an invariant.Input) over which inv is not
// violated.
func Preserve(inv invariant.Invariant) *PreserveMatcher {
	return &PreserveMatcher{inv: inv}
}

// Judgement is the last judgement the matcher made.
func (m *PreserveMatcher) Judgement() (verdict.Judgement, bool) { return m.judgement, m.judged }

func (m *PreserveMatcher) Match(actual any) (bool, error) {
	var in invariant.Input
	switch a := actual.(type) {
	case invariant.Input:
		in = a
	case *invariant.Input:
		if a == nil {
			return false, fmt.Errorf("Preserve(%s) got a nil *invariant.Input", m.inv.Name())
		}
		in = *a
	default:
		return false, fmt.Errorf("Preserve(%s) matches evidence (invariant.Input), got %T", m.inv.Name(), actual)
	}
	m.input = in
	m.judgement = invariant.Judge(m.inv, in)
	m.judged = true
	return m.judgement.Verdict != verdict.Violated, nil
}

func (m *PreserveMatcher) FailureMessage(any) string {
	return invariant.ViolatedMessage(m.judgement, m.input)
}

func (m *PreserveMatcher) NegatedFailureMessage(any) string {
	return invariant.NotViolatedMessage(m.judgement, m.input)
}
