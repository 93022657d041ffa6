package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
)

func TestRunVerdictRule(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	nothing := []probe{{At: at, Effect: fault.Effect{Detail: "all normal"}}}
	seen := []probe{{At: at, Effect: fault.Effect{Detail: "all normal"}}, {At: at.Add(time.Second), Effect: fault.Effect{Observed: true, Detail: "worker1 unreachable"}}}
	failing := []probe{{At: at, Err: errors.New("ssh: refused")}}
	cases := []struct {
		name                 string
		arm                  Arm
		aborted, interrupted string
		probes               []probe
		want                 verdict.RunVerdict
		reason               string
	}{
		{"fault arm, effect seen", FaultArm, "", "", seen, verdict.RunJudged, ""},
		{"fault arm, no effect", FaultArm, "", "", nothing, verdict.FaultIneffective, "saw no effect in 1 probes during the window; last: all normal"},
		{"fault arm, probe could not look", FaultArm, "", "", failing, verdict.FaultIneffective, "(1 of them could not look)"},
		{"fault arm, no probe at all", FaultArm, "", "", nil, verdict.FaultIneffective, "in 0 probes"},
		{"null arm, no effect: the control works", NullArm, "", "", nothing, verdict.RunJudged, ""},
		{"null arm, no probe: still not ineffective", NullArm, "", "", nil, verdict.RunJudged, ""},
		{"null arm, effect seen: contaminated", NullArm, "", "", seen, verdict.RunAborted, "with nothing injected (worker1 unreachable)"},
		{"aborted wins", FaultArm, "inject failed: x", "", seen, verdict.RunAborted, "inject failed: x"},
		{"interrupted", NullArm, "", "the window was cut short", nothing, verdict.RunAborted, "cut short"},
	}
	for _, c := range cases {
		got, reason := runVerdict(c.arm, c.aborted, c.interrupted, c.probes)
		if got != c.want || !strings.Contains(reason, c.reason) || (c.reason == "" && reason != "") {
			t.Errorf("%s: got %s (%q), want %s containing %q", c.name, got, reason, c.want, c.reason)
		}
	}
}

type inv struct {
	name  string
	phase verdict.Phase
}

func (i inv) Name() string                            { return i.name }
func (i inv) Phase() verdict.Phase                    { return i.phase }
func (i inv) Reads() []invariant.Reading              { return nil }
func (i inv) Judge(invariant.Input) verdict.Judgement { return verdict.Judgement{} }

func TestValidateTable(t *testing.T) {
	good := Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}, Window: time.Second, Settle: time.Second,
		Invariants: []invariant.Invariant{inv{"x", verdict.Safety}}}
	if err := ValidateTable(WithNullArms(good)); err != nil {
		t.Fatal(err)
	}
	control := good
	control.ControlOf = []string{"x"}
	if err := ValidateTable(WithNullArms(control)); err != nil {
		t.Fatalf("a positive control with its null arm: %v", err)
	}
	bad := good
	bad.ControlOf = []string{"y"}
	bad.Invariants = []invariant.Invariant{inv{"x", verdict.Safety}, inv{"x", "sometime"}}
	bad.Labels = []string{"a/b"}
	bad.Window = 0
	bad.Fault = fault.Null(good.Fault)
	err := ValidateTable([]Scenario{good, good, bad})
	for _, want := range []string{"is in the table twice", "listed twice", `phase "sometime"`, `label "a/b"`, "window must be positive", "Fault is a null fault",
		"positive control of y, which the scenario does not judge"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if err := ValidateTable(nil); err == nil {
		t.Error("an empty table must be refused")
	}
	labels := good.AutoLabels()
	if strings.Join(labels, " ") != "arm:fault fault:memlab-flag class:memlab-flag" {
		t.Errorf("labels %v", labels)
	}
}

// fixedInv judges the same verdict whatever it is given.
type fixedInv struct {
	inv
	verdict verdict.Verdict
}

func (f fixedInv) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: "apiserver/*", Question: evidence.NodeReady}}
}

func (f fixedInv) Judge(invariant.Input) verdict.Judgement {
	return verdict.Judgement{Verdict: f.verdict, Reason: "fixed"}
}

func TestSettlingGoesOnWhileAConvergenceInvariantLacksEvidence(t *testing.T) {
	for _, c := range []struct {
		convergence []verdict.Verdict
		want        bool
	}{
		{[]verdict.Verdict{verdict.Preserved, verdict.Preserved}, true},
		{[]verdict.Verdict{verdict.Preserved, verdict.Violated}, false},
		// Sources still unreadable right after heal: not settled yet.
		{[]verdict.Verdict{verdict.Preserved, verdict.InsufficientData}, false},
	} {
		invs := []invariant.Invariant{fixedInv{inv{"safety", verdict.Safety}, verdict.InsufficientData}}
		for i, v := range c.convergence {
			invs = append(invs, fixedInv{inv{fmt.Sprintf("c%d", i), verdict.Convergence}, v})
		}
		sc := Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}, Window: time.Second, Settle: time.Second, Invariants: invs}
		r := newRun(sc, &suiteState{}, time.Now())
		snap := evidence.NewSnapshot(time.Now())
		a, err := evidence.ValueAnswer(evidence.NodeReadyValue{Exists: true, Status: "True"}, time.Now(), "1")
		if err != nil {
			t.Fatal(err)
		}
		snap.Set("apiserver/cp1", evidence.NodeReady, a)
		if _, got := r.settle(&snap, map[string]*evidence.Snapshot{}); got != c.want {
			t.Errorf("convergence verdicts %v: settled %v, want %v", c.convergence, got, c.want)
		}
	}
}

// settlesFrom is PRESERVED over a snapshot taken at or after from, and
// what it is told before that.
type settlesFrom struct {
	inv
	from   time.Time
	before verdict.Verdict
}

func (s settlesFrom) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: "apiserver/*", Question: evidence.NodeReady}}
}

func (s settlesFrom) Judge(in invariant.Input) verdict.Judgement {
	if in.Snapshots[0].Taken.Before(s.from) {
		return verdict.Judgement{Verdict: s.before, Reason: "not yet"}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: "settled"}
}

// Each convergence invariant keeps the first sample that settled it; one
// that never settles leaves the others' samples as they were.
func TestEachConvergenceInvariantKeepsTheSampleThatSettledIt(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	never := t0.Add(time.Hour)
	invs := []invariant.Invariant{
		settlesFrom{inv{"early", verdict.Convergence}, t0.Add(time.Second), verdict.InsufficientData},
		settlesFrom{inv{"late", verdict.Convergence}, t0.Add(3 * time.Second), verdict.Violated},
		settlesFrom{inv{"never", verdict.Convergence}, never, verdict.Violated},
		settlesFrom{inv{"safety", verdict.Safety}, never, verdict.Violated},
	}
	sc := Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}, Window: time.Second, Settle: time.Second, Invariants: invs}
	r := newRun(sc, &suiteState{}, t0)
	settledIn := map[string]*evidence.Snapshot{}
	var samples []*evidence.Snapshot
	for i, want := range [][]string{nil, {"early"}, nil, {"late"}, nil} {
		snap := evidence.NewSnapshot(t0.Add(time.Duration(i) * time.Second))
		a, err := evidence.ValueAnswer(evidence.NodeReadyValue{Exists: true, Status: "True"}, snap.Taken, "1")
		if err != nil {
			t.Fatal(err)
		}
		snap.Set("apiserver/cp1", evidence.NodeReady, a)
		samples = append(samples, &snap)
		newly, all := r.settle(&snap, settledIn)
		if !slices.Equal(newly, want) || all {
			t.Errorf("sample %d: settled %v (all %v), want %v and not all", i, newly, all, want)
		}
	}
	if settledIn["early"] != samples[1] || settledIn["late"] != samples[3] {
		t.Errorf("early settled in %v, late in %v; want samples 1 and 3", settledIn["early"], settledIn["late"])
	}
	if _, ok := settledIn["never"]; ok {
		t.Error("an invariant violated in every sample settled")
	}
	if _, ok := settledIn["safety"]; ok {
		t.Error("a safety invariant took part in settling")
	}
	if got := names(r.unsettled(settledIn)); !slices.Equal(got, []string{"never"}) {
		t.Errorf("unsettled %v, want [never]", got)
	}
}
