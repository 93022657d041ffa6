package reports

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
)

// Each scenario × arm × invariant over its repetitions: its count, rate,
// outcome, what did not count, and each quantity's median and range, a
// scaling one also divided by what it scales with.
func TestStabilityOfRepeatedRuns(t *testing.T) {
	rows := map[string]StabilityRow{}
	for _, r := range Stability(verdicttest.RepeatedRuns()) {
		rows[r.Scenario+" ["+r.Arm+"] "+r.Invariant] = r
	}
	for key, want := range map[string]struct{ count, rate, outcome, other, quantities string }{
		"pod-network-cut [fault] endpoints-truthful":         {"2 VIOLATED of 3 judged", "2/3 = 66.7% [", "flaky", "ABORTED 1", "stretch: 5 s [4, 6] (3)"},
		"pod-network-cut [fault] graceful-deletion":          {"0 VIOLATED of 3 judged", "0/3 = 0.0% [0.0%, 56.1%]", "PRESERVED every time", "ABORTED 1", "-"},
		"pod-network-cut [fault] acknowledged-data-survives": {"3 VIOLATED of 3 judged", "3/3 = 100.0% [43.9%, 100.0%]", "VIOLATED every time", "ABORTED 1", "append-rate: 2 appends/s [2, 2.5] (3); appends-lost: 12 appends [6, 20] (3); per overlap × append-rate: 2 appends/(s × appends/s) [1.5, 2] (3); overlap: 3 s [2, 4] (3)"},
		"pod-network-cut [null] graceful-deletion":           {"0 VIOLATED of 2 judged", "0/2 = 0.0% [", "PRESERVED every time", "INSUFFICIENT_DATA 1", "-"},
		"kubelet-stopped [fault] graceful-deletion":          {"1 VIOLATED of 3 judged", "1/3 = 33.3% [", "flaky", "FAULT_INEFFECTIVE 1", "-"},
		"control-endpoints [fault] endpoints-truthful":       {"1 VIOLATED of 2 judged", "1/2 = 50.0% [", "flaky", "", "-"},
	} {
		r, ok := rows[key]
		if !ok {
			t.Errorf("no row %s", key)
			continue
		}
		if r.CountText() != want.count || !strings.HasPrefix(r.RateText(), want.rate) || r.OutcomeText() != want.outcome || r.OtherText() != want.other || r.QuantitiesText() != want.quantities {
			t.Errorf("%s: %s, %s, %s, other %q, quantities %q;\nwant %+v", key, r.CountText(), r.RateText(), r.OutcomeText(), r.OtherText(), r.QuantitiesText(), want)
		}
	}
	if got := statsOf([]float64{4, 1, 3, 2}); got.Median != 2.5 || got.Min != 1 || got.Max != 4 || got.N != 4 {
		t.Errorf("median of an even count: %+v", got)
	}
}

// A quantity whose divisor is missing or zero in a repetition leaves that
// repetition out of the normalised values, never divides by zero.
func TestNormalisedLeavesOutARepetitionWithoutItsDivisor(t *testing.T) {
	q := func(lost, overlap float64, withOverlap bool) verdict.Run {
		qs := map[string]verdict.Quantity{"lost": verdicttest.Q(lost, "appends", "overlap")}
		if withOverlap {
			qs["overlap"] = verdicttest.Q(overlap, "s")
		}
		return verdicttest.Rep("a", "fault", 1, verdict.RunJudged, []string{"x"}, []verdict.Verdict{verdict.Violated}, []map[string]verdict.Quantity{qs})
	}
	rows := Stability([]verdict.Run{q(10, 2, true), q(9, 0, true), q(8, 0, false), q(6, 3, true)})
	if len(rows) != 1 || len(rows[0].Quantities) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	lost := rows[0].Quantities[0]
	if lost.Name != "lost" || lost.N != 4 || lost.Normalised.N != 2 || lost.Normalised.Min != 2 || lost.Normalised.Max != 5 || lost.NormalisedUnit != "appends/s" {
		t.Errorf("lost: %+v", lost)
	}
}

// summary.md of a suite run with repetitions: the findings table names
// the flaky scenarios with their count and gives a rate that pools the
// repetitions of several scenarios without an interval; the stability
// section gives each scenario × invariant its own.
func TestSummaryOfRepeatedRunsNamesFlakyVerdicts(t *testing.T) {
	s := Summary("s", verdicttest.RepeatedRuns(), nil)
	for _, want := range []string{
		"flaky (VIOLATED of judged)",
		"| endpoints-truthful | 2 | 0 | 0 | 4 | 2/6 = 33.3% (pools the repetitions of 2 scenarios: no interval) |",
		"| pod-network-cut 2/3 |",
		"| graceful-deletion | 1 |",
		"| kubelet-stopped 1/3 |",
		"| acknowledged-data-survives | 3 | 0 | 0 | 0 | 3/3 = 100.0% [43.9%, 100.0%] |",
		"is not k of n trials of one thing",
		"## Stability over repetitions",
		"### Findings",
		"### pod-network-cut [fault, finding, repetition 2]: JUDGED",
		"| pod-network-cut | endpoints-truthful | 2 of 3 | 2/3 = 66.7% [",
		"| **flaky** | ABORTED 1 | 4 | stretch: 5 s [4, 6] (3) |",
		"| kubelet-stopped | graceful-deletion | 1 of 3 | 1/3 = 33.3% [",
		"| **flaky** | FAULT_INEFFECTIVE 1 | 4 | - |",
		"### Positive controls (expected VIOLATED every time)",
		"| control-endpoints | endpoints-truthful | 1 of 2 |",
		"### Null arms (expected PRESERVED every time)",
		"| pod-network-cut | graceful-deletion | 0 of 2 | 0/2 = 0.0% [0.0%, 65.8%] | PRESERVED every time | INSUFFICIENT_DATA 1 | 3 | - |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	// A suite run without repetitions has neither.
	once := Summary("s", verdicttest.RolesRuns(), nil)
	if strings.Contains(once, "Stability") || strings.Contains(once, "flaky") || strings.Contains(once, "no interval") {
		t.Errorf("a run without repetitions shows stability:\n%s", once)
	}
}

// An application control's repetitions have a stability table of their
// own, as the findings, the controls and the null arms do: its rows are
// not dropped, and not pooled with another role's.
func TestStabilityKeepsApplicationControlsApart(t *testing.T) {
	var runs []verdict.Run
	for rep, v := range []verdict.Verdict{verdict.Violated, verdict.Preserved} {
		r := verdicttest.Rep("ledger-locked-cut", "fault", rep+1, verdict.RunJudged, []string{"single-history"}, []verdict.Verdict{v}, nil)
		r.Role = verdict.RoleApplication
		runs = append(runs, r)
	}
	s := StabilityMarkdown(Stability(runs))
	for _, want := range []string{
		"### Application controls",
		"| ledger-locked-cut | single-history | 1 of 2 |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("stability lacks %q:\n%s", want, s)
		}
	}
	for _, other := range []string{"### Findings", "### Positive controls", "### Null arms"} {
		if strings.Contains(s, other) {
			t.Errorf("an application control's rows are under %q:\n%s", other, s)
		}
	}
}
