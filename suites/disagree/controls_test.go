package disagree

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
)

func TestCheckControls(t *testing.T) {
	ctl := ControlLabelPrefix + "endpoints-truthful"
	runs := []SpecRun{
		{Name: "control works", Labels: []string{"arm:fault", ctl}, RunVerdict: verdict.RunJudged,
			Verdicts: map[string]verdict.Verdict{"endpoints-truthful": verdict.Violated, "single-copy": verdict.Preserved}},
		{Name: "control blind", Labels: []string{"arm:fault", ctl}, RunVerdict: verdict.RunJudged,
			Verdicts: map[string]verdict.Verdict{"endpoints-truthful": verdict.Preserved}},
		{Name: "control ineffective", Labels: []string{"arm:fault", ctl}, RunVerdict: verdict.FaultIneffective,
			Verdicts: map[string]verdict.Verdict{"endpoints-truthful": verdict.Violated}},
		{Name: "control unjudged", Labels: []string{"arm:fault", ctl}, RunVerdict: verdict.RunJudged,
			Verdicts: map[string]verdict.Verdict{}},
		{Name: "null clean", Labels: []string{"arm:null", ctl}, RunVerdict: verdict.RunJudged,
			Verdicts: map[string]verdict.Verdict{"endpoints-truthful": verdict.Preserved, "convergence": verdict.InsufficientData}},
		{Name: "null fires", Labels: []string{"arm:null"}, RunVerdict: verdict.RunJudged,
			Verdicts: map[string]verdict.Verdict{"single-copy": verdict.Violated}},
		{Name: "null aborted", Labels: []string{"arm:null"}, RunVerdict: verdict.RunAborted},
		{Name: "plain fault arm violated", Labels: []string{"arm:fault"}, RunVerdict: verdict.RunJudged,
			Verdicts: map[string]verdict.Verdict{"single-copy": verdict.Violated}},
	}
	got := strings.Join(CheckControls(runs), "\n")
	for _, want := range []string{"control blind: positive control of endpoints-truthful judged PRESERVED",
		"control ineffective: positive control of endpoints-truthful reached no verdict: the run is FAULT_INEFFECTIVE",
		"control unjudged: positive control of endpoints-truthful: the scenario does not judge",
		"null fires: null arm judged single-copy VIOLATED", "null aborted: null arm reached no verdict"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	for _, fine := range []string{"control works", "null clean", "plain fault arm"} {
		if strings.Contains(got, fine) {
			t.Errorf("%q is reported as a problem:\n%s", fine, got)
		}
	}
	if gaps := Gaps(runs); len(gaps) != 1 || gaps[0] != "null clean: convergence INSUFFICIENT_DATA" {
		t.Errorf("gaps %q", gaps)
	}
}
