package reports

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
)

var (
	t0  = verdicttest.T0
	run = verdicttest.Run
	j   = verdicttest.J
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

// The summary of a folder a suite run over a pool of labs wrote names
// every lab and the lab of each run; that of one lab stays as it was.
func TestSummaryOfARunOverTwoLabsNamesEachRunsLab(t *testing.T) {
	a, b := run("a", verdict.RunJudged, j("x", verdict.Preserved)), run("b", verdict.RunJudged, j("x", verdict.Preserved))
	a.Lab = verdict.LabInfo{Name: "lab11", Kind: "local", TimerProfile: "fast"}
	b.Lab = verdict.LabInfo{Name: "lab11b", Kind: "local", TimerProfile: "fast"}
	b.ConfigHash = "sha256:other"
	s := Summary("s", []verdict.Run{a, b, a}, nil)
	for _, want := range []string{
		"- 2 labs (a suite run over a pool of labs; each run ran on the lab its row names):",
		"  - lab: lab11 (local, topology -, reset -); kubernetes -, etcd -, timer profile fast;",
		"  - lab: lab11b (local,",
		"| run | scenario | arm | role | lab | run verdict |",
		"| sc-a | fault | finding | lab11 | JUDGED |",
		"| sc-b | fault | finding | lab11b | JUDGED |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if one := Summary("s", []verdict.Run{a, a}, nil); strings.Contains(one, "| lab |") || !strings.Contains(one, "- lab: lab11 (local") {
		t.Errorf("one lab's summary changed:\n%s", one)
	}
}
