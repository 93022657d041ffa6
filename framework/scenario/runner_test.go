package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// These tests drive the runner in plain Go against memlab: no Ginkgo.

// flagInv is violated by any snapshot in which memlab shows its flag set
// (at the end, by the sample judged).
type flagInv struct {
	name, flag string
	phase      verdict.Phase
}

func (f flagInv) Name() string         { return f.name }
func (f flagInv) Phase() verdict.Phase { return f.phase }
func (f flagInv) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: string(memlab.SourceFlags), Question: memlab.QuestionSet}}
}
func (f flagInv) Judge(in invariant.Input) verdict.Judgement {
	snaps := in.Snapshots
	if in.Moment == invariant.Final && len(snaps) > 0 {
		snaps = snaps[len(snaps)-1:]
	}
	read := 0
	for _, s := range snaps {
		var flags []string
		if s.Get(memlab.SourceFlags, memlab.QuestionSet).Decode(&flags) != nil {
			continue
		}
		read++
		if slices.Contains(flags, f.flag) {
			return verdict.Judgement{Verdict: verdict.Violated, Reason: "flag " + f.flag + " is set", Sources: []string{string(memlab.SourceFlags)}, At: s.Taken}
		}
	}
	if read == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no flags read"}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: fmt.Sprintf("flag %s not set in %d snapshots", f.flag, read)}
}

func memSuite(dir string) Suite {
	return Suite{
		Name:          "runner",
		OpenLab:       func(context.Context) (lab.Lab, error) { return memlab.Open(dir, true), nil },
		Sampler:       memlab.Sampler{},
		SampleEvery:   20 * time.Millisecond,
		Applicability: invariant.Table{},
	}
}

// scenarioOf injects f and judges that flag is never set (safety) and is
// cleared after heal (convergence).
func scenarioOf(id string, f fault.Fault, flag string, window time.Duration) Scenario {
	return Scenario{ID: id, Title: id, Fault: f, Window: window, Settle: 300 * time.Millisecond,
		Invariants: []invariant.Invariant{
			flagInv{"no-flag-" + flag, flag, verdict.Safety},
			flagInv{"healed-" + flag, flag, verdict.Convergence},
		}}
}

func newRunner(t *testing.T, dir string) *Runner {
	t.Helper()
	rn, err := NewRunner(context.Background(), memSuite(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	return rn
}

func entries(t *testing.T, dir string) []ledger.Entry {
	t.Helper()
	led, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	es, err := led.Entries()
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func labState(t *testing.T, dir string) memlab.State {
	t.Helper()
	s, err := memlab.Open(dir, true).Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func verdicts(r verdict.Run) map[string]verdict.Verdict {
	out := map[string]verdict.Verdict{}
	for _, j := range r.Judgements {
		out[j.Invariant] = j.Verdict
	}
	return out
}

func TestPhaseStateOnlyMovesForward(t *testing.T) {
	r := newRun(Scenario{ID: "s", Fault: memlab.Flag{Name: "a"}}, &engine{}, time.Now())
	if !r.enter(PhaseWindow) || r.enter(PhaseInject) || r.enter(PhaseWindow) || !r.enter(PhaseHeal) {
		t.Error("a run enters each phase once, and never an earlier one")
	}
	if got := fmt.Sprint(PhaseReset, PhasePreFault, PhaseInject, PhaseWindow, PhaseHeal, PhaseSettle, PhaseJudge, PhaseRelease); got != "reset pre-fault inject window heal settle judge release" {
		t.Errorf("phase names %q", got)
	}
	// Nothing injected: heal and release do nothing and say nothing.
	if err := r.cleanup(context.Background()); err != nil {
		t.Errorf("cleanup of a run that injected nothing: %v", err)
	}
}

func TestRunnerRunsEveryPhase(t *testing.T) {
	dir := t.TempDir()
	rn := newRunner(t, dir)
	res, err := rn.Run(context.Background(), scenarioOf("plain", memlab.Flag{Name: "a"}, "a", 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rec := res.Record
	v := verdicts(rec)
	if rec.RunVerdict != verdict.RunJudged || v["no-flag-a"] != verdict.Violated || v["healed-a"] != verdict.Preserved {
		t.Fatalf("run %s (%s), verdicts %v; want JUDGED, no-flag-a VIOLATED, healed-a PRESERVED", rec.RunVerdict, rec.RunReason, v)
	}
	if !strings.Contains(res.Failure, "1 safety invariant(s) VIOLATED") {
		t.Errorf("failure %q, want the safety violation", res.Failure)
	}
	for _, p := range []string{"reset", "pre-fault", "inject", "window", "heal", "settle"} {
		if _, ok := rec.Timings[p]; !ok {
			t.Errorf("no timing for %s: %v", p, rec.Timings)
		}
	}
	if res.Evidence.Baseline == nil || len(res.Evidence.PreFault) < 3 || len(res.Evidence.Window) == 0 || res.Evidence.Final == nil {
		t.Errorf("evidence lacks a part: baseline %v, %d pre-fault, %d window, final %v", res.Evidence.Baseline != nil, len(res.Evidence.PreFault), len(res.Evidence.Window), res.Evidence.Final != nil)
	}
	if st := labState(t, dir); st.Flags["a"] || !slices.Equal(st.Log, []string{"reset", "inject a", "heal a"}) {
		t.Errorf("lab %v, log %v", st.Flags, st.Log)
	}
	if es := entries(t, dir); len(es) != 0 {
		t.Errorf("ledger holds %v", es)
	}

	// The same as a positive control passes.
	control := scenarioOf("control", memlab.Flag{Name: "a"}, "a", 200*time.Millisecond)
	control.ControlOf = []string{"no-flag-a"}
	res, err = rn.Run(context.Background(), control)
	if err != nil || res.Failure != "" || res.Record.Role != verdict.RoleControl {
		t.Errorf("positive control: failure %q, role %q, %v", res.Failure, res.Record.Role, err)
	}
	// Its null arm injects nothing and expects nothing broken.
	res, err = rn.Run(context.Background(), WithNullArms(control)[1])
	if err != nil || res.Failure != "" || res.Record.RunVerdict != verdict.RunJudged || verdicts(res.Record)["no-flag-a"] != verdict.Preserved || len(res.Record.ControlOf) != 0 {
		t.Errorf("null arm of the control: %+v, failure %q, %v", res.Record, res.Failure, err)
	}
}

func TestRunnerInterruptedMidWindowHealsAndClaimsNothing(t *testing.T) {
	dir := t.TempDir()
	rn := newRunner(t, dir)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		for ctx.Err() == nil {
			if st, err := memlab.Open(dir, true).Load(); err == nil && st.Flags["w"] {
				time.Sleep(100 * time.Millisecond)
				cancel(errors.New("SIGINT"))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	res, err := rn.Run(ctx, scenarioOf("long", memlab.Flag{Name: "w"}, "w", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %s after its context ended", d)
	}
	rec := res.Record
	if rec.RunVerdict != verdict.RunAborted || !strings.Contains(rec.RunReason, "interrupted") || !strings.Contains(rec.RunReason, "into its window (SIGINT)") {
		t.Errorf("run %s (%s), want ABORTED, interrupted in its window", rec.RunVerdict, rec.RunReason)
	}
	for _, j := range rec.Judgements {
		if j.Verdict != verdict.InsufficientData {
			t.Errorf("an interrupted run claims %s for %s", j.Verdict, j.Invariant)
		}
	}
	if st := labState(t, dir); st.Flags["w"] || !slices.Contains(st.Log, "heal w") {
		t.Errorf("not healed after the interrupt: %+v", st)
	}
	if es := entries(t, dir); len(es) != 0 {
		t.Errorf("ledger holds %v", es)
	}
}

func TestRunnerFailedHealStaysInTheLedgerAndBlocksTheNextStart(t *testing.T) {
	dir := t.TempDir()
	rn := newRunner(t, dir)
	res, err := rn.Run(context.Background(), scenarioOf("heal-fails", memlab.Flag{Name: "h", FailHeal: true}, "h", 100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if rec := res.Record; rec.RunVerdict != verdict.RunAborted || !strings.Contains(rec.RunReason, "heal failed") || !strings.Contains(res.Failure, "heal failed") {
		t.Errorf("run %s (%s), failure %q; want ABORTED and failed, saying heal failed", rec.RunVerdict, rec.RunReason, res.Failure)
	}
	es := entries(t, dir)
	if len(es) != 1 || !strings.Contains(string(es[0].Params), `"h"`) {
		t.Fatalf("the unhealed fault must stay in the ledger: %v", es)
	}
	// A second run of this runner finds the entry after its reset.
	res, err = rn.Run(context.Background(), scenarioOf("next", memlab.Flag{Name: "a"}, "a", 100*time.Millisecond))
	if err != nil || res.Record.RunVerdict != verdict.RunAborted || !strings.Contains(res.Record.RunReason, "the heal ledger still holds 1 entries after reset") {
		t.Errorf("a run after a failed heal: %s (%s), %v", res.Record.RunVerdict, res.Record.RunReason, err)
	}
	before := labState(t, dir)
	_, err = NewRunner(context.Background(), memSuite(dir), nil)
	if err == nil || !strings.Contains(err.Error(), "healing what the heal ledger of lab memlab holds") || !strings.Contains(err.Error(), "flag h cannot be cleared") {
		t.Errorf("the next start: %v; want a refusal naming what could not be healed", err)
	}
	if after := labState(t, dir); after.Resets != before.Resets {
		t.Errorf("the lab was reset after the ledger heal failed")
	}
}

// A lingering fault: heal returns but its damage is still there. As a
// positive control of the convergence invariant that is what the run must
// show; as any other scenario it is a convergence violation. Either way
// its release comes after the verdicts and empties the ledger.
func TestRunnerLingeringFaultIsJudgedThenReleased(t *testing.T) {
	for _, control := range []bool{true, false} {
		t.Run(fmt.Sprintf("control=%v", control), func(t *testing.T) {
			dir := t.TempDir()
			rn := newRunner(t, dir)
			sc := scenarioOf("lingering", memlab.LingeringFlag{Name: "l"}, "l", 100*time.Millisecond)
			sc.Invariants = sc.Invariants[1:]
			if control {
				sc.ControlOf = []string{"healed-l"}
			}
			res, err := rn.Run(context.Background(), sc)
			if err != nil {
				t.Fatal(err)
			}
			rec := res.Record
			if rec.RunVerdict != verdict.RunJudged || verdicts(rec)["healed-l"] != verdict.Violated {
				t.Fatalf("run %s (%s), verdicts %v; want JUDGED with healed-l VIOLATED", rec.RunVerdict, rec.RunReason, verdicts(rec))
			}
			if control != (res.Failure == "") {
				t.Errorf("control %v: failure %q", control, res.Failure)
			}
			if !control && !strings.Contains(res.Failure, "1 convergence invariant(s) VIOLATED") {
				t.Errorf("failure %q, want the convergence violation", res.Failure)
			}
			if !strings.Contains(rec.Judgements[0].Reason, "still so when the settle timeout") {
				t.Errorf("reason %q", rec.Judgements[0].Reason)
			}
			st := labState(t, dir)
			if st.Flags["l"] || !slices.Equal(st.Log, []string{"reset", "inject l", "heal l", "release l"}) {
				t.Errorf("lab %v, log %v; want inject, heal, release", st.Flags, st.Log)
			}
			if es := entries(t, dir); len(es) != 0 {
				t.Errorf("ledger holds %v", es)
			}
			released, settled := res.Evidence.Timeline.OfKind("fault-released"), res.Evidence.Timeline.OfKind("settle-timeout")
			if len(released) != 1 || len(settled) != 1 || released[0].At.Before(settled[0].At) {
				t.Errorf("want the release after settling: %d released, %d settle-timeout", len(released), len(settled))
			}
		})
	}
}

// A process killed after inject leaves its fault in the lab and its entry
// in the ledger, with the entry's lock gone with the process. The next
// runner heals it from the ledger before it touches anything else.
func TestRunnerNextStartHealsWhatAKilledRunLeft(t *testing.T) {
	dir := t.TempDir()
	eng := &engine{name: "runner", cfg: memSuite(dir)}
	eng.cfg, _ = eng.cfg.withDefaults()
	if err := eng.open(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := newRun(scenarioOf("killed", memlab.Flag{Name: "k"}, "k", time.Minute), eng, time.Now())
	if err := r.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.inject(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	// While the killed run's process lives, its entry is busy: a second
	// start refuses to run beside it.
	if _, err := NewRunner(context.Background(), memSuite(dir), nil); err == nil || !strings.Contains(err.Error(), "held by another running process") {
		t.Errorf("a start beside a live holder: %v", err)
	}
	// kill -9: no heal, no release; the kernel drops the entry's lock.
	if err := r.st.active.Keep(); err != nil {
		t.Fatal(err)
	}
	st := labState(t, dir)
	if !st.Flags["k"] || len(entries(t, dir)) != 1 {
		t.Fatalf("after the kill the fault and its entry must remain: %v, %v", st.Flags, entries(t, dir))
	}
	killed := len(st.Log)

	rn := newRunner(t, dir)
	if len(rn.Ledger.Healed) != 1 || rn.Ledger.Healed[0].Entry.Kind != memlab.FlagKind {
		t.Errorf("ledger report %s, want the killed run's fault healed", rn.Ledger)
	}
	if after := labState(t, dir).Log[killed:]; !slices.Equal(after, []string{"heal k"}) {
		t.Errorf("the next start did %v, want only the heal", after)
	}
	res, err := rn.Run(context.Background(), scenarioOf("after", memlab.Flag{Name: "a"}, "a", 100*time.Millisecond))
	if err != nil || res.Record.RunVerdict != verdict.RunJudged {
		t.Errorf("the next run: %s (%s), %v", res.Record.RunVerdict, res.Record.RunReason, err)
	}
	if st := labState(t, dir); st.Flags["k"] || len(entries(t, dir)) != 0 {
		t.Errorf("left behind: %v, %v", st.Flags, entries(t, dir))
	}
}

func TestRunnerSkipsWhatTheLabCannotRun(t *testing.T) {
	dir := t.TempDir()
	rn := newRunner(t, dir)
	sc := scenarioOf("needs-racks", memlab.Flag{Name: "a"}, "a", 100*time.Millisecond)
	sc.Shape = Shape{Name: "racks", Check: func(l lab.Lab) error { return errors.New("no rack r1") }}
	res, err := rn.Run(context.Background(), sc)
	if err != nil || res.Record.RunID != "" || !strings.Contains(res.Skipped, "lab memlab does not have the shape racks: no rack r1") {
		t.Errorf("a lab without the shape: skipped %q, record %+v, %v", res.Skipped, res.Record, err)
	}
	if labState(t, dir).Resets != 0 {
		t.Error("the lab was touched for a scenario it has not the shape of")
	}
	res, err = rn.Run(context.Background(), scenarioOf("unsupported", memlab.Flag{Name: "u", Unsupported: true}, "u", 100*time.Millisecond))
	if err != nil || !strings.Contains(res.Skipped, "the lab cannot run this fault") || res.Failure != "" || res.Record.RunVerdict != verdict.RunAborted {
		t.Errorf("an unsupported fault: skipped %q, failure %q, run %s, %v", res.Skipped, res.Failure, res.Record.RunVerdict, err)
	}
	if es := entries(t, dir); len(es) != 0 {
		t.Errorf("ledger holds %v", es)
	}
}

func TestRunnerRefusesWhatIsNotALabOfItsShape(t *testing.T) {
	dir := t.TempDir() + "/state"
	s := memSuite(dir)
	s.OpenLab = func(context.Context) (lab.Lab, error) { return memlab.Open(dir, false), nil }
	if _, err := NewRunner(context.Background(), s, nil); err == nil || !strings.Contains(err.Error(), "does not say `lab: true`") {
		t.Errorf("not a lab: %v", err)
	}
	s = memSuite(dir)
	s.Shape = Shape{Name: "lab11", Check: func(lab.Lab) error { return errors.New("no host etcd1 (role etcd)") }}
	if _, err := NewRunner(context.Background(), s, nil); err == nil || !strings.Contains(err.Error(), "does not have the shape lab11: no host etcd1 (role etcd)") || !strings.Contains(err.Error(), "nothing was touched") {
		t.Errorf("a lab without the suite's shape: %v", err)
	}
	if memlab.Open(dir, true).Touched() {
		t.Error("the lab was touched")
	}
}

// A scenario's change is made in both arms, at its moment in the window,
// and stamped on the timeline; a change that fails aborts the run.
func TestTheChangeIsMadeInBothArmsAndAFailedOneAborts(t *testing.T) {
	for _, arm := range []Arm{FaultArm, NullArm} {
		rn := newRunner(t, t.TempDir())
		sc := scenarioOf("changed", memlab.Flag{Name: "a"}, "b", 300*time.Millisecond)
		sc.Arm = arm
		made := 0
		var madeAt time.Time
		sc.Change = &Change{Name: "set b", After: 100 * time.Millisecond, Make: func(ctx context.Context, l lab.Lab) error {
			made++
			madeAt = time.Now()
			return nil
		}}
		res, err := rn.Run(context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		if made != 1 {
			t.Fatalf("%s arm: the change was made %d times, want once", arm, made)
		}
		started, done := res.Evidence.Timeline.OfKind(ChangeStartedEvent), res.Evidence.Timeline.OfKind(ChangeMadeEvent)
		if len(started) != 1 || len(done) != 1 || done[0].Detail != "set b" {
			t.Errorf("%s arm: change events %v %v, want one of each naming the change", arm, started, done)
		}
		injected := res.Evidence.Timeline.OfKind(invariant.FaultInjectedEvent)
		if arm == FaultArm && (len(injected) != 1 || madeAt.Sub(injected[0].At) < 90*time.Millisecond) {
			t.Errorf("the change was made at %s, injection at %v: want it After into the window", madeAt, injected)
		}
		if res.Record.RunVerdict != verdict.RunJudged {
			t.Errorf("%s arm: run %s (%s), want JUDGED", arm, res.Record.RunVerdict, res.Record.RunReason)
		}
	}

	rn := newRunner(t, t.TempDir())
	sc := scenarioOf("change-fails", memlab.Flag{Name: "a"}, "b", 300*time.Millisecond)
	sc.Change = &Change{Name: "replace the backend", After: 50 * time.Millisecond, Make: func(context.Context, lab.Lab) error {
		return errors.New("the API refused it")
	}}
	res, err := rn.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.RunVerdict != verdict.RunAborted || !strings.Contains(res.Record.RunReason, "the API refused it") {
		t.Errorf("run %s (%s), want ABORTED naming the change's error", res.Record.RunVerdict, res.Record.RunReason)
	}
	if es := entries(t, rn.eng.lab.StateDir()); len(es) != 0 {
		t.Errorf("the aborted run left the heal ledger with %v", es)
	}

	bad := scenarioOf("late", memlab.Flag{Name: "a"}, "b", 300*time.Millisecond)
	bad.Change = &Change{Name: "too late", After: time.Second, Make: func(context.Context, lab.Lab) error { return nil }}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "not inside the 300ms window") {
		t.Errorf("a change after the window: %v", err)
	}
}

func TestQuiesceRunsAfterHealAndBeforeTheFinalSnapshot(t *testing.T) {
	rn := newRunner(t, t.TempDir())
	sc := scenarioOf("quiesced", memlab.Flag{Name: "a"}, "a", 200*time.Millisecond)
	var ran time.Time
	sc.Quiesce = func(ctx context.Context, l lab.Lab) error {
		ran = time.Now()
		time.Sleep(50 * time.Millisecond)
		return nil
	}
	res, err := rn.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.RunVerdict != verdict.RunJudged {
		t.Fatalf("run %s (%s), want JUDGED", res.Record.RunVerdict, res.Record.RunReason)
	}
	tl := res.Evidence.Timeline
	healed, started, done := tl.OfKind(invariant.FaultHealedEvent), tl.OfKind(QuiesceStartedEvent), tl.OfKind(QuiescedEvent)
	if len(healed) != 1 || len(started) != 1 || len(done) != 1 {
		t.Fatalf("events: healed %v, quiesce started %v, quiesced %v; want one of each", healed, started, done)
	}
	if ran.Before(healed[0].At) || started[0].At.Before(healed[0].At) {
		t.Errorf("quiesce ran at %s, before the heal ended at %s", ran, healed[0].At)
	}
	if res.Evidence.Final == nil || res.Evidence.Final.Taken.Before(done[0].At) {
		t.Errorf("the final snapshot %v was taken before quiesce ended at %s", res.Evidence.Final, done[0].At)
	}
	if _, ok := res.Record.Timings["quiesce"]; !ok {
		t.Errorf("no timing for quiesce: %v", res.Record.Timings)
	}

	sc = scenarioOf("quiesce-fails", memlab.Flag{Name: "a"}, "a", 200*time.Millisecond)
	sc.Quiesce = func(context.Context, lab.Lab) error { return errors.New("the workload would not stop") }
	res, err = rn.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.RunVerdict != verdict.RunAborted || !strings.Contains(res.Record.RunReason, "quiesce failed: the workload would not stop") {
		t.Errorf("run %s (%s), want ABORTED naming quiesce's error", res.Record.RunVerdict, res.Record.RunReason)
	}
}

// classesSeen records the fault classes each moment's input carried.
type classesSeen struct {
	flagInv
	seen map[invariant.Moment][]string
}

func (c classesSeen) Judge(in invariant.Input) verdict.Judgement {
	c.seen[in.Moment] = in.FaultClasses
	return c.flagInv.Judge(in)
}

// An invariant learns what the run injected from its input, after the
// fault only: a clock-skew fault is how it knows clocks prove nothing.
func TestTheInputNamesTheClassesOfWhatWasInjected(t *testing.T) {
	dir := t.TempDir()
	rn := newRunner(t, dir)
	for _, arm := range WithNullArms(scenarioOf("classes", memlab.Flag{Name: "a"}, "z", 100*time.Millisecond)) {
		inv := classesSeen{flagInv{"classes-z", "z", verdict.Safety}, map[invariant.Moment][]string{}}
		conv := classesSeen{flagInv{"healed-z", "z", verdict.Convergence}, map[invariant.Moment][]string{}}
		arm.Invariants = []invariant.Invariant{inv, conv}
		res, err := rn.Run(context.Background(), arm)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{string(memlab.FlagClass)}
		if arm.arm() == NullArm {
			want = nil
		}
		if res.Record.Judging == nil || !slices.Equal(res.Record.Judging.FaultClasses, want) {
			t.Errorf("%s arm: the record keeps %+v for judging again, want the classes %v", arm.arm(), res.Record.Judging, want)
		}
		if got := inv.seen[invariant.PreFault]; len(got) != 0 {
			t.Errorf("%s arm: the pre-fault input names %v", arm.arm(), got)
		}
		if got := inv.seen[invariant.WindowToSettle]; !slices.Equal(got, want) {
			t.Errorf("%s arm: the safety input names %v, want %v", arm.arm(), got, want)
		}
		if got := conv.seen[invariant.Final]; !slices.Equal(got, want) {
			t.Errorf("%s arm: the convergence input names %v, want %v", arm.arm(), got, want)
		}
	}
}

// failingEvery fails every nth sample, with the tick's time, as a
// sampler whose sources could not be opened does.
type failingEvery struct {
	memlab.Sampler
	n, calls int
	failedAt []time.Time
}

func (s *failingEvery) Sample(ctx context.Context, l lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	s.calls++
	if s.calls%s.n == 0 {
		taken := time.Now().UTC()
		s.failedAt = append(s.failedAt, taken)
		return evidence.NewSnapshot(taken), nil, fmt.Errorf("opening the lab's sources: refused")
	}
	return s.Sampler.Sample(ctx, l)
}

// A tick at which no snapshot could be taken is on the timeline at the
// tick's own time, in every phase that samples, so the invariants can
// count it as a round that could not tell.
func TestAFailedTickIsOnTheTimelineAtItsTime(t *testing.T) {
	dir := t.TempDir()
	s := memSuite(dir)
	sampler := &failingEvery{n: 3}
	s.Sampler = sampler
	rn, err := NewRunner(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	sc := scenarioOf("ticks-fail", memlab.Flag{Name: "a"}, "b", 300*time.Millisecond)
	res, err := rn.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	// A sample that fails after its phase ended is no tick of the run.
	failed := res.Evidence.Timeline.OfKind(invariant.SampleFailedEvent)
	if len(failed) == 0 {
		t.Fatalf("no failed tick on the timeline, the sampler failed %d", len(sampler.failedAt))
	}
	for i, e := range failed {
		if !slices.ContainsFunc(sampler.failedAt, e.At.Equal) {
			t.Errorf("failed tick %d stamped %s, when no tick failed (failed: %v)", i, e.At, sampler.failedAt)
		}
	}
}
