package scenario

import (
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

func line(n int, scenario, arm string, v verdict.RunVerdict) record.Line {
	return record.Line{Run: verdict.Run{RunID: scenario + "-" + arm + "-" + string(v), Scenario: scenario, Arm: arm, RunVerdict: v, SpecState: "passed",
		Lab: verdict.LabInfo{Name: "lab11", TimerProfile: "fast"}}, File: "/runs/f/verdicts.jsonl", Line: n}
}

// A pair is finished by a JUDGED or FAULT_INEFFECTIVE run; an ABORTED
// one (interrupted, or a failed reset, inject or heal) runs again.
func TestFinishedPairs(t *testing.T) {
	lines := []record.Line{
		line(1, "a", "fault", verdict.RunJudged),
		line(2, "a", "null", verdict.FaultIneffective),
		line(3, "b", "fault", verdict.RunAborted),
		line(4, "c", "fault", verdict.RunAborted),
		line(5, "c", "fault", verdict.RunJudged),
	}
	done := finishedPairs(lines)
	var keys []string
	for k := range done {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a [fault]", "a [null]", "c [fault]"}) {
		t.Errorf("finished %v, want a's two arms and c's fault arm (b aborted)", keys)
	}
	if d := done["c [fault]"]; d.Where != "/runs/f/verdicts.jsonl:5" || d.RunVerdict != verdict.RunJudged {
		t.Errorf("c: %+v, want the JUDGED record of line 5", d)
	}
	note := done["a [fault]"].skipNote("/runs/f")
	if !strings.Contains(note, "already run in the resumed run folder /runs/f: verdicts.jsonl:1 is its record (run a-fault-JUDGED, JUDGED, spec passed)") {
		t.Errorf("note %q", note)
	}
}

func TestLatestOfEachPair(t *testing.T) {
	runs := []verdict.Run{
		line(1, "a", "fault", verdict.RunAborted).Run,
		line(2, "b", "fault", verdict.RunJudged).Run,
		line(3, "a", "fault", verdict.RunJudged).Run,
		line(4, "a", "null", verdict.RunJudged).Run,
	}
	latest, superseded := latestOfEachPair(runs)
	var got []string
	for _, r := range latest {
		got = append(got, r.RunID)
	}
	if superseded != 1 || !slices.Equal(got, []string{"b-fault-JUDGED", "a-fault-JUDGED", "a-null-JUDGED"}) {
		t.Errorf("latest %v (%d superseded)", got, superseded)
	}
}

func TestResumeRefusesAnotherTimerProfile(t *testing.T) {
	lines := []record.Line{line(1, "a", "fault", verdict.RunJudged)}
	if err := checkResumedProfile(lines, verdict.LabInfo{Name: "lab11", TimerProfile: "fast"}); err != nil {
		t.Errorf("same profile: %v", err)
	}
	err := checkResumedProfile(lines, verdict.LabInfo{Name: "lab11", TimerProfile: "kubernetes-defaults"})
	if err == nil || !strings.Contains(err.Error(), `timer profile "fast" (/runs/f/verdicts.jsonl:1)`) || !strings.Contains(err.Error(), `lab lab11 runs "kubernetes-defaults"`) {
		t.Errorf("other profile: %v", err)
	}
}
