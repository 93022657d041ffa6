package scenario

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// nodeReadyNow is a convergence invariant over one answer: worker1 Ready.
type nodeReadyNow struct{ phase verdict.Phase }

func (nodeReadyNow) Name() string           { return "node-ready" }
func (n nodeReadyNow) Phase() verdict.Phase { return n.phase }
func (nodeReadyNow) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: "apiserver/*", Question: evidence.NodeReady}}
}
func (nodeReadyNow) Judge(in invariant.Input) verdict.Judgement {
	var v evidence.NodeReadyValue
	if err := in.Snapshots[0].Get("apiserver/cp1", evidence.NodeReady).Decode(&v); err != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: err.Error()}
	}
	if v.Status != "True" {
		return verdict.Judgement{Verdict: verdict.Violated, Reason: "worker1 is " + v.Status}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: "worker1 Ready"}
}

// readySequence answers worker1's Ready status from a script, the last
// one repeated.
type readySequence struct {
	statuses []string
	samples  int
}

func (s *readySequence) Sample(context.Context, lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	st := s.statuses[min(s.samples, len(s.statuses)-1)]
	s.samples++
	snap := evidence.NewSnapshot(time.Now())
	a, err := evidence.ValueAnswer(evidence.NodeReadyValue{Exists: true, Status: st}, time.Now(), "1")
	if err != nil {
		return snap, nil, err
	}
	snap.Set("apiserver/cp1", evidence.NodeReady, a)
	return snap, nil, nil
}

func TestWaitConvergedSamplesUntilNoConvergenceInvariantIsViolated(t *testing.T) {
	s := &readySequence{statuses: []string{"Unknown", "False", "True"}}
	invs := []invariant.Invariant{nodeReadyNow{verdict.Convergence}}
	unsettled, err := WaitConverged(context.Background(), s, nil, invs, time.Minute, time.Millisecond)
	if err != nil || len(unsettled) != 0 || s.samples != 3 {
		t.Errorf("unsettled %v, err %v after %d samples; want settled at the third", unsettled, err, s.samples)
	}
}

func TestWaitConvergedGivesUpAtItsBoundSayingWhat(t *testing.T) {
	s := &readySequence{statuses: []string{"False"}}
	invs := []invariant.Invariant{nodeReadyNow{verdict.Convergence}}
	unsettled, err := WaitConverged(context.Background(), s, nil, invs, 20*time.Millisecond, time.Millisecond)
	if err != nil || len(unsettled) != 1 || !strings.Contains(unsettled[0], "node-ready: worker1 is False") {
		t.Errorf("unsettled %v, err %v", unsettled, err)
	}
}

func TestUnsettledIgnoresSafetyInvariants(t *testing.T) {
	s := &readySequence{statuses: []string{"False"}}
	snap, _, _ := s.Sample(context.Background(), nil)
	if got := Unsettled(snap, []invariant.Invariant{nodeReadyNow{verdict.Safety}}); len(got) != 0 {
		t.Errorf("a safety invariant held up settling: %v", got)
	}
}
