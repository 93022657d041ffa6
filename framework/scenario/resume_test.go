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
func TestFinishedRuns(t *testing.T) {
	lines := []record.Line{
		line(1, "a", "fault", verdict.RunJudged),
		line(2, "a", "null", verdict.FaultIneffective),
		line(3, "b", "fault", verdict.RunAborted),
		line(4, "c", "fault", verdict.RunAborted),
		line(5, "c", "fault", verdict.RunJudged),
	}
	done := finishedRuns(lines)
	var keys []string
	for k := range done {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a [fault] repetition 1", "a [null] repetition 1", "c [fault] repetition 1"}) {
		t.Errorf("finished %v, want a's two arms and c's fault arm (b aborted)", keys)
	}
	if d := done["c [fault] repetition 1"]; d.Where != "/runs/f/verdicts.jsonl:5" || d.RunVerdict != verdict.RunJudged {
		t.Errorf("c: %+v, want the JUDGED record of line 5", d)
	}
	note := done["a [fault] repetition 1"].skipNote("/runs/f")
	if !strings.Contains(note, "already run in the resumed run folder /runs/f: verdicts.jsonl:1 is its record (run a-fault-JUDGED, JUDGED, spec passed)") {
		t.Errorf("note %q", note)
	}
}

// Each repetition is finished by a run of its own number, whatever order
// the repetitions finished in (over a pool, or after an ABORTED one): a
// resume runs exactly the repetitions that have none.
func TestFinishedRunsTellRepetitionsApart(t *testing.T) {
	rep := func(n, rep int, v verdict.RunVerdict) record.Line {
		l := line(n, "a", "fault", v)
		l.Repetition = rep
		return l
	}
	lines := []record.Line{rep(1, 1, verdict.RunJudged), rep(2, 3, verdict.RunJudged), rep(3, 2, verdict.RunAborted), rep(4, 4, verdict.FaultIneffective)}
	done := finishedRuns(lines)
	for rep, want := range map[int]bool{1: true, 2: false, 3: true, 4: true, 5: false} {
		if _, ok := done[runKey("a", "fault", rep)]; ok != want {
			t.Errorf("repetition %d finished: %v, want %v", rep, ok, want)
		}
	}
	if err := checkResumedRepetitions(lines, 4); err != nil {
		t.Errorf("resumed with as many repetitions as the folder holds: %v", err)
	}
	err := checkResumedRepetitions(lines, 3)
	if err == nil || !strings.Contains(err.Error(), "runs of repetition 4 (/runs/f/verdicts.jsonl:4)") || !strings.Contains(err.Error(), "-faultline.repeat=4") {
		t.Errorf("resumed with fewer repetitions than the folder holds: %v", err)
	}
	// A folder written before repetitions (no field) is repetition 1.
	if err := checkResumedRepetitions([]record.Line{line(1, "a", "fault", verdict.RunJudged)}, 1); err != nil {
		t.Errorf("an old folder resumed without repetitions: %v", err)
	}
}

func TestLatestOfEachRun(t *testing.T) {
	rep2 := line(5, "a", "fault", verdict.RunJudged).Run
	rep2.RunID, rep2.Repetition = "a-fault-rep2", 2
	runs := []verdict.Run{
		line(1, "a", "fault", verdict.RunAborted).Run,
		line(2, "b", "fault", verdict.RunJudged).Run,
		line(3, "a", "fault", verdict.RunJudged).Run,
		line(4, "a", "null", verdict.RunJudged).Run,
		rep2,
	}
	latest, superseded := latestOfEachRun(runs)
	var got []string
	for _, r := range latest {
		got = append(got, r.RunID)
	}
	if superseded != 1 || !slices.Equal(got, []string{"b-fault-JUDGED", "a-fault-JUDGED", "a-null-JUDGED", "a-fault-rep2"}) {
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
