package record

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
)

var rolesRuns = verdicttest.RolesRuns

func TestVerdictJUnitJudgesEachRoleByWhatItExpects(t *testing.T) {
	ts := VerdictJUnit("disagree", rolesRuns()).TestSuites[0]
	want := map[string]struct{ status, role, expected string }{
		"f/endpoints-truthful":          {"passed", "finding", ""},
		"f/graceful-deletion":           {"passed", "finding", ""},
		"n/endpoints-truthful":          {"failed", "null", "PRESERVED"},
		"n/graceful-deletion":           {"passed", "null", "PRESERVED"},
		"c/endpoints-truthful":          {"passed", "control", "VIOLATED"},
		"c/graceful-deletion":           {"skipped", "control", ""},
		"o/single-copy":                 {"failed", "control", "VIOLATED"},
		"w/acknowledged-writes-survive": {"failed", "finding", ""},
	}
	if ts.Tests != len(want) || ts.Failures != 3 || ts.Skipped != 1 {
		t.Errorf("tests %d failures %d skipped %d, want %d 3 1", ts.Tests, ts.Failures, ts.Skipped, len(want))
	}
	for _, tc := range ts.TestCases {
		key := tc.Properties.WithName(PropRunID) + "/" + tc.Properties.WithName(PropInvariant)
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected case %s", key)
			continue
		}
		if tc.Status != w.status || tc.Properties.WithName("role") != w.role || tc.Properties.WithName("expected") != w.expected {
			t.Errorf("%s: status %s role %q expected %q, want %+v", key, tc.Status, tc.Properties.WithName("role"), tc.Properties.WithName("expected"), w)
		}
		switch key {
		case "n/endpoints-truthful":
			if tc.Failure == nil || tc.Failure.Type != "false-alarm" {
				t.Errorf("a null arm's VIOLATED is a false alarm: %+v", tc.Failure)
			}
		case "o/single-copy":
			if tc.Failure == nil || tc.Failure.Type != "control-missed" || !strings.Contains(tc.Failure.Message, "expected VIOLATED") {
				t.Errorf("a control's PRESERVED is a miss: %+v", tc.Failure)
			}
		case "c/graceful-deletion":
			if tc.Skipped == nil || !strings.Contains(tc.Skipped.Message, "counts nowhere") {
				t.Errorf("a control's other invariant: %+v", tc.Skipped)
			}
		case "f/graceful-deletion":
			if tc.Properties.WithName("exercised") != "false" {
				t.Errorf("exercised property %q", tc.Properties.WithName("exercised"))
			}
		case "w/acknowledged-writes-survive":
			if tc.Properties.WithName("violation") != "stale-read" || tc.Properties.WithName("during") != "settle" {
				t.Errorf("violation %q during %q", tc.Properties.WithName("violation"), tc.Properties.WithName("during"))
			}
		}
	}
}

// With repetitions each case names its repetition, and each invariant of a
// scenario × arm whose judged repetitions did not all agree is named
// flaky, with its count, in properties of its own: a flaky verdict is
// neither a pass nor a failure of its own, each case still judged as its
// role expects.
func TestVerdictJUnitNamesRepetitionsAndFlakyVerdicts(t *testing.T) {
	ts := VerdictJUnit("s", verdicttest.RepeatedRuns()).TestSuites[0]
	type want struct{ status, stability, count string }
	cases := map[string]want{}
	names := map[string]bool{}
	for _, tc := range ts.TestCases {
		key := tc.Properties.WithName(PropScenario) + " [" + tc.Properties.WithName(PropArm) + "] " + tc.Properties.WithName(PropInvariant) + " " + tc.Properties.WithName(PropRepetition) + " " + tc.Properties.WithName(PropRunVerdict)
		cases[key] = want{tc.Status, tc.Properties.WithName(PropStability), tc.Properties.WithName(PropStabilityCount)}
		// An ABORTED run and the run that replaced it are one repetition.
		if tc.Properties.WithName(PropRunVerdict) == "ABORTED" {
			continue
		}
		if names[tc.Name] {
			t.Errorf("two cases are named %q", tc.Name)
		}
		names[tc.Name] = true
	}
	for key, w := range map[string]want{
		"pod-network-cut [fault] endpoints-truthful 1 JUDGED":   {"failed", "flaky", "2/3"},
		"pod-network-cut [fault] endpoints-truthful 2 JUDGED":   {"passed", "flaky", "2/3"},
		"pod-network-cut [fault] endpoints-truthful 3 ABORTED":  {"skipped", "flaky", "2/3"},
		"pod-network-cut [fault] graceful-deletion 1 JUDGED":    {"passed", "stable", "0/3"},
		"pod-network-cut [null] graceful-deletion 3 JUDGED":     {"skipped", "stable", "0/2"},
		"kubelet-stopped [fault] graceful-deletion 3 JUDGED":    {"failed", "flaky", "1/3"},
		"control-endpoints [fault] endpoints-truthful 1 JUDGED": {"passed", "flaky", "1/2"},
		"control-endpoints [fault] endpoints-truthful 2 JUDGED": {"failed", "flaky", "1/2"},
	} {
		if got, ok := cases[key]; !ok || got != w {
			t.Errorf("%s: %+v, want %+v", key, got, w)
		}
	}
	if !names["pod-network-cut [fault] endpoints-truthful (repetition 2)"] {
		t.Errorf("no case named for its repetition: %v", keys(names))
	}
	// Runs without repetitions keep their names and carry no stability.
	for _, tc := range VerdictJUnit("disagree", rolesRuns()).TestSuites[0].TestCases {
		if strings.Contains(tc.Name, "repetition") || tc.Properties.WithName(PropStability) != "" || tc.Properties.WithName(PropRepetition) != "" {
			t.Errorf("a run without repetitions: %s, stability %q, repetition %q", tc.Name, tc.Properties.WithName(PropStability), tc.Properties.WithName(PropRepetition))
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A control that names the violation kinds it is built to make passes
// only on a VIOLATED of one of them; another kind fails it, naming the
// kind got and the kinds needed. A control naming none passes on any.
func TestVerdictJUnitCountsOnlyTheKindsAControlNames(t *testing.T) {
	violated := func(kind string) verdict.Judgement {
		j := verdicttest.J("fencing-monotonic", verdict.Violated)
		j.Violation = kind
		return j
	}
	kinds := map[string][]string{"fencing-monotonic": {"shared-token"}}
	hit := verdicttest.Run("hit", verdict.RunJudged, violated("shared-token"))
	other := verdicttest.Run("other", verdict.RunJudged, violated("token-went-down"))
	anyKind := verdicttest.Run("any", verdict.RunJudged, violated("token-went-down"))
	for _, r := range []*verdict.Run{&hit, &other, &anyKind} {
		r.Role, r.ControlOf = verdict.RoleControl, []string{"fencing-monotonic"}
	}
	hit.ControlKinds, other.ControlKinds = kinds, kinds
	ts := VerdictJUnit("splitbrain", []verdict.Run{hit, other, anyKind}).TestSuites[0]
	if ts.Tests != 3 || ts.Failures != 1 {
		t.Errorf("tests %d failures %d, want 3 1", ts.Tests, ts.Failures)
	}
	for _, tc := range ts.TestCases {
		id, expected := tc.Properties.WithName(PropRunID), tc.Properties.WithName(PropExpectedViolation)
		switch id {
		case "hit":
			if tc.Status != "passed" || expected != "shared-token" {
				t.Errorf("hit: status %s, expected violation %q", tc.Status, expected)
			}
		case "other":
			if tc.Status != "failed" || tc.Failure == nil || tc.Failure.Type != "control-other-kind" ||
				!strings.Contains(tc.Failure.Message, "VIOLATED of kind token-went-down, not of the kind the control is built to break (shared-token)") {
				t.Errorf("other kind: status %s, failure %+v", tc.Status, tc.Failure)
			}
		case "any":
			if tc.Status != "passed" || expected != "" {
				t.Errorf("any kind: status %s, expected violation %q", tc.Status, expected)
			}
		}
	}
}
