package scenario

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
)

func judged(verdicts map[string]verdict.Verdict) []verdict.Judgement {
	var out []verdict.Judgement
	for _, inv := range sortedKeys(verdicts) {
		out = append(out, verdict.Judgement{Invariant: inv, Verdict: verdicts[inv], Sources: []string{"source/of-" + inv}})
	}
	return out
}

func TestCheckControls(t *testing.T) {
	ctl := []string{"endpoints-truthful"}
	runs := []verdict.Run{
		{Scenario: "control works", Arm: "fault", ControlOf: ctl, RunVerdict: verdict.RunJudged,
			Judgements: judged(map[string]verdict.Verdict{"endpoints-truthful": verdict.Violated, "single-copy": verdict.Preserved})},
		{Scenario: "control blind", Arm: "fault", ControlOf: ctl, RunVerdict: verdict.RunJudged,
			Judgements: judged(map[string]verdict.Verdict{"endpoints-truthful": verdict.Preserved})},
		{Scenario: "control ineffective", Arm: "fault", ControlOf: ctl, RunVerdict: verdict.FaultIneffective,
			Judgements: judged(map[string]verdict.Verdict{"endpoints-truthful": verdict.Violated})},
		{Scenario: "control unjudged", Arm: "fault", ControlOf: ctl, RunVerdict: verdict.RunJudged},
		{Scenario: "null clean", Arm: "null", RunVerdict: verdict.RunJudged,
			Judgements: judged(map[string]verdict.Verdict{"endpoints-truthful": verdict.Preserved, "convergence": verdict.InsufficientData})},
		{Scenario: "null fires", Arm: "null", RunVerdict: verdict.RunJudged,
			Judgements: judged(map[string]verdict.Verdict{"single-copy": verdict.Violated})},
		{Scenario: "null invalid", Arm: "null", RunVerdict: verdict.RunJudged,
			Judgements: judged(map[string]verdict.Verdict{"single-copy": verdict.DetectorInvalid})},
		{Scenario: "null aborted", Arm: "null", RunVerdict: verdict.RunAborted},
		{Scenario: "plain fault arm violated", Arm: "fault", RunVerdict: verdict.RunJudged,
			Judgements: judged(map[string]verdict.Verdict{"single-copy": verdict.Violated})},
		// A control whose null arm could not decide what it controls.
		{Scenario: "control unread", Arm: "fault", ControlOf: ctl, RunVerdict: verdict.RunJudged,
			Judgements: judged(map[string]verdict.Verdict{"endpoints-truthful": verdict.Violated})},
		{Scenario: "control unread", Arm: "null", RunVerdict: verdict.RunJudged,
			Judgements: judged(map[string]verdict.Verdict{"endpoints-truthful": verdict.InsufficientData})},
		// A VIOLATED that names no source it was judged from.
		{Scenario: "control unsourced", Arm: "fault", ControlOf: ctl, RunVerdict: verdict.RunJudged,
			Judgements: []verdict.Judgement{{Invariant: "endpoints-truthful", Verdict: verdict.Violated}}},
	}
	got := strings.Join(CheckControls(runs), "\n")
	for _, want := range []string{"control blind [fault]: positive control of endpoints-truthful judged PRESERVED",
		"control ineffective [fault]: positive control of endpoints-truthful reached no verdict: the run is FAULT_INEFFECTIVE",
		"control unjudged [fault]: positive control of endpoints-truthful: the scenario does not judge",
		"null fires [null]: null arm judged single-copy VIOLATED", "null invalid [null]: null arm judged single-copy DETECTOR_INVALID",
		"null aborted [null]: null arm reached no verdict",
		"control unread [null]: null arm of a positive control of endpoints-truthful judged it INSUFFICIENT_DATA",
		"control unsourced [fault]: positive control of endpoints-truthful judged VIOLATED from no named source"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	for _, fine := range []string{"control works", "null clean", "plain fault arm"} {
		if strings.Contains(got, fine) {
			t.Errorf("%q is reported as a problem:\n%s", fine, got)
		}
	}
	if gaps := Gaps(runs); len(gaps) != 2 || gaps[0] != "null clean [null]: convergence INSUFFICIENT_DATA" {
		t.Errorf("gaps %q", gaps)
	}
}

func TestSelfCheckFailsTheSuiteOnAControlThatDidNotComeOut(t *testing.T) {
	clean := []verdict.Run{
		{Scenario: "c", Arm: "fault", ControlOf: []string{"x"}, RunVerdict: verdict.RunJudged, Judgements: judged(map[string]verdict.Verdict{"x": verdict.Violated})},
		{Scenario: "c", Arm: "null", RunVerdict: verdict.RunJudged, Judgements: judged(map[string]verdict.Verdict{"x": verdict.Preserved, "y": verdict.InsufficientData})},
	}
	report, failure := selfCheck(clean)
	if failure != "" || report != "self-check: no negative control for c [null]: y INSUFFICIENT_DATA\n" {
		t.Errorf("clean controls: report %q, failure %q", report, failure)
	}
	blind := append(clean, verdict.Run{Scenario: "d", Arm: "fault", ControlOf: []string{"x"}, RunVerdict: verdict.RunJudged,
		Judgements: judged(map[string]verdict.Verdict{"x": verdict.Preserved})})
	if _, failure := selfCheck(blind); !strings.Contains(failure, "self-check: positive and negative controls: 1 did not come out as they must:\nd [fault]: positive control of x judged PRESERVED") {
		t.Errorf("a blind control: failure %q", failure)
	}
}

// With repetitions, every repetition of a pair is judged: a control that
// missed in one of three fails the suite naming that repetition, and a
// null arm's gap names its own.
func TestSelfCheckJudgesEveryRepetition(t *testing.T) {
	ctl := func(rep int, v verdict.Verdict) verdict.Run {
		return verdict.Run{Scenario: "c", Arm: "fault", Repetition: rep, ControlOf: []string{"x"}, RunVerdict: verdict.RunJudged, Judgements: judged(map[string]verdict.Verdict{"x": v})}
	}
	null := func(rep int, v verdict.Verdict) verdict.Run {
		return verdict.Run{Scenario: "c", Arm: "null", Repetition: rep, RunVerdict: verdict.RunJudged, Judgements: judged(map[string]verdict.Verdict{"x": v})}
	}
	runs := []verdict.Run{ctl(1, verdict.Violated), null(1, verdict.Preserved), ctl(2, verdict.Preserved), null(2, verdict.InsufficientData), ctl(3, verdict.Violated), null(3, verdict.Preserved)}
	report, failure := selfCheck(runs)
	if !strings.Contains(failure, "2 did not come out as they must:\nc [fault] repetition 2: positive control of x judged PRESERVED") ||
		!strings.Contains(failure, "c [null] repetition 2: null arm of a positive control of x judged it INSUFFICIENT_DATA") {
		t.Errorf("failure %q", failure)
	}
	if report != "self-check: no negative control for c [null] repetition 2: x INSUFFICIENT_DATA\n" {
		t.Errorf("report %q", report)
	}
}

// A control that names the violation kinds it is built to make is not
// satisfied by a VIOLATED of another kind: another detector fired, not
// the one it tests. Where it names none, any kind counts.
func TestCheckControlsCountsOnlyTheKindsAControlNames(t *testing.T) {
	ctl := []string{"fencing-monotonic"}
	kinds := map[string][]string{"fencing-monotonic": {"shared-token"}}
	violated := func(kind string) []verdict.Judgement {
		return []verdict.Judgement{{Invariant: "fencing-monotonic", Verdict: verdict.Violated, Violation: kind, Sources: []string{"elector/history"}}}
	}
	runs := []verdict.Run{
		{Scenario: "shared", Arm: "fault", ControlOf: ctl, ControlKinds: kinds, RunVerdict: verdict.RunJudged, Judgements: violated("shared-token")},
		{Scenario: "went down", Arm: "fault", ControlOf: ctl, ControlKinds: kinds, RunVerdict: verdict.RunJudged, Judgements: violated("token-went-down")},
		{Scenario: "any kind", Arm: "fault", ControlOf: ctl, RunVerdict: verdict.RunJudged, Judgements: violated("token-went-down")},
	}
	got := CheckControls(runs)
	want := "went down [fault]: positive control of fencing-monotonic judged VIOLATED of kind token-went-down, not of the kind the control is built to break (shared-token)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("problems %q, want only %q", got, want)
	}
}
