package reports

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/internal/runstest"
)

var (
	t0  = runstest.T0
	run = runstest.Run
	j   = runstest.J
)

func TestSummaryHasVerdictsRatesAndTheTable(t *testing.T) {
	runs := []verdict.Run{
		run("a", verdict.RunJudged, j("x", verdict.Violated), j("y", verdict.NotApplicable)),
		run("b", verdict.RunJudged, j("x", verdict.Preserved)),
		run("c", verdict.FaultIneffective, j("x", verdict.Violated)),
	}
	table := []verdict.Inapplicable{{FaultClass: "clock-skew", Invariant: "y", Reason: "clocks | never reach y"}}
	s := Summary("s", runs, table)
	for _, want := range []string{
		"3 runs, 2 of them counted",
		"| sc-c | fault | finding | FAULT_INEFFECTIVE: probe saw nothing |",
		"| x | 1 | 0 | 0 | 1 | 1/2 = 50.0% [",
		"| y | 0 | 0 | 0 | 0 | 0/0 (no counted verdicts) | 0/0 (no counted verdicts) | - | NOT_APPLICABLE 1 |",
		`| clock-skew | y | clocks \| never reach y |`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if !strings.Contains(Summary("s", nil, nil), "Empty: every invariant was judged") {
		t.Error("an empty table must be said to be empty")
	}
}

func TestSummarySaysWhichRunsWereEmulated(t *testing.T) {
	emulated := run("a", verdict.RunJudged, j("x", verdict.Preserved))
	emulated.FaultKind = "clock-skew"
	emulated.Emulation = "emulated: per-process vDSO skew | kernel times are not skewed"
	real := run("b", verdict.RunJudged, j("x", verdict.Preserved))
	s := Summary("s", []verdict.Run{emulated, real}, nil)
	if want := `Fault clock-skew, emulated: per-process vDSO skew \| kernel times are not skewed.`; strings.Count(s, want) != 1 {
		t.Errorf("summary should say once that run a was emulated (%q):\n%s", want, s)
	}
	if strings.Count(s, "emulated") != 1 {
		t.Errorf("only run a is emulated:\n%s", s)
	}
}
