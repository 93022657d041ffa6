package record

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/internal/runstest"
)

var rolesRuns = runstest.RolesRuns

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
