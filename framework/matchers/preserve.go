// Package matchers holds Gomega matchers over evidence, so a scenario reads
// Expect(window).To(Preserve(singleCopy)).
package matchers

import (
	"fmt"
	"strings"
	"time"

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
	j := m.judgement
	return fmt.Sprintf("invariant %s (%s) was VIOLATED over %s\n%s", j.Invariant, j.Phase, m.span(), m.detail())
}

func (m *PreserveMatcher) NegatedFailureMessage(any) string {
	j := m.judgement
	return fmt.Sprintf("expected invariant %s (%s) to be VIOLATED over %s, but it was %s\n%s", j.Invariant, j.Phase, m.span(), j.Verdict, m.detail())
}

func (m *PreserveMatcher) span() string {
	from, to := m.input.Span()
	n := len(m.input.Snapshots)
	switch {
	case n == 0:
		return fmt.Sprintf("the %s (no snapshots)", m.input.Moment)
	case n == 1:
		return fmt.Sprintf("the %s (1 snapshot at %s)", m.input.Moment, stamp(from))
	default:
		return fmt.Sprintf("the %s (%d snapshots, %s to %s)", m.input.Moment, n, stamp(from), stamp(to))
	}
}

func (m *PreserveMatcher) detail() string {
	j := m.judgement
	at := "not stated by the invariant"
	if !j.At.IsZero() {
		at = stamp(j.At)
	}
	sources := "none named"
	if len(j.Sources) > 0 {
		sources = strings.Join(j.Sources, ", ")
	}
	return fmt.Sprintf("  moment:  %s\n  sources: %s\n  reason:  %s", at, sources, j.Reason)
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000Z07:00") }
