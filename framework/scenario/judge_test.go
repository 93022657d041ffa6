package scenario

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
)

// gives judges what it is told to, reading node-ready from the API
// servers, or from the question it names.
type gives struct {
	inv
	j     verdict.Judgement
	reads evidence.Question
}

func (g gives) Reads() []invariant.Reading {
	q := evidence.NodeReady
	if g.reads != "" {
		q = g.reads
	}
	return []invariant.Reading{{Sources: "apiserver/*", Question: q}}
}

func (g gives) Judge(invariant.Input) verdict.Judgement { return g.j }

// The verdict records and the spec's failure messages the judge phase
// gives for each verdict an invariant can come to, for findings and for a
// positive control's invariants alike: PRESERVED, VIOLATED,
// INSUFFICIENT_DATA, a VIOLATED no readable answer supports, and an
// invariant that fails (gives a verdict an invariant may not give). Only a
// VIOLATED fails a finding's spec; anything but a VIOLATED of the kind it
// is built for fails a control's.
func TestTheJudgePhaseRecordsEachVerdictAndFailsOnlyWhatItMust(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	inWindow, inHeal, inSettle := t0.Add(20*time.Second), t0.Add(75*time.Second), t0.Add(90*time.Second)
	preserved := verdict.Judgement{Verdict: verdict.Preserved, Reason: "held throughout"}
	violated := verdict.Judgement{Verdict: verdict.Violated, Reason: "two at once", Sources: []string{"apiserver/cp1"}, At: inWindow, Violation: "split"}
	unknown := verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "never read"}
	failing := verdict.Judgement{Verdict: "BROKEN", Reason: "the checker crashed"}
	safety := func(name string, j verdict.Judgement) invariant.Invariant {
		return gives{inv: inv{name, verdict.Safety}, j: j}
	}
	convergence := func(name string, j verdict.Judgement) invariant.Invariant {
		return gives{inv: inv{name, verdict.Convergence}, j: j}
	}
	unread := gives{inv: inv{"unread", verdict.Safety}, j: violated, reads: evidence.PodRunningHere}
	healed := violated
	healed.At = inHeal
	sc := Scenario{ID: "s", Title: "t", Fault: memlab.Flag{Name: "a"}, Window: time.Second, Settle: time.Minute,
		Invariants: []invariant.Invariant{
			safety("kept", preserved), safety("broken", violated), safety("unknown", unknown), safety("failing", failing), unread,
			safety("decided", violated),
			safety("control-hit", violated), safety("control-kept", preserved), safety("control-unknown", unknown),
			safety("control-other-kind", healed), safety("control-failing", failing),
			convergence("converged", preserved), convergence("stuck", violated),
		},
		ControlOf:    []string{"control-hit", "control-kept", "control-unknown", "control-other-kind", "control-failing"},
		ControlKinds: map[string][]string{"control-other-kind": {"lost-write"}},
	}
	r := newRun(sc, &engine{}, t0)
	r.injectStarted, r.healStarted, r.healEnded = t0.Add(10*time.Second), t0.Add(70*time.Second), t0.Add(80*time.Second)
	decided := verdict.Judgement{Invariant: "decided", Phase: verdict.Safety, Verdict: verdict.DetectorInvalid, Reason: "before the fault"}
	r.decide(decided)
	snap := func(at time.Time) evidence.Snapshot {
		s := evidence.NewSnapshot(at)
		a, err := evidence.ValueAnswer(evidence.NodeReadyValue{Exists: true, Status: "True"}, at, "1")
		if err != nil {
			t.Fatal(err)
		}
		s.Set("apiserver/cp1", evidence.NodeReady, a)
		return s
	}
	baseline := snap(t0)
	final := snap(inSettle)
	r.record.Baseline = &baseline
	r.record.Window = []evidence.Snapshot{snap(inWindow)}
	r.record.Final = &final

	convergenceFailures := r.judgeConvergence(&settleResult{final: &final, settledIn: map[string]*evidence.Snapshot{}})
	safetyFailures := r.judgeSafety()

	cp1 := []string{"apiserver/cp1"}
	notGiven := `the invariant returned "BROKEN", which an invariant may not give (its reason: the checker crashed)`
	want := map[string]verdict.Judgement{
		"kept":    {Invariant: "kept", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "held throughout", Sources: cp1},
		"broken":  {Invariant: "broken", Phase: verdict.Safety, Verdict: verdict.Violated, Reason: "two at once", Sources: cp1, At: inWindow, Violation: "split", During: "window"},
		"unknown": {Invariant: "unknown", Phase: verdict.Safety, Verdict: verdict.InsufficientData, Reason: "never read"},
		"failing": {Invariant: "failing", Phase: verdict.Safety, Verdict: verdict.InsufficientData, Reason: notGiven},
		"unread": {Invariant: "unread", Phase: verdict.Safety, Verdict: verdict.InsufficientData,
			Reason: "no source gave a readable answer to what the invariant reads over the window, heal and settle (2 snapshots), so its VIOLATED is not supported (its reason: two at once)"},
		"decided":            decided,
		"control-hit":        {Invariant: "control-hit", Phase: verdict.Safety, Verdict: verdict.Violated, Reason: "two at once", Sources: cp1, At: inWindow, Violation: "split", During: "window"},
		"control-kept":       {Invariant: "control-kept", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "held throughout", Sources: cp1},
		"control-unknown":    {Invariant: "control-unknown", Phase: verdict.Safety, Verdict: verdict.InsufficientData, Reason: "never read"},
		"control-other-kind": {Invariant: "control-other-kind", Phase: verdict.Safety, Verdict: verdict.Violated, Reason: "two at once", Sources: cp1, At: inHeal, Violation: "split", During: "heal"},
		"control-failing":    {Invariant: "control-failing", Phase: verdict.Safety, Verdict: verdict.InsufficientData, Reason: notGiven},
		"converged":          {Invariant: "converged", Phase: verdict.Convergence, Verdict: verdict.Preserved, Reason: "held throughout", Sources: cp1},
		"stuck": {Invariant: "stuck", Phase: verdict.Convergence, Verdict: verdict.Violated, Sources: cp1, At: inWindow, Violation: "split", During: "window",
			Reason: "two at once (still so when the settle timeout of 1m0s ran out after heal)"},
	}
	for name, w := range want {
		if got := r.decided[name]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, w)
		}
	}
	if len(r.decided) != len(want) {
		t.Errorf("%d verdicts recorded, want %d", len(r.decided), len(want))
	}

	const over = "the window, heal and settle (2 snapshots, 10:00:20.000Z to 10:01:30.000Z)"
	const detail = "  moment:  10:00:20.000Z\n  sources: apiserver/cp1\n  reason:  two at once"
	wantSafety := []string{
		"invariant broken (safety) was VIOLATED over " + over + "\n" + detail,
		"positive control of control-kept\nexpected invariant control-kept (safety) to be VIOLATED over " + over + ", but it was PRESERVED\n" +
			"  moment:  not stated by the invariant\n  sources: apiserver/cp1\n  reason:  held throughout",
		"positive control of control-unknown\nexpected invariant control-unknown (safety) to be VIOLATED over " + over + ", but it was INSUFFICIENT_DATA\n" +
			"  moment:  not stated by the invariant\n  sources: none named\n  reason:  never read",
		"positive control of control-other-kind: VIOLATED of kind split, not of the kind the control is built to break (lost-write): two at once",
		"positive control of control-failing\nexpected invariant control-failing (safety) to be VIOLATED over " + over + ", but it was INSUFFICIENT_DATA\n" +
			"  moment:  not stated by the invariant\n  sources: none named\n  reason:  " + notGiven,
	}
	wantConvergence := []string{
		"invariant stuck (convergence) was VIOLATED over the final (2 snapshots, 10:00:20.000Z to 10:01:30.000Z)\n" + detail,
	}
	for _, c := range []struct {
		phase     string
		got, want []string
	}{{"safety", safetyFailures, wantSafety}, {"convergence", convergenceFailures, wantConvergence}} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s failures:\n got %q\nwant %q", c.phase, strings.Join(c.got, "\n--\n"), strings.Join(c.want, "\n--\n"))
		}
	}
}
