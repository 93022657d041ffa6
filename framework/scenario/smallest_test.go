package scenario_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
)

// TestTheSmallestSuiteRuns builds and runs selftest/smallest, the suite the
// framework's README shows, against memlab: both arms are judged, the
// invariant is PRESERVED in each, the generated labels are on the records,
// and the self-check passes, so the suite exits 0.
func TestTheSmallestSuiteRuns(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "smallest.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, "./selftest/smallest").CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}
	s := newSelftest(t, t.TempDir(), nil)
	s.cmd.Path, s.cmd.Args[0] = bin, bin
	if code := s.run(t); code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, s.out.String())
	}
	runs := s.runs(t)
	if got := scenarioArms(runs); len(got) != 2 || got[0] != "flag-set/fault" || got[1] != "flag-set/null" {
		t.Fatalf("runs %v, want both arms of flag-set", got)
	}
	for _, r := range runs {
		js := judgementsOf(r)
		if r.RunVerdict != verdict.RunJudged || len(js) != 1 || js["single-copy"].Verdict != verdict.Preserved {
			t.Errorf("%s: %s (%s), verdicts %+v; want JUDGED with single-copy PRESERVED", r.RunID, r.RunVerdict, r.RunReason, js)
		}
		want := map[string]bool{"arm:" + r.Arm: true, "ci": true, "paper:smallest": true, "fault:memlab-flag": true, "class:memlab-flag": true}
		if len(r.Labels) != len(want) {
			t.Errorf("%s: labels %v", r.RunID, r.Labels)
		}
		for _, l := range r.Labels {
			if !want[l] {
				t.Errorf("%s: label %s, want %v", r.RunID, l, want)
			}
		}
	}
}
