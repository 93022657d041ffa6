package record

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/verdict"
)

// rolesRuns: a finding, its null arm with a false alarm, a control that
// hits, an old-style control (labels only) that misses, and a finding
// whose violation names its kind.
func rolesRuns() []verdict.Run {
	finding := run("f", verdict.RunJudged,
		verdict.Judgement{Invariant: "endpoints-truthful", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "kept out", Exercised: verdict.Exercised(), Exercise: "worker1's address left the endpoints"},
		verdict.Judgement{Invariant: "graceful-deletion", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "none left the API", Exercised: verdict.NotExercised(), Exercise: "no pod left the API"})
	finding.Scenario, finding.Role = "pod-network-cut", verdict.RoleFinding
	finding.Load = []verdict.Load{{At: t0, One: 0.5, Five: 0.4, Fifteen: 0.3}, {At: t0.Add(time.Minute), One: 3.2, Five: 1.1, Fifteen: 0.6}}
	finding.Effect = &verdict.EffectCoverage{Probes: 10, Observed: 7, Failed: 1, Required: 0.5}
	null := run("n", verdict.RunJudged, j("endpoints-truthful", verdict.Violated), j("graceful-deletion", verdict.Preserved))
	null.Scenario, null.Arm, null.Role = "pod-network-cut", "null", verdict.RoleNull
	ctl := run("c", verdict.RunJudged, j("endpoints-truthful", verdict.Violated), j("graceful-deletion", verdict.Violated))
	ctl.Scenario, ctl.Role, ctl.ControlOf = "control-endpoints-truthful", verdict.RoleControl, []string{"endpoints-truthful"}
	old := run("o", verdict.RunJudged, j("single-copy", verdict.Preserved))
	old.Scenario, old.Labels = "control-single-copy", []string{"selfcheck", "control:single-copy"}
	writer := run("w", verdict.RunJudged, verdict.Judgement{Invariant: "acknowledged-writes-survive", Phase: verdict.Convergence, Verdict: verdict.Violated, Reason: "read 41 of 42", Violation: "stale-read", Exercised: verdict.Exercised(), During: "settle"})
	writer.Scenario = "writer-cut"
	return []verdict.Run{finding, null, ctl, old, writer}
}

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
