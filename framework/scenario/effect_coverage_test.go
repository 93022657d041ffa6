package scenario

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// A record written before runs kept their judging has its tick derived
// from the pre-fault samples, which on a loaded machine are far apart: a
// look's reach is taken at the engine's default tick instead, so one look
// does not stand for a window again.
func TestRejudgeOfARecordWithoutJudgingLooksAtTheDefaultTick(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	base := evidence.NewSnapshot(at.Add(-60 * time.Second))
	ev := &evidence.Record{Baseline: &base, PreFault: []evidence.Snapshot{
		evidence.NewSnapshot(at.Add(-40 * time.Second)), evidence.NewSnapshot(at.Add(-20 * time.Second))}}
	ev.Timeline = evidence.Timeline{
		{At: at, Source: "faultline", Subject: "scenario/s", Kind: invariant.FaultInjectedEvent},
		{At: at.Add(23 * time.Second), Source: "faultline", Subject: "fault/k", Kind: probeEffectEvent, Detail: "refused"},
		{At: at.Add(47500 * time.Millisecond), Source: "faultline", Subject: "scenario/s", Kind: invariant.HealStartedEvent},
	}
	rec := verdict.Run{Scenario: "s", Arm: string(FaultArm), FaultKind: "k", RunVerdict: verdict.RunJudged,
		Effect: &verdict.EffectCoverage{Probes: 1, Observed: 1, Required: 0.5}}
	rj := &verdict.Rejudged{}
	jg := deriveJudging(rec, ev, nil, rj)
	rv, reason, c := rejudgeRunVerdict(rec, jg, ev.Timeline, rj)
	if rv != verdict.FaultIneffective || c == nil || time.Duration(c.Resolution) != 500*time.Millisecond {
		t.Errorf("one look in a 47.5 s window of a record with a 20 s pre-fault gap: %s %q, coverage %+v; want FAULT_INEFFECTIVE at a 500ms reach", rv, reason, c)
	}
	if !slices.ContainsFunc(rj.Notes, func(n string) bool { return strings.Contains(n, "the engine's default tick") }) {
		t.Errorf("notes %q do not say the tick was taken at the default", rj.Notes)
	}
}

// In a record written before looks kept their durations, a cut's connect
// that timed out saw the cut for the 3 s it waited; other looks stay
// moments.
func TestRejudgeGivesOldConnectLooksTheirWait(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	ps := []probe{
		{At: at, Effect: fault.Effect{Observed: true, Detail: "TCP from worker1 to cp1 (10.0.0.21:22): timed out"}},
		{At: at.Add(4 * time.Second), Effect: fault.Effect{Detail: "TCP from worker1 to cp1 (10.0.0.21:22): refused"}},
		{At: at.Add(8 * time.Second), Effect: fault.Effect{Observed: true, Detail: "kube-proxy pid 1 on worker1 is in state T"}},
	}
	rj := &verdict.Rejudged{}
	got := connectLooksLasted(ps, rj)
	if got[0].Effect.Lasted != 3*time.Second || got[1].Effect.Lasted != 0 || got[2].Effect.Lasted != 0 {
		t.Errorf("lasted %s, %s, %s; want 3s for the timed-out connect alone", got[0].Effect.Lasted, got[1].Effect.Lasted, got[2].Effect.Lasted)
	}
	if len(rj.Notes) != 1 || !strings.Contains(rj.Notes[0], "1 looks of a connect that timed out") {
		t.Errorf("notes %q", rj.Notes)
	}
}

// The window the effect is measured over is the probing's, not the
// sampler's: a read that outlives the deadline does not lengthen it, so
// a window in which every look saw the effect is not diluted into
// FAULT_INEFFECTIVE.
func TestASamplerDrainingPastTheDeadlineDoesNotDiluteTheCoverage(t *testing.T) {
	dir := t.TempDir()
	s := memSuite(dir)
	flag := t.Name()
	var once sync.Once
	var mu sync.Mutex
	var firstSet time.Time
	s.Sampler = drainingSampler{sample: func(ctx context.Context, l lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
		snap, evs, err := memlab.Sampler{}.Sample(ctx, l)
		var flags []string
		if snap.Get(memlab.SourceFlags, memlab.QuestionSet).Decode(&flags) == nil && slices.Contains(flags, flag) {
			mu.Lock()
			if firstSet.IsZero() {
				firstSet = time.Now()
			}
			late := time.Since(firstSet) > 400*time.Millisecond
			mu.Unlock()
			if late {
				once.Do(func() { time.Sleep(3 * time.Second) }) // a read outliving the deadline
			}
		}
		return snap, evs, err
	}}
	rn, err := NewRunner(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	res, err := rn.Run(context.Background(), scenarioOf("drain", memlab.Flag{Name: flag}, "other-"+flag, 500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e := res.Record.Effect
	if e == nil || !e.InTime() {
		t.Fatalf("effect coverage %+v, want one measured in time", e)
	}
	if w := time.Duration(e.Window); w > time.Second {
		t.Errorf("the window is recorded as %s for a 500ms window: the sampler's drain is in it", w)
	}
}

type drainingSampler struct {
	sample func(context.Context, lab.Lab) (evidence.Snapshot, []evidence.Event, error)
}

func (d drainingSampler) Sample(ctx context.Context, l lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	return d.sample(ctx, l)
}
