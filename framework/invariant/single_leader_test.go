package invariant

import (
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

const (
	host1 = evidence.Source("controlplane/cp1")
	host2 = evidence.Source("controlplane/cp2")
	kcm   = evidence.ControllerManagerLeading
	sched = evidence.SchedulerLeading
)

func leading(process string) evidence.LeadingValue {
	return evidence.LeadingValue{Leading: true, Process: process}
}

var following = evidence.LeadingValue{Leading: false, Process: "p"}

// schedulerSteady adds a scheduler that cp1 leads throughout.
func schedulerSteady(rd *round) *round {
	return rd.Value(host1, sched, 0.1, leading("s1"), "").Value(host2, sched, 0.1, following, "")
}

func TestSingleLeaderPreservedAcrossAHandOver(t *testing.T) {
	r := newRun(t)
	schedulerSteady(r.Round(0).Value(host1, kcm, 0.1, leading("k1"), "").Value(host2, kcm, 0.1, following, ""))
	schedulerSteady(r.Round(1).Value(host1, kcm, 0.1, leading("k1"), "").Value(host2, kcm, 0.1, following, ""))
	// cp1's process exited; cp2 took over.
	schedulerSteady(r.Round(2).Value(host1, kcm, 0.1, evidence.LeadingValue{}, "").Value(host2, kcm, 0.1, leading("k2"), ""))
	schedulerSteady(r.Round(3).Value(host1, kcm, 0.1, evidence.LeadingValue{}, "").Value(host2, kcm, 0.1, leading("k2"), ""))
	expect(t, SingleLeader(), r.input(Window), verdict.Preserved, "kube-controller-manager", "kube-scheduler")
}

func TestSingleLeaderViolatedWhenAFrozenLeaderWakesUpLeading(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s < 4; s++ {
		rd := schedulerSteady(r.Round(s)).Value(host1, kcm, 0.1, leading("k1"), "")
		if s >= 1 {
			rd.Value(host2, kcm, 0.2, leading("k2"), "")
		} else {
			rd.Value(host2, kcm, 0.2, following, "")
		}
		rd.Value(cp1, evidence.ControllerManagerLease, 0.1, evidence.LeaseValue{Exists: true, HolderIdentity: "cp2_abc"}, "")
	}
	expect(t, SingleLeader(), r.input(Window), verdict.Violated, "two kube-controller-manager leaders at once", "cp1", "cp2", "lease holders seen: cp2_abc")
}

func TestSingleLeaderLeadingInOneRoundOnTwoHostsWithoutContinuityIsNoProof(t *testing.T) {
	// Both say they lead in the same round, but neither process is seen
	// leading twice: the hand-over may have happened inside the round.
	r := newRun(t)
	schedulerSteady(r.Round(0).Value(host1, kcm, 0.1, leading("k1"), "").Value(host2, kcm, 0.9, leading("k2"), ""))
	schedulerSteady(r.Round(1).Value(host1, kcm, 0.1, evidence.LeadingValue{}, "").Value(host2, kcm, 0.1, evidence.LeadingValue{Leading: true}, ""))
	expect(t, SingleLeader(), r.input(Window), verdict.Preserved)
}

func TestSingleLeaderInsufficientWithoutTheProcessesAnswers(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.ControllerManagerLease, 0.1, evidence.LeaseValue{Exists: true, HolderIdentity: "cp1_x"}, "").
		Unreadable(host1, kcm, 1, "not deployed: no controlplane source")
	expect(t, SingleLeader(), r.input(Window), verdict.InsufficientData, "no host said whether its kube-controller-manager leads")
}

func TestSingleLeaderInsufficientWhenAHostIsDarkWhileAnotherLeads(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s < 3; s++ {
		schedulerSteady(r.Round(s).Value(host2, kcm, 0.1, leading("k2"), "").Unreadable(host1, kcm, 1.5, "timeout"))
	}
	expect(t, SingleLeader(), r.input(Window), verdict.InsufficientData, "controlplane/cp1 unreadable")
}

func TestSingleLeaderIsExercisedOnlyWhenLeadershipChangesHands(t *testing.T) {
	handOver := newRun(t)
	schedulerSteady(handOver.Round(0).Value(host1, kcm, 0.1, leading("k1"), "").Value(host2, kcm, 0.1, following, ""))
	schedulerSteady(handOver.Round(1).Value(host1, kcm, 0.1, evidence.LeadingValue{}, "").Value(host2, kcm, 0.1, leading("k2"), ""))
	schedulerSteady(handOver.Round(2).Value(host1, kcm, 0.1, evidence.LeadingValue{}, "").Value(host2, kcm, 0.1, leading("k2"), ""))
	wantExercised(t, expect(t, SingleLeader(), handOver.input(Window), verdict.Preserved), true, "kube-controller-manager", "k1", "k2")

	// A new process on the same host (the old one restarted) is a change
	// of leader too.
	restart := newRun(t)
	schedulerSteady(restart.Round(0).Value(host1, kcm, 0.1, leading("k1"), "").Value(host2, kcm, 0.1, following, ""))
	schedulerSteady(restart.Round(1).Value(host1, kcm, 0.1, leading("k1b"), "").Value(host2, kcm, 0.1, following, ""))
	wantExercised(t, expect(t, SingleLeader(), restart.input(Window), verdict.Preserved), true, "k1b")

	steady := newRun(t)
	for s := 0.0; s < 3; s++ {
		schedulerSteady(steady.Round(s).Value(host1, kcm, 0.1, leading("k1"), "").Value(host2, kcm, 0.1, following, ""))
	}
	j := expect(t, SingleLeader(), steady.input(Window), verdict.Preserved)
	wantExercised(t, j, false, "one leader")

	// The Lease changing hands on the timeline, within the input's span,
	// exercises it even when the sampling missed the new leader.
	in := steady.input(Window)
	in.Timeline = evidence.Timeline{{At: sec(1.5), Source: "apiserver/cp1", Subject: "lease/kube-system/kube-controller-manager", Kind: "leader-changed", Detail: "cp1_a → cp2_b"}}
	wantExercised(t, expect(t, SingleLeader(), in, verdict.Preserved), true, "cp1_a → cp2_b")

	// Replayed by a relisting within the span, acquired before it: not a
	// hand-over within the input.
	replayed := evidence.Event{At: sec(1.5), Source: "apiserver/cp1", Subject: "lease/kube-system/kube-controller-manager", Kind: "leader-changed", Detail: "cp1_a → cp2_b", Replayed: true}.
		WithCluster(sec(-30), "spec.acquireTime", evidence.Microseconds)
	in.Timeline = evidence.Timeline{replayed}
	wantExercised(t, expect(t, SingleLeader(), in, verdict.Preserved), false)
}
