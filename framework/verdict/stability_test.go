package verdict

import (
	"encoding/json"
	"strings"
	"testing"
)

func repRun(scenario, arm string, rep int, rv RunVerdict, verdicts ...Verdict) Run {
	r := Run{Suite: "s", Scenario: scenario, Arm: arm, Repetition: rep, RunVerdict: rv}
	for i, v := range verdicts {
		r.Judgements = append(r.Judgements, Judgement{Invariant: []string{"x", "y"}[i], Verdict: v})
	}
	return r
}

// Each scenario × arm × invariant is counted over its repetitions alone:
// k VIOLATED of n judged, the verdicts and runs that do not count apart,
// and flaky only where VIOLATED and PRESERVED both came out.
func TestStabilitiesCountEachPairOverItsRepetitions(t *testing.T) {
	runs := []Run{
		repRun("a", "fault", 1, RunJudged, Violated, Preserved),
		repRun("a", "null", 1, RunJudged, Preserved, Preserved),
		repRun("b", "fault", 1, RunJudged, Violated, InsufficientData),
		repRun("a", "fault", 2, RunJudged, Preserved, Preserved),
		repRun("a", "null", 2, RunJudged, Preserved, InsufficientData),
		repRun("b", "fault", 2, FaultIneffective, Preserved, Preserved),
		repRun("a", "fault", 3, RunAborted, InsufficientData, InsufficientData),
		repRun("a", "fault", 3, RunJudged, Violated, Preserved),
		repRun("b", "fault", 3, RunJudged, Violated, Preserved),
	}
	got := map[StabilityKey]Stability{}
	var order []string
	for _, s := range Stabilities(runs) {
		got[s.StabilityKey] = s
		order = append(order, s.Scenario+"/"+s.Arm+"/"+s.Invariant)
	}
	if want := "a/fault/x a/fault/y a/null/x a/null/y b/fault/x b/fault/y"; strings.Join(order, " ") != want {
		t.Errorf("order %s, want %s", strings.Join(order, " "), want)
	}
	cases := []struct {
		scenario, arm, inv string
		k, n               int
		outcome, other     string
		runs, reps         int
	}{
		{"a", "fault", "x", 2, 3, StabilityFlaky, "ABORTED 1", 4, 3},
		{"a", "fault", "y", 0, 3, "PRESERVED", "ABORTED 1", 4, 3},
		{"a", "null", "y", 0, 1, "PRESERVED", "INSUFFICIENT_DATA 1", 2, 2},
		{"b", "fault", "x", 2, 2, "VIOLATED", "FAULT_INEFFECTIVE 1", 3, 3},
		{"b", "fault", "y", 0, 1, "PRESERVED", "INSUFFICIENT_DATA 1, FAULT_INEFFECTIVE 1", 3, 3},
	}
	for _, c := range cases {
		s := got[StabilityKey{"s", c.scenario, c.arm, c.inv}]
		if s.Rate.Violated != c.k || s.Rate.N() != c.n || s.Outcome() != c.outcome || s.OtherText() != c.other || s.Runs != c.runs || s.Repetitions != c.reps {
			t.Errorf("%s [%s] %s: %s, %s, other %q, %d runs of %d repetitions; want %d of %d, %s, %q, %d of %d",
				c.scenario, c.arm, c.inv, s.CountText(), s.Outcome(), s.OtherText(), s.Runs, s.Repetitions, c.k, c.n, c.outcome, c.other, c.runs, c.reps)
		}
	}
	if s := got[StabilityKey{"s", "a", "fault", "x"}]; !s.Flaky() || s.Role != RoleFinding {
		t.Errorf("a [fault] x: flaky %v, role %s", s.Flaky(), s.Role)
	}
	// INSUFFICIENT_DATA beside PRESERVED is a gap, not a change of verdict.
	if s := got[StabilityKey{"s", "b", "fault", "y"}]; s.Flaky() {
		t.Error("b [fault] y: PRESERVED and INSUFFICIENT_DATA called flaky")
	}
}

// Records written before repetitions were recorded read as repetition 1,
// and a folder whose pairs each ran once is not repeated, whatever ABORTED
// runs it holds before their runs again.
func TestRecordsWithoutRepetitionAreTheFirst(t *testing.T) {
	var r Run
	if err := json.Unmarshal([]byte(`{"runID":"r","scenario":"a","arm":"fault","runVerdict":"JUDGED","judgements":[]}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.RepetitionNumber() != 1 {
		t.Errorf("an old record's repetition %d, want 1", r.RepetitionNumber())
	}
	once := []Run{repRun("a", "fault", 0, RunAborted), repRun("a", "fault", 0, RunJudged), repRun("a", "null", 0, RunJudged)}
	if Repeated(once) {
		t.Error("an ABORTED run and its run again are not repetitions")
	}
	if !Repeated(append(once, repRun("a", "null", 2, FaultIneffective))) {
		t.Error("a second run of a pair that reached its outcome is a repetition")
	}
}
