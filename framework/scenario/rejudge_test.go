package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dataplane "github.com/faultline/faultline/kits/dataplane/invariants"
	_ "github.com/faultline/faultline/kits/storeddata/invariants" // the recorded folder judged them

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// The invariants these tests judge runs with, registered by name as a
// package registers its own, so that Rejudge can build them again.

// flagBounded is violated when memlab shows its flag set in rounds
// spanning longer than its bound; its parameters are the flag and the
// bound.
type flagBounded struct {
	Flag  string           `json:"flag"`
	Limit verdict.Duration `json:"bound"`
}

const flagBoundedName = "rj-flag-bounded"

func (flagBounded) Name() string                 { return flagBoundedName }
func (flagBounded) Phase() verdict.Phase         { return verdict.Safety }
func (f flagBounded) Bound() time.Duration       { return time.Duration(f.Limit) }
func (f flagBounded) Reads() []invariant.Reading { return flagInv{}.Reads() }
func (f flagBounded) Params() json.RawMessage    { b, _ := json.Marshal(f); return b }
func (f flagBounded) Judge(in invariant.Input) verdict.Judgement {
	var first, last time.Time
	for _, s := range in.Snapshots {
		var flags []string
		if s.Get(memlab.SourceFlags, memlab.QuestionSet).Decode(&flags) != nil || !slices.Contains(flags, f.Flag) {
			continue
		}
		if first.IsZero() {
			first = s.Taken
		}
		last = s.Taken
	}
	if !first.IsZero() && last.Sub(first) > f.Bound() {
		return verdict.Judgement{Verdict: verdict.Violated, Reason: fmt.Sprintf("flag %s set from %s for %s", f.Flag, first.Format("15:04:05.000"), last.Sub(first)), At: last}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: "flag " + f.Flag + " never set past the bound"}
}

// timelineInv says how much of the timeline it was handed, so that a
// judgement handed more or less of it than the run's reads otherwise.
// broken, it is violated wherever it is judged: before the fault, so its
// verdict is DETECTOR_INVALID with the pre-fault judgement's reason.
type timelineInv struct {
	phase  verdict.Phase
	broken bool
}

func (t timelineInv) Name() string {
	if t.broken {
		return "rj-timeline-broken"
	}
	return "rj-timeline-" + string(t.phase)
}
func (t timelineInv) Phase() verdict.Phase     { return t.phase }
func (timelineInv) Reads() []invariant.Reading { return flagInv{}.Reads() }
func (t timelineInv) Judge(in invariant.Input) verdict.Judgement {
	last := "none"
	if n := len(in.Timeline); n > 0 {
		last = in.Timeline[n-1].Kind + " at " + in.Timeline[n-1].At.Format(time.RFC3339Nano)
	}
	v := verdict.Preserved
	if t.broken {
		v = verdict.Violated
	}
	return verdict.Judgement{Verdict: v, Reason: fmt.Sprintf("%d events over the %s, the last %s", len(in.Timeline), in.Moment, last)}
}

// ruleFlag is the flag rj-rule is violated by: a test changes it between
// a run and its re-judging, as a fix to an invariant's rule would.
var (
	ruleMu   sync.Mutex
	ruleFlag = "never-set"
)

type ruleInv struct{}

const ruleInvName = "rj-rule"

func (ruleInv) Name() string               { return ruleInvName }
func (ruleInv) Phase() verdict.Phase       { return verdict.Safety }
func (ruleInv) Reads() []invariant.Reading { return flagInv{}.Reads() }
func (ruleInv) Judge(in invariant.Input) verdict.Judgement {
	ruleMu.Lock()
	flag := ruleFlag
	ruleMu.Unlock()
	return flagInv{name: ruleInvName, flag: flag, phase: verdict.Safety}.Judge(in)
}

func init() {
	for _, name := range []string{"a", "b", "e", "blip", "aftershock", "aftershock" + memlab.PendingSuffix, "l", "h", "c"} {
		for _, phase := range []verdict.Phase{verdict.Safety, verdict.Convergence} {
			inv := flagInv{name: rjFlagName(name, phase), flag: name, phase: phase}
			invariant.Register(inv.name, invariant.Plain(func() invariant.Invariant { return inv }))
		}
	}
	invariant.Register(flagBoundedName, func(raw json.RawMessage) (invariant.Invariant, error) {
		if raw == nil {
			return nil, invariant.ErrNoParams
		}
		var f flagBounded
		return f, json.Unmarshal(raw, &f)
	})
	for _, inv := range []timelineInv{{phase: verdict.Safety}, {phase: verdict.Convergence}, {phase: verdict.Safety, broken: true}} {
		invariant.Register(inv.Name(), invariant.Plain(func() invariant.Invariant { return inv }))
	}
	invariant.Register(ruleInvName, invariant.Plain(func() invariant.Invariant { return ruleInv{} }))
}

func rjFlagName(flag string, phase verdict.Phase) string {
	if phase == verdict.Safety {
		return "rj-no-flag-" + flag
	}
	return "rj-healed-" + flag
}

func rjFlags(flag string) []invariant.Invariant {
	return []invariant.Invariant{
		flagInv{rjFlagName(flag, verdict.Safety), flag, verdict.Safety},
		flagInv{rjFlagName(flag, verdict.Convergence), flag, verdict.Convergence},
	}
}

// rejudgeSuite is memlab with the pod placed by Prepare (on two nodes for
// a scenario labelled two-copies) and a table of its own.
func rejudgeSuite(dir string) Suite {
	s := memSuite(dir)
	s.Applicability = invariant.Table{{FaultClass: string(memlab.FlagClass), Invariant: rjFlagName("c", verdict.Safety), Reason: "flag c is out of the fault's reach (engineered)"}}
	s.Prepare = func(_ context.Context, l lab.Lab, sc Scenario) error {
		copies := map[string]string{memlab.Nodes[0]: "container-on-w1"}
		if slices.Contains(sc.Labels, "two-copies") {
			copies[memlab.Nodes[1]] = "container-on-w2"
		}
		return l.(*memlab.Lab).Update(func(st *memlab.State) { st.Copies = copies })
	}
	return s
}

// roundTrip is the run's record and evidence as a run folder gives them
// back.
func roundTrip(t *testing.T, res Result) (verdict.Run, *evidence.Record) {
	t.Helper()
	b, err := json.Marshal(res.Record)
	if err != nil {
		t.Fatal(err)
	}
	var rec verdict.Run
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := res.Evidence.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	ev, err := evidence.ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return rec, &ev
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Judged again by the same code, every run gives back every verdict it
// recorded, reason, moment and part of the run included, and its run
// verdict: the engine's own judging, handed the record.
func TestARunJudgedAgainWithTheSameCodeGivesWhatItRecorded(t *testing.T) {
	dir := t.TempDir()
	rn, err := NewRunner(context.Background(), rejudgeSuite(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	hazard := Scenario{ID: "hazard", Title: "hazard", Fault: memlab.Flag{Name: "e", BlipAtHeal: "blip", AftershockAfterHeal: "aftershock"},
		Window: 200 * time.Millisecond, Settle: 2 * time.Second, ControlOf: []string{rjFlagName("blip", verdict.Safety), rjFlagName("aftershock", verdict.Safety)},
		Invariants: []invariant.Invariant{
			flagInv{rjFlagName("blip", verdict.Safety), "blip", verdict.Safety},
			flagInv{rjFlagName("aftershock", verdict.Safety), "aftershock", verdict.Safety},
			flagInv{rjFlagName("e", verdict.Convergence), "e", verdict.Convergence},
			flagInv{rjFlagName("aftershock"+memlab.PendingSuffix, verdict.Convergence), "aftershock" + memlab.PendingSuffix, verdict.Convergence},
			timelineInv{phase: verdict.Safety}, timelineInv{phase: verdict.Convergence},
		}}
	plain := scenarioOf("plain", memlab.Flag{Name: "a"}, "a", 300*time.Millisecond)
	plain.Invariants = append(rjFlags("a"), invariant.SingleCopy(), timelineInv{phase: verdict.Safety}, timelineInv{phase: verdict.Convergence}, timelineInv{phase: verdict.Safety, broken: true}, flagBounded{Flag: "a", Limit: verdict.Duration(100 * time.Millisecond)}, flagInv{rjFlagName("c", verdict.Safety), "c", verdict.Safety})
	lingering := scenarioOf("lingering", memlab.LingeringFlag{Name: "l"}, "l", 200*time.Millisecond)
	lingering.Invariants, lingering.ControlOf = append(rjFlags("l"), timelineInv{phase: verdict.Safety}), []string{rjFlagName("l", verdict.Convergence)}
	twice := scenarioOf("twice", memlab.Flag{Name: "b"}, "b", 200*time.Millisecond)
	twice.Labels, twice.Invariants = []string{"two-copies"}, append(rjFlags("b"), invariant.SingleCopy())
	hidden := scenarioOf("hidden", memlab.Flag{Name: "c", Hidden: true}, "c", 200*time.Millisecond)
	hidden.Invariants = rjFlags("c")
	healFails := scenarioOf("heal-fails", memlab.Flag{Name: "h", FailHeal: true}, "h", 200*time.Millisecond)
	healFails.Invariants = rjFlags("h")
	// heal-fails last: its fault stays in the ledger and blocks the next
	// start.
	scenarios := append(WithNullArms(plain), hazard, lingering, twice, hidden, healFails)

	seen := map[verdict.Verdict]bool{}
	var runVerdicts []verdict.RunVerdict
	for _, sc := range scenarios {
		res, err := rn.Run(context.Background(), sc)
		if err != nil {
			t.Fatal(err)
		}
		rec, ev := roundTrip(t, res)
		if rec.Judging == nil {
			t.Fatalf("%s: the record keeps nothing for judging it again", rec.RunID)
		}
		again, err := Rejudge(rec, ev, RejudgeOptions{At: time.Now(), Checker: "test"})
		if err != nil {
			t.Fatalf("%s: %v", rec.RunID, err)
		}
		ownTable := []string{"NOT_APPLICABLE from the rows of the suite's own applicability table the record holds, not the framework's"}
		if again.Rejudged == nil || len(again.Rejudged.NotRejudged) > 0 || !slices.Equal(again.Rejudged.Notes, ownTable) {
			t.Errorf("%s: re-judged %+v", rec.RunID, again.Rejudged)
		}
		if got, want := asJSON(t, again.Judgements), asJSON(t, rec.Judgements); got != want {
			t.Errorf("%s: judged again\n%s\nrecorded\n%s", rec.RunID, got, want)
		}
		if again.RunVerdict != rec.RunVerdict || again.RunReason != rec.RunReason {
			t.Errorf("%s: run verdict %s (%s), recorded %s (%s)", rec.RunID, again.RunVerdict, again.RunReason, rec.RunVerdict, rec.RunReason)
		}
		if got, want := asJSON(t, again.Judging), asJSON(t, rec.Judging); got != want {
			t.Errorf("%s: judging again\n%s\nrecorded\n%s", rec.RunID, got, want)
		}
		for _, j := range rec.Judgements {
			seen[j.Verdict] = true
		}
		runVerdicts = append(runVerdicts, rec.RunVerdict)
	}
	// The runs must have exercised what they are here for.
	for _, v := range verdict.All {
		if !seen[v] {
			t.Errorf("no run recorded %s: the comparison above did not cover it", v)
		}
	}
	for _, v := range []verdict.RunVerdict{verdict.RunJudged, verdict.FaultIneffective, verdict.RunAborted} {
		if !slices.Contains(runVerdicts, v) {
			t.Errorf("no run was %s: %v", v, runVerdicts)
		}
	}
}

// An invariant's rule changed after the run: re-judging the record gives
// the new rule's verdict and reason, and leaves the recorded one as it
// was.
func TestAVerdictChangesWhenItsInvariantsRuleChanges(t *testing.T) {
	ruleMu.Lock()
	ruleFlag = "never-set"
	ruleMu.Unlock()
	defer func() {
		ruleMu.Lock()
		ruleFlag = "never-set"
		ruleMu.Unlock()
	}()
	rn, err := NewRunner(context.Background(), rejudgeSuite(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	sc := scenarioOf("rule", memlab.Flag{Name: "a"}, "a", 300*time.Millisecond)
	sc.Invariants = []invariant.Invariant{ruleInv{}, flagInv{rjFlagName("a", verdict.Convergence), "a", verdict.Convergence}}
	res, err := rn.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	rec, ev := roundTrip(t, res)
	if v := verdicts(rec)[ruleInvName]; v != verdict.Preserved {
		t.Fatalf("recorded %s, want PRESERVED under the rule as it was", v)
	}

	ruleMu.Lock()
	ruleFlag = "a"
	ruleMu.Unlock()
	again, err := Rejudge(rec, ev, RejudgeOptions{Checker: "fixed"})
	if err != nil {
		t.Fatal(err)
	}
	var j verdict.Judgement
	for _, g := range again.Judgements {
		if g.Invariant == ruleInvName {
			j = g
		}
	}
	if j.Verdict != verdict.Violated || j.Reason != "flag a is set" || j.During != duringWindow {
		t.Errorf("judged again: %+v; want VIOLATED by the new rule, in the window", j)
	}
	if v := verdicts(rec)[ruleInvName]; v != verdict.Preserved {
		t.Errorf("the recorded verdict became %s", v)
	}
	if again.Rejudged.GitCommit != "fixed" || again.GitCommit != rec.GitCommit {
		t.Errorf("checker %q, run's commit %q; want the checker's apart from the run's %q", again.Rejudged.GitCommit, again.GitCommit, rec.GitCommit)
	}
}

// A record without the parameters an invariant is built with, an unknown
// invariant, a re-judged record, a missing evidence file and a pre-fault
// window too short for a bound each say what they cannot judge.
func TestWhatCannotBeJudgedAgainIsNamed(t *testing.T) {
	rn, err := NewRunner(context.Background(), rejudgeSuite(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	sc := scenarioOf("bounded", memlab.Flag{Name: "a"}, "a", 300*time.Millisecond)
	sc.Invariants = append(rjFlags("a"), flagBounded{Flag: "a", Limit: verdict.Duration(100 * time.Millisecond)})
	res, err := rn.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	rec, ev := roundTrip(t, res)

	old := rec
	old.Judging = nil
	again, err := Rejudge(old, ev, RejudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nr := again.Rejudged.NotRejudged; len(nr) != 1 || nr[0].Invariant != flagBoundedName || !strings.Contains(nr[0].Why, "before runs kept their invariants' parameters") {
		t.Errorf("not judged again: %+v", nr)
	}
	if got := names(invariantsOf(again)); !slices.Equal(got, []string{"rj-no-flag-a", "rj-healed-a"}) {
		t.Errorf("judged again %v", got)
	}

	unknown := rec
	unknown.Judging = &verdict.Judging{Invariants: []verdict.JudgedInvariant{{Name: "rj-nobody-registers-this", Phase: verdict.Safety}}}
	if _, err := Rejudge(unknown, ev, RejudgeOptions{}); !errors.Is(err, invariant.ErrUnknown) || !strings.Contains(err.Error(), rec.RunID) {
		t.Errorf("an unknown invariant: %v", err)
	}
	if _, err := Rejudge(again, ev, RejudgeOptions{}); !errors.Is(err, ErrAlreadyRejudged) {
		t.Errorf("a re-judged record: %v", err)
	}
	noEvidence, err := Rejudge(rec, nil, RejudgeOptions{})
	if err != nil || len(noEvidence.Judgements) != 0 || len(noEvidence.Rejudged.NotRejudged) != 3 || !strings.Contains(noEvidence.Rejudged.NotRejudged[0].Why, "no evidence") {
		t.Errorf("no evidence: %+v, %v", noEvidence.Rejudged, err)
	}

	// Its bound grown past the pre-fault window the run sampled.
	longer := rec
	jg := *rec.Judging
	jg.Invariants = slices.Clone(jg.Invariants)
	for i, ji := range jg.Invariants {
		if ji.Name == flagBoundedName {
			jg.Invariants[i].Params = flagBounded{Flag: "a", Limit: verdict.Duration(time.Minute)}.Params()
		}
	}
	longer.Judging = &jg
	again, err = Rejudge(longer, ev, RejudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nr := again.Rejudged.NotRejudged; len(nr) != 1 || nr[0].Invariant != flagBoundedName || !strings.Contains(nr[0].Why, "pre-fault window") {
		t.Errorf("a bound longer than the pre-fault window: %+v", nr)
	}
}

// A convergence invariant that, by the rule as it is now, settles in none
// of the samples of a run whose settling stopped early (every invariant
// had settled by the rule it ran with) is not judged: the run did not
// sample on as it would have.
func TestAConvergenceInvariantUnsettledInAShortenedSettleIsNotJudged(t *testing.T) {
	rn, err := NewRunner(context.Background(), rejudgeSuite(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	sc := scenarioOf("settles", memlab.Flag{Name: "a"}, "a", 200*time.Millisecond)
	sc.Invariants = rjFlags("a")
	res, err := rn.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	rec, ev := roundTrip(t, res)
	if rec.Judging.SettleEnded != verdict.SettleEndedSettled {
		t.Fatalf("settling ended %q, want settled", rec.Judging.SettleEnded)
	}
	// The flag the convergence invariant waits for now shows in every
	// settle sample.
	setFlag := func(s *evidence.Snapshot) {
		a, err := evidence.ValueAnswer([]string{"a"}, s.Taken, "")
		if err != nil {
			t.Fatal(err)
		}
		s.Set(memlab.SourceFlags, memlab.QuestionSet, a)
	}
	for i := range ev.Settle {
		setFlag(&ev.Settle[i])
	}
	setFlag(ev.Final)
	again, err := Rejudge(rec, ev, RejudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nr := again.Rejudged.NotRejudged
	if len(nr) != 1 || nr[0].Invariant != "rj-healed-a" || !strings.Contains(nr[0].Why, "would have sampled on") {
		t.Errorf("not judged again: %+v", nr)
	}
	for _, j := range again.Judgements {
		if j.Invariant == "rj-healed-a" {
			t.Errorf("judged anyway: %+v", j)
		}
	}

	// Had the run's settling run to its timeout, the final snapshot is
	// what the engine judges it on.
	timedOut := rec
	jg := *rec.Judging
	jg.SettleEnded = verdict.SettleEndedTimeout
	timedOut.Judging = &jg
	again, err = Rejudge(timedOut, ev, RejudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v := verdicts(again)["rj-healed-a"]; v != verdict.Violated || len(again.Rejudged.NotRejudged) != 0 {
		t.Errorf("after a timeout: %s, not judged %+v", v, again.Rejudged.NotRejudged)
	}
}

// The effect probes are on the timeline: a required share the record
// names decides the run verdict again.
func TestTheRunVerdictIsDecidedAgainFromTheRecordedProbes(t *testing.T) {
	rn, err := NewRunner(context.Background(), rejudgeSuite(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	sc := scenarioOf("share", memlab.Flag{Name: "a", SeenOnce: true}, "a", 300*time.Millisecond)
	sc.Invariants = rjFlags("a")
	res, err := rn.Run(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	rec, ev := roundTrip(t, res)
	if rec.RunVerdict != verdict.FaultIneffective {
		t.Fatalf("recorded %s, want FAULT_INEFFECTIVE", rec.RunVerdict)
	}
	lower := rec
	eff := *rec.Effect
	eff.Required = 0.01
	lower.Effect = &eff
	again, err := Rejudge(lower, ev, RejudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.RunVerdict != verdict.RunJudged {
		t.Errorf("with 1%% required: %s (%s)", again.RunVerdict, again.RunReason)
	}
	if n := len(probesOf(ev.Timeline, fault.Fault(memlab.Flag{}).Kind())); n != rec.Effect.Probes {
		t.Errorf("%d probes on the timeline, the record counts %d", n, rec.Effect.Probes)
	}
}

func invariantsOf(r verdict.Run) []invariant.Invariant {
	var out []invariant.Invariant
	for _, j := range r.Judgements {
		out = append(out, inv{j.Invariant, j.Phase})
	}
	return out
}

// recordedFolder is a run folder written by the engine before records
// kept what judging them again needs (testdata/runs/README.md).
const recordedFolder = "../../testdata/runs/20261206T072429Z-recorded"

// Judged again, a folder recorded before runs kept their Judging gives
// back every verdict it can (the invariants built without parameters) as
// recorded, and names the others and why; what it read from the timeline
// rather than the record is noted.
func TestAFolderRecordedBeforeJudgingWasKeptIsJudgedAgainWhereItCanBe(t *testing.T) {
	runs, err := record.ReadRuns(recordedFolder)
	if err != nil {
		t.Fatal(err)
	}
	table, ok, err := record.ReadApplicability(recordedFolder)
	if err != nil || !ok {
		t.Fatalf("applicability table: %v, %v", ok, err)
	}
	bounded := []string{invariant.APIAgreementName, invariant.NoTimeTravelName, invariant.EndpointsTruthfulName, dataplane.ServiceRoutesTruthfulName, dataplane.DNSTruthfulName}
	rejudged := 0
	for _, rec := range runs {
		if rec.Judging != nil {
			t.Fatalf("%s keeps its Judging: the folder is not one recorded before it was kept", rec.RunID)
		}
		ev, err := record.ReadEvidence(recordedFolder, rec.RunID)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Rejudge(rec, &ev, RejudgeOptions{Checker: "test", FolderApplicability: table})
		if err != nil {
			t.Fatalf("%s: %v", rec.RunID, err)
		}
		if again.RunVerdict != rec.RunVerdict || again.RunReason != rec.RunReason {
			t.Errorf("%s: %s (%s), recorded %s (%s)", rec.RunID, again.RunVerdict, again.RunReason, rec.RunVerdict, rec.RunReason)
		}
		byName := map[string]verdict.Judgement{}
		for _, j := range again.Judgements {
			byName[j.Invariant] = j
		}
		notRejudged := map[string]string{}
		for _, n := range again.Rejudged.NotRejudged {
			notRejudged[n.Invariant] = n.Why
		}
		for _, j := range rec.Judgements {
			got, judged := byName[j.Invariant]
			switch {
			case slices.Contains(bounded, j.Invariant):
				if judged || !strings.Contains(notRejudged[j.Invariant], "before runs kept their invariants' parameters") {
					t.Errorf("%s %s: judged %v, not judged because %q", rec.RunID, j.Invariant, judged, notRejudged[j.Invariant])
				}
			case !judged:
				t.Errorf("%s %s: not judged again: %s", rec.RunID, j.Invariant, notRejudged[j.Invariant])
			default:
				rejudged++
				if a, b := asJSON(t, got), asJSON(t, j); a != b {
					t.Errorf("%s %s: judged again\n%s\nrecorded\n%s", rec.RunID, j.Invariant, a, b)
				}
			}
		}
		if len(again.Rejudged.Notes) == 0 {
			t.Errorf("%s: nothing noted of what was read from the timeline", rec.RunID)
		}
	}
	if rejudged < 10 {
		t.Errorf("%d verdicts judged again: the folder should give more", rejudged)
	}
}

// Judged again, a run's invariants get the classes of what it injected
// from its record; a record that does not keep them gives its fault class
// in their place, and says so.
func TestAJudgedAgainRunHandsItsInvariantsTheInjectedClasses(t *testing.T) {
	dir := t.TempDir()
	rn, err := NewRunner(context.Background(), rejudgeSuite(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	plain := scenarioOf("classes", memlab.Flag{Name: "a"}, "a", 200*time.Millisecond)
	plain.Invariants = rjFlags("a")
	res, err := rn.Run(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	rec, ev := roundTrip(t, res)
	want := []string{string(memlab.FlagClass)}
	if rec.Judging == nil || !slices.Equal(rec.Judging.FaultClasses, want) {
		t.Fatalf("recorded judging %+v, want the classes %v", rec.Judging, want)
	}
	if r := (&run{replay: &replay{}, judging: *rec.Judging}); !slices.Equal(r.faultClasses(), want) {
		t.Errorf("judging again hands %v, want %v", r.faultClasses(), want)
	}
	rec.Judging.FaultClasses = nil
	again, err := Rejudge(rec, ev, RejudgeOptions{At: time.Now(), Checker: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Judging.FaultClasses, want) || !slices.ContainsFunc(again.Rejudged.Notes, func(n string) bool {
		return strings.Contains(n, "its fault class "+string(memlab.FlagClass)+" stands for them")
	}) {
		t.Errorf("a record without the classes: judging %v, notes %q", again.Judging.FaultClasses, again.Rejudged.Notes)
	}
}

// A positive control that names the violation kinds it is built to make
// fails its spec on a VIOLATED of another kind (here, one naming none),
// saying which it got and which it needed. The record keeps the kinds,
// and so does the record judged again, whose verdict JUnit fails the
// control as the run's own does; a record without them (written before
// controls named kinds) is judged again as counting any kind.
func TestAControlFailsOnAViolationOfAnotherKindAndJudgedAgainToo(t *testing.T) {
	rn, err := NewRunner(context.Background(), rejudgeSuite(t.TempDir()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	inv := rjFlagName("a", verdict.Safety)
	control := scenarioOf("kinds", memlab.Flag{Name: "a"}, "a", 200*time.Millisecond)
	control.Invariants, control.ControlOf = rjFlags("a"), []string{inv}
	control.ControlKinds = map[string][]string{inv: {"flag-set-twice"}}
	res, err := rn.Run(context.Background(), control)
	if err != nil {
		t.Fatal(err)
	}
	other := "VIOLATED naming no kind, not of the kind the control is built to break (flag-set-twice)"
	if verdicts(res.Record)[inv] != verdict.Violated || !strings.Contains(res.Failure, "positive control of "+inv+": "+other) {
		t.Errorf("verdicts %v, failure %q", verdicts(res.Record), res.Failure)
	}
	rec, ev := roundTrip(t, res)
	if !slices.Equal(rec.ControlKindsOf(inv), []string{"flag-set-twice"}) {
		t.Errorf("the record keeps kinds %v", rec.ControlKinds)
	}
	failureOf := func(r verdict.Run) string {
		for _, tc := range record.VerdictJUnit("memlab", []verdict.Run{r}).TestSuites[0].TestCases {
			if tc.Properties.WithName(record.PropInvariant) == inv && tc.Failure != nil {
				return tc.Failure.Type + ": " + tc.Failure.Message
			}
		}
		return ""
	}
	again, err := Rejudge(rec, ev, RejudgeOptions{At: time.Now(), Checker: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.ControlKindsOf(inv), []string{"flag-set-twice"}) || !strings.Contains(failureOf(again), "control-other-kind: positive control missed: got "+other) {
		t.Errorf("judged again: kinds %v, failure %q", again.ControlKinds, failureOf(again))
	}
	rec.ControlKinds = nil
	old, err := Rejudge(rec, ev, RejudgeOptions{At: time.Now(), Checker: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if old.ControlKinds != nil || failureOf(old) != "" || asJSON(t, old.Judgements) != asJSON(t, again.Judgements) {
		t.Errorf("a record without kinds judged again: kinds %v, failure %q", old.ControlKinds, failureOf(old))
	}
}
