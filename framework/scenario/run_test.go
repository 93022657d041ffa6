package scenario

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

func TestRunVerdictRule(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	sec := func(f float64) time.Time { return at.Add(time.Duration(f * float64(time.Second))) }
	normal := func(i float64) probe {
		return probe{At: sec(i), Effect: fault.Effect{Detail: "all normal"}}
	}
	effect := func(i float64) probe {
		return probe{At: sec(i), Effect: fault.Effect{Observed: true, Detail: "worker1 unreachable"}}
	}
	window := func(s float64) span { return span{From: at, To: sec(s), Resolution: lookReach(time.Second)} }
	every := func(gap, length float64) []probe {
		var ps []probe
		for x := gap / 2; x < length; x += gap {
			ps = append(ps, effect(x))
		}
		return ps
	}
	nothing := []probe{normal(0)}
	seen := []probe{normal(0), effect(1)}
	failing := []probe{{At: at, Err: errors.New("ssh: refused")}}
	// The effect once at the start, then gone: a leader that moved off a
	// throttled member, a process restarted before the window was out.
	once := []probe{effect(0), normal(1), normal(2), normal(3), normal(4), normal(5), normal(6), normal(7), normal(8), normal(9)}
	half := []probe{effect(0), effect(1), normal(2), {At: sec(3), Err: errors.New("ssh: refused")}}
	failed := func(i float64) probe { return probe{At: sec(i), Err: errors.New("ssh: handshake failed")} }
	// Four looks of forty saw the effect; the others could not look.
	var fourOfForty []probe
	for i := 0; i < 40; i++ {
		if i == 2 || i == 8 || i == 14 || i == 20 {
			fourOfForty = append(fourOfForty, effect(float64(i)+0.5))
		} else {
			fourOfForty = append(fourOfForty, failed(float64(i)+0.5))
		}
	}
	cut := effect(3)
	cut.Effect.Lasted = 3 * time.Second
	cases := []struct {
		name                 string
		arm                  Arm
		aborted, interrupted string
		probes               []probe
		required             float64
		w                    span
		want                 verdict.RunVerdict
		reason               string
	}{
		{"fault arm, effect seen", FaultArm, "", "", seen, 0.5, window(2), verdict.RunJudged, ""},
		{"fault arm, no effect", FaultArm, "", "", nothing, 0.5, window(1), verdict.FaultIneffective, "saw no effect in 1 probes during the window; last: all normal"},
		{"fault arm, probe could not look", FaultArm, "", "", failing, 0.5, window(1), verdict.FaultIneffective, "(1 of them could not look)"},
		{"fault arm, no probe at all", FaultArm, "", "", nil, 0.5, window(1), verdict.FaultIneffective, "in 0 probes"},
		{"fault arm, effect seen once in ten", FaultArm, "", "", once, 0.5, window(10), verdict.FaultIneffective,
			"saw the effect in 1 of 10 probes during the window, which attest 5% of its 10s (each look 500ms either side of what it saw), under the 50% the scenario requires for the fault to have held through it; first seen at 10:00:00.000Z (worker1 unreachable); last: all normal"},
		{"fault arm, seen once in ten where the fault declares that enough", FaultArm, "", "", once, 0.05, window(10), verdict.RunJudged, ""},
		// One look that saw the effect is not a window under the fault: it
		// speaks for a second of forty, however few looks there were.
		{"fault arm, the only look in a long window", FaultArm, "", "", []probe{effect(20)}, 0.5, window(40), verdict.FaultIneffective, "1 of 1 probes during the window, which attest 2% of its 40s"},
		{"fault arm, a look every tick, each seeing it", FaultArm, "", "", every(1, 30), 0.5, window(30), verdict.RunJudged, ""},
		{"fault arm, looks 3 s apart", FaultArm, "", "", every(3, 30), 0.5, window(30), verdict.FaultIneffective, "10 of 10 probes during the window, which attest 33% of its 30s"},
		{"fault arm, a look that did not see it cuts the stretch", FaultArm, "", "", []probe{effect(0), normal(0.6)}, 0.5, window(2), verdict.FaultIneffective, "1 of 2 probes during the window, which attest 15% of its 2s"},
		{"fault arm, a failed look attests nothing", FaultArm, "", "", half, 0.5, window(4), verdict.FaultIneffective, "2 of 4 probes during the window, which attest 38% of its 4s"},
		{"fault arm, a failed look stops its neighbour's reach", FaultArm, "", "", []probe{effect(0.5), failed(0.7)}, 0.5, window(2), verdict.FaultIneffective, "attest 30% of its 2s"},
		// A failed look is unknown, and unknown is not the fault holding:
		// four sightings among 36 looks that could not look do not stand
		// for the window they are strewn over.
		{"fault arm, four of forty looks saw it, the rest could not look", FaultArm, "", "", fourOfForty, 0.5, window(40), verdict.FaultIneffective, "4 of 40 probes during the window, which attest 10% of its 40s"},
		{"fault arm, a connect that waited out its timeout saw the cut hold", FaultArm, "", "", []probe{cut}, 0.5, window(4), verdict.RunJudged, ""},
		{"fault arm, seen in half, window not recorded: probes counted", FaultArm, "", "", half, 0.5, span{}, verdict.RunJudged, ""},
		{"fault arm, seen in half where more is required, window not recorded", FaultArm, "", "", half, 0.75, span{}, verdict.FaultIneffective, "2 of 4 probes during the window (50%; the window's bounds are not recorded, so probes are counted), under the 75%"},
		{"null arm, no effect: the control works", NullArm, "", "", nothing, 0, window(1), verdict.RunJudged, ""},
		{"null arm, no probe: still not ineffective", NullArm, "", "", nil, 0, window(1), verdict.RunJudged, ""},
		{"null arm, effect seen: contaminated", NullArm, "", "", seen, 0, window(2), verdict.RunAborted, "with nothing injected (worker1 unreachable)"},
		{"aborted wins", FaultArm, "inject failed: x", "", seen, 0.5, window(2), verdict.RunAborted, "inject failed: x"},
		{"interrupted", NullArm, "", "the window was cut short", nothing, 0, window(1), verdict.RunAborted, "cut short"},
	}
	for _, c := range cases {
		got, reason := runVerdict(c.arm, c.aborted, c.interrupted, c.probes, c.required, c.w)
		if got != c.want || !strings.Contains(reason, c.reason) || (c.reason == "" && reason != "") {
			t.Errorf("%s: got %s (%q), want %s containing %q", c.name, got, reason, c.want, c.reason)
		}
	}
	want := verdict.EffectCoverage{Probes: 4, Observed: 2, Failed: 1, Required: 0.5,
		Window: verdict.Duration(4 * time.Second), Resolution: verdict.Duration(500 * time.Millisecond), Covered: 0.375}
	if c := effectCoverage(half, 0.5, window(4)); c != want {
		t.Errorf("coverage of %d probes: %+v, want %+v", len(half), c, want)
	}
	if c := effectCoverage(half, 0.5, span{}); c.InTime() || c.Covered != 0 {
		t.Errorf("coverage with no window: %+v, want no share of time", c)
	}
}

func TestAttestedShareOfTheWindow(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	w := span{From: at, To: at.Add(3 * time.Second), Resolution: time.Second}
	look := func(ms int, seen bool) probe {
		return probe{At: at.Add(time.Duration(ms) * time.Millisecond), Effect: fault.Effect{Observed: seen}}
	}
	cases := []struct {
		name   string
		probes []probe
		want   float64
	}{
		{"looks closer than the resolution overlap, counted once", []probe{look(0, true), look(500, true), look(1000, true), look(1500, true), look(2000, true), look(2500, true)}, 1},
		{"a look outside the window speaks for its edge only", []probe{look(-500, true)}, 0.5 / 3},
		{"out of order, as a merged timeline may hold them", []probe{look(2500, true), look(500, true)}, 3.0 / 3},
		{"a look that did not see it halfway between two that did", []probe{look(0, true), look(1000, false), look(2000, true)}, 2.0 / 3},
		{"none saw it", []probe{look(1000, false)}, 0},
		{"a failed look cuts like one that did not see it", []probe{look(0, true), {At: at.Add(time.Second), Err: errors.New("refused")}, look(2000, true)}, 2.0 / 3},
		{"a look that saw the effect hold for a stretch", []probe{{At: at.Add(2500 * time.Millisecond), Effect: fault.Effect{Observed: true, Lasted: 2 * time.Second}}}, 3.0 / 3},
		{"a held stretch cut halfway to a look before it that did not see it", []probe{look(0, false), {At: at.Add(2500 * time.Millisecond), Effect: fault.Effect{Observed: true, Lasted: 1500 * time.Millisecond}}}, 2.5 / 3},
	}
	for _, c := range cases {
		if got := attested(c.probes, w); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: attested %.4f of the window, want %.4f", c.name, got, c.want)
		}
	}
	if got := attested([]probe{look(0, true)}, span{}); got != 0 {
		t.Errorf("no window: attested %v, want 0", got)
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
	bad.Labels = []string{"a/b", "control:x", "writer:cp3"}
	bad.Window = 0
	bad.Fault = fault.Null(good.Fault)
	bad.Decoy = fault.Null(good.Fault)
	err := ValidateTable([]Scenario{good, good, bad})
	for _, want := range []string{"is in the table twice", "listed twice", `phase "sometime"`, `label "a/b"`, "window must be positive", "Fault is a null fault", "Decoy is a null fault",
		"positive control of y, which the scenario does not judge", `label "control:x": set ControlOf`, `label "writer:cp3": set Writer`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if err := ValidateTable(nil); err == nil {
		t.Error("an empty table must be refused")
	}
	decoyed := good
	decoyed.Decoy = memlab.Flag{Name: "decoy"}
	arms := WithNullArms(decoyed)
	if arms[0].injected() != decoyed.Fault {
		t.Errorf("the fault arm injects %s", fault.Describe(arms[0].injected()))
	}
	if d, ok := fault.DecoyOf(arms[1].injected()); !ok || d != decoyed.Decoy {
		t.Errorf("the null arm injects %s, not the decoy", fault.Describe(arms[1].injected()))
	}
	labels := good.AutoLabels()
	if strings.Join(labels, " ") != "arm:fault fault:memlab-flag class:memlab-flag" {
		t.Errorf("labels %v", labels)
	}
	// Every typed field gives its label; the null arm of a control keeps
	// its control: labels.
	typed := control
	typed.Shape = Shape{Name: "lab11", Check: func(lab.Lab) error { return nil }}
	typed.CI, typed.Writer, typed.Labels = true, "cp3", []string{"paper:p"}
	for i, want := range []string{
		"arm:fault fault:memlab-flag class:memlab-flag topology:lab11 ci control:x writer:cp3 paper:p",
		"arm:null fault:memlab-flag class:memlab-flag topology:lab11 ci control:x writer:cp3 paper:p",
	} {
		if got := strings.Join(WithNullArms(typed)[i].AllLabels(), " "); got != want {
			t.Errorf("labels %q, want %q", got, want)
		}
	}
	half := good
	half.Shape = Shape{Name: "racks"}
	if err := half.Validate(); err == nil || !strings.Contains(err.Error(), "shape racks has no check") {
		t.Errorf("a shape without a check: %v", err)
	}
	half.Topology = "lab11"
	if err := half.Validate(); err == nil || !strings.Contains(err.Error(), "both a topology (lab11) and a shape (racks)") {
		t.Errorf("a topology and a shape: %v", err)
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
		r := newRun(sc, &engine{}, time.Now())
		snap := evidence.NewSnapshot(time.Now())
		a, err := evidence.ValueAnswer(evidence.NodeReadyValue{Exists: true, Status: "True"}, time.Now(), "1")
		if err != nil {
			t.Fatal(err)
		}
		snap.Set("apiserver/cp1", evidence.NodeReady, a)
		if _, got := r.settle(0, &snap, map[string]*evidence.Snapshot{}); got != c.want {
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
	r := newRun(sc, &engine{}, t0)
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
		newly, all := r.settle(i, &snap, settledIn)
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

// bounded is an invariant that fires only past its bound.
type bounded struct {
	inv
	bound time.Duration
}

func (b bounded) Bound() time.Duration { return b.bound }

func TestPreFaultWindowIsLongEnoughForEveryInvariantToFire(t *testing.T) {
	every := time.Second
	invs := []invariant.Invariant{inv{"plain", verdict.Safety}, bounded{inv{"short", verdict.Safety}, 5 * time.Second}, bounded{inv{"long", verdict.Safety}, 20 * time.Second}}
	if rounds, span := preFaultLength(invs[:1], every); rounds != 3 || span != 0 {
		t.Errorf("without a bounded invariant: %d rounds spanning %s, want 3 and no span", rounds, span)
	}
	rounds, span := preFaultLength(invs, every)
	if rounds != 3 || span != 22*time.Second {
		t.Fatalf("%d rounds spanning %s, want 3 spanning more than the longest bound plus two intervals (22s)", rounds, span)
	}
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	base := evidence.NewSnapshot(t0)
	var samples []evidence.Snapshot
	for i := 1; i <= 22; i++ {
		samples = append(samples, evidence.NewSnapshot(t0.Add(time.Duration(i)*time.Second)))
	}
	if preFaultLongEnough(base, samples, rounds, span) {
		t.Error("22 s after the baseline is not longer than 22 s")
	}
	if !preFaultLongEnough(base, append(samples, evidence.NewSnapshot(t0.Add(23*time.Second))), rounds, span) {
		t.Error("23 s after the baseline is long enough")
	}
	if preFaultLongEnough(base, samples[:2], 3, 0) || !preFaultLongEnough(base, samples[:3], 3, 0) {
		t.Error("three rounds after the baseline are needed, and enough, without a bound")
	}
}

// runtimeSnapshot has the stateful pod's container running on each of
// nodes, read at taken.
func runtimeSnapshot(t *testing.T, taken time.Time, nodes ...string) evidence.Snapshot {
	t.Helper()
	s := evidence.NewSnapshot(taken)
	for _, n := range []string{"w1", "w2"} {
		v := evidence.RuntimePodValue{}
		if slices.Contains(nodes, n) {
			v = evidence.RuntimePodValue{Running: true,
				Sandboxes:  []evidence.RuntimeSandbox{{ID: "sb-" + n, Name: "stateful-0", Namespace: "ns", UID: "uid-" + n, State: "SANDBOX_READY"}},
				Containers: []evidence.RuntimeContainer{{ID: "c-" + n, Name: "app", SandboxID: "sb-" + n, PodUID: "uid-" + n, State: "CONTAINER_RUNNING"}}}
		}
		a, err := evidence.ValueAnswer(v, taken.Add(10*time.Millisecond), "")
		if err != nil {
			t.Fatal(err)
		}
		s.Set(evidence.Source("cri/"+n), evidence.PodRunningHere, a)
	}
	return s
}

// Two copies running before the fault: judged over the baseline alone the
// real single-copy invariant cannot tell (it needs two reads of one
// container), over the pre-fault window it is DETECTOR_INVALID.
func TestPreFaultJudgementOverTheWindowFindsABrokenRealInvariant(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	sc := Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}, Window: time.Second, Settle: time.Second,
		Invariants: []invariant.Invariant{invariant.SingleCopy()}}
	base := runtimeSnapshot(t, t0, "w1", "w2")
	var window []evidence.Snapshot
	for i := 1; i <= 3; i++ {
		window = append(window, runtimeSnapshot(t, t0.Add(time.Duration(i)*time.Second), "w1", "w2"))
	}

	alone := newRun(sc, &engine{}, t0)
	alone.judgePreFault(invariant.Table{}, base, nil)
	if j, ok := alone.decided[invariant.SingleCopyName]; ok {
		t.Errorf("over the baseline alone single-copy was decided: %+v", j)
	}

	r := newRun(sc, &engine{}, t0)
	r.judgePreFault(invariant.Table{}, base, window)
	j := r.decided[invariant.SingleCopyName]
	if j.Verdict != verdict.DetectorInvalid || j.During != "pre-fault" || j.At.IsZero() ||
		!strings.Contains(j.Reason, "already violated before the fault, in the pre-fault window (the baseline and 3 samples after it, 10:00:00.000 to 10:00:03.000, 3s)") ||
		!strings.Contains(j.Reason, "two nodes at once") {
		t.Errorf("single-copy %+v, want DETECTOR_INVALID during pre-fault naming the window and the overlap", j)
	}
}

func TestDuringNamesThePartOfTheRunTheEvidenceFellIn(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	r := newRun(Scenario{ID: "s", Fault: memlab.Flag{Name: "a"}}, &engine{}, t0)
	r.injectStarted, r.healStarted, r.healEnded = t0.Add(10*time.Second), t0.Add(70*time.Second), t0.Add(80*time.Second)
	for at, want := range map[time.Duration]string{
		5 * time.Second: "pre-fault", 10 * time.Second: "window", 69 * time.Second: "window",
		70 * time.Second: "heal", 79 * time.Second: "heal", 80 * time.Second: "settle", 200 * time.Second: "settle",
	} {
		if got := r.phaseAt(t0.Add(at)); got != want {
			t.Errorf("at +%s: %s, want %s", at, got, want)
		}
	}
	snaps := func(at ...time.Duration) invariant.Input {
		var in invariant.Input
		for _, d := range at {
			in.Snapshots = append(in.Snapshots, evidence.NewSnapshot(t0.Add(d)))
		}
		return in
	}
	if got := r.during(verdict.Judgement{At: t0.Add(75 * time.Second)}, snaps(20*time.Second, 90*time.Second)); got != "heal" {
		t.Errorf("a moment in heal: %q", got)
	}
	if got := r.during(verdict.Judgement{}, snaps(90*time.Second, 95*time.Second)); got != "settle" {
		t.Errorf("no moment, every snapshot in settle: %q", got)
	}
	if got := r.during(verdict.Judgement{}, snaps(20*time.Second, 90*time.Second)); got != "" {
		t.Errorf("no moment, snapshots from window to settle: %q, want none", got)
	}
	// Heal that never ended: everything after its start is heal.
	r.healEnded = time.Time{}
	if got := r.phaseAt(t0.Add(200 * time.Second)); got != "heal" {
		t.Errorf("after a heal that never ended: %s", got)
	}
}

func TestLoadIsReadFromProcOrLeftOut(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	l, ok := parseLoadavg("3.52 1.58 0.59 4/1123 45678\n", at)
	if !ok || l != (verdict.Load{At: at, One: 3.52, Five: 1.58, Fifteen: 0.59}) {
		t.Errorf("parsed %+v, %v", l, ok)
	}
	for _, bad := range []string{"", "1.0 2.0", "x 1 2 3/4 5", "-1 0 0 1/1 1"} {
		if l, ok := parseLoadavg(bad, at); ok {
			t.Errorf("%q parsed as %+v", bad, l)
		}
	}
	defer func(p string) { loadavgPath = p }(loadavgPath)
	loadavgPath = t.TempDir() + "/no-loadavg"
	r := newRun(Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}}, &engine{}, at)
	if out := r.finish("passed"); len(out.Load) != 0 {
		t.Errorf("an unreadable load average is recorded as %+v, want nothing", out.Load)
	}
}

// shortLived declares that its effect shows for a fifth of the window.
type shortLived struct{ memlab.Flag }

func (shortLived) EffectShare() float64 { return 0.2 }

func TestRunRecordsRoleControlsAndTheRequiredShare(t *testing.T) {
	base := Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}, Window: time.Second, Settle: time.Second,
		Invariants: []invariant.Invariant{inv{"x", verdict.Safety}}}
	control := base
	control.ControlOf = []string{"x"}
	app := base
	app.ApplicationControl = true
	arms := WithNullArms(base)
	for name, c := range map[string]struct {
		sc        Scenario
		role      string
		controlOf []string
	}{
		"a fault arm":                       {arms[0], verdict.RoleFinding, nil},
		"a null arm":                        {arms[1], verdict.RoleNull, nil},
		"a positive control":                {WithNullArms(control)[0], verdict.RoleControl, []string{"x"}},
		"a control's null arm":              {WithNullArms(control)[1], verdict.RoleNull, nil},
		"an application control":            {WithNullArms(app)[0], verdict.RoleApplication, nil},
		"an application control's null arm": {WithNullArms(app)[1], verdict.RoleNull, nil},
	} {
		out := newRun(c.sc, &engine{}, time.Now()).finish("passed")
		if out.Role != c.role || !slices.Equal(out.ControlOf, c.controlOf) || out.RunRole() != c.role {
			t.Errorf("%s: role %q, controlOf %v; want %s, %v", name, out.Role, out.ControlOf, c.role, c.controlOf)
		}
	}
	declared := base
	declared.Fault = shortLived{memlab.Flag{Name: "a"}}
	chosen := declared
	chosen.MinEffectShare = 0.9
	for name, c := range map[string]struct {
		sc   Scenario
		want float64
	}{
		"the framework's default":   {base, fault.DefaultEffectShare},
		"the fault's declaration":   {declared, 0.2},
		"the scenario's own choice": {chosen, 0.9},
	} {
		if got := c.sc.requiredEffectShare(); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
	if got := strings.Join(WithNullArms(app)[1].AllLabels(), " "); got != "arm:null fault:memlab-flag class:memlab-flag application-control" {
		t.Errorf("an application control's null arm is labelled %q", got)
	}
	both := app
	both.ControlOf = []string{"x"}
	if err := both.Validate(); err == nil || !strings.Contains(err.Error(), "both a positive control (of x) and an application control") {
		t.Errorf("a positive and an application control at once: %v", err)
	}
	handLabelled := base
	handLabelled.Labels = []string{"application-control"}
	if err := handLabelled.Validate(); err == nil || !strings.Contains(err.Error(), "set ApplicationControl") {
		t.Errorf("the label written by hand: %v", err)
	}
	bad := base
	bad.MinEffectShare = 1.5
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "minimum effect share 1.5") {
		t.Errorf("a share above 1: %v", err)
	}
}

// emulatedFlag is a fault the lab only emulates, on labs of kind "memlab".
type emulatedFlag struct{ memlab.Flag }

func (emulatedFlag) Emulation(l lab.Lab) string {
	if l.Info().Kind == "memlab" {
		return "emulated: in memory"
	}
	return ""
}

// The run record says how the lab emulated the fault, for both arms, and
// nothing where the fault is not an emulation.
func TestRunRecordsTheEmulation(t *testing.T) {
	sc := Scenario{ID: "s", Title: "t", Fault: emulatedFlag{memlab.Flag{Name: "a"}}, Window: time.Second, Settle: time.Second,
		Invariants: []invariant.Invariant{inv{"x", verdict.Safety}}}
	eng := &engine{lab: memlab.Open(t.TempDir(), true)}
	for _, arm := range WithNullArms(sc) {
		if got := newRun(arm, eng, time.Now()).finish("passed").Emulation; got != "emulated: in memory" {
			t.Errorf("%s arm: emulation %q", arm.arm(), got)
		}
	}
	plain := sc
	plain.Fault = memlab.Flag{Name: "a"}
	if got := newRun(plain, eng, time.Now()).finish("passed").Emulation; got != "" {
		t.Errorf("a fault that emulates nothing: %q", got)
	}
	withStorage := sc
	withStorage.Emulation = func(lab.Lab) string { return "storage: one kernel" }
	if got := newRun(withStorage, eng, time.Now()).finish("passed").Emulation; got != "emulated: in memory; storage: one kernel" {
		t.Errorf("a scenario's own emulation after the fault's: %q", got)
	}
	if got := newRun(sc, &engine{}, time.Now()).finish("passed").Emulation; got != "" {
		t.Errorf("with no lab open: %q", got)
	}
}

// A positive control whose invariant was decided before the fault showed
// nothing under it: its spec must fail, naming why.
func TestAControlDecidedBeforeTheFaultFails(t *testing.T) {
	sc := Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}, Window: time.Second, Settle: time.Second,
		Invariants: []invariant.Invariant{inv{"x", verdict.Safety}, inv{"y", verdict.Safety}, inv{"z", verdict.Safety}}, ControlOf: []string{"x", "y", "z"}}
	r := newRun(sc, &engine{}, time.Now())
	r.decide(verdict.Judgement{Invariant: "x", Verdict: verdict.DetectorInvalid, Reason: "already violated before the fault"})
	r.decide(verdict.Judgement{Invariant: "y", Verdict: verdict.Violated, Reason: "broken under the fault"})
	r.decide(verdict.Judgement{Invariant: "z", Verdict: verdict.NotApplicable, Reason: "the table says so"})
	got := r.controlsDecidedBeforeTheFault()
	if len(got) != 2 || !strings.Contains(got[0], "positive control of x: it was DETECTOR_INVALID before the fault") || !strings.Contains(got[1], "positive control of z: it was NOT_APPLICABLE") {
		t.Errorf("failures %q, want x and z named", got)
	}
}

func TestVerdictLineCountsAndNamesTheViolated(t *testing.T) {
	rec := verdict.Run{RunVerdict: verdict.RunJudged, Judgements: []verdict.Judgement{
		{Invariant: "a", Verdict: verdict.Preserved}, {Invariant: "b", Verdict: verdict.Violated},
		{Invariant: "c", Verdict: verdict.Preserved}, {Invariant: "d", Verdict: verdict.Violated},
		{Invariant: "e", Verdict: verdict.InsufficientData},
	}}
	if got, want := verdictLine("s/fault/1", rec), "s/fault/1: JUDGED: 2 PRESERVED, 2 VIOLATED (b, d), 1 INSUFFICIENT_DATA"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	aborted := verdict.Run{RunVerdict: verdict.RunAborted, RunReason: "inject failed"}
	if got, want := verdictLine("s/fault/1", aborted), "s/fault/1: ABORTED (inject failed)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A control may name, for an invariant it controls, the violation kinds
// that count as its hit: only for an invariant it controls, at least one,
// each once; the fault arm's record keeps them, the null arm's (which
// must break nothing) does not.
func TestControlKindsAreValidatedAndRecorded(t *testing.T) {
	base := Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}, Window: time.Second, Settle: time.Second,
		Invariants: []invariant.Invariant{inv{"x", verdict.Safety}, inv{"y", verdict.Safety}}, ControlOf: []string{"x"}}
	control := base
	control.ControlKinds = map[string][]string{"x": {"shared-token"}}
	if err := ValidateTable(WithNullArms(control)); err != nil {
		t.Fatalf("a control naming its kinds, with its null arm: %v", err)
	}
	bad := base
	bad.ControlKinds = map[string][]string{"y": {"k"}, "x": {}}
	twice := base
	twice.ControlKinds = map[string][]string{"x": {"k", "", "k"}}
	err := errors.Join(bad.Validate(), twice.Validate())
	for _, want := range []string{"violation kinds k given for y, which the scenario is no positive control of",
		"no violation kind given for x", "an empty violation kind given for x", "violation kind k given twice for x"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	arms := WithNullArms(control)
	if got := newRun(arms[0], &engine{}, time.Now()).finish("passed"); !slices.Equal(got.ControlKindsOf("x"), []string{"shared-token"}) || got.ControlKindsOf("y") != nil {
		t.Errorf("the fault arm records kinds %v", got.ControlKinds)
	}
	if got := newRun(arms[1], &engine{}, time.Now()).finish("passed"); got.ControlKinds != nil {
		t.Errorf("the null arm records kinds %v", got.ControlKinds)
	}
	if got := newRun(WithNullArms(base)[0], &engine{}, time.Now()).finish("passed"); got.ControlKinds != nil {
		t.Errorf("a control naming no kinds records %v", got.ControlKinds)
	}
}

// A look reaches half a tick either side: looks at the engine's cadence
// speak for the whole window, and no more.
func TestALookReachesHalfATick(t *testing.T) {
	if got, want := lookReach(time.Second), 500*time.Millisecond; got != want {
		t.Errorf("lookReach(1s) = %s, want %s", got, want)
	}
}
