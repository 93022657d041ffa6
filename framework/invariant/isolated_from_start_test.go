package invariant

import (
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// newPodRun: the pod's denial is recorded throughout; the pod has an
// address from second 2; its connections are answered until second
// isolated (never refused when isolated is past the run).
func newPodRun(t *testing.T, rounds int, isolated float64) *run {
	r := newRun(t)
	for i := 0; i < rounds; i++ {
		s := float64(i)
		rd := r.round(s).value("apiserver/cp1", evidence.AgentPolicyExpected, 0.1, expectPair(false), "")
		switch {
		case s < 2:
			rd.unreadable("newpod/worker2", evidence.AgentPolicyProbe, 0.4, "looking up the client pod: not found")
		case s < isolated:
			rd.value("newpod/worker2", evidence.AgentPolicyProbe, 0.4, answered(), "")
		default:
			rd.value("newpod/worker2", evidence.AgentPolicyProbe, 0.4, refusedDial(), "")
		}
	}
	return r
}

func TestIsolatedFromStart(t *testing.T) {
	inv := IsolatedFromStart()

	// Refused from its first connection on.
	expect(t, inv, newPodRun(t, 8, 2).input(WindowToSettle), verdict.Preserved, "6 connection(s)")

	// One answered connection, at second 2, is enough: no bound.
	j := expect(t, inv, newPodRun(t, 8, 3).input(WindowToSettle), verdict.Violated,
		"faultline-agents/client-worker2 → 10.240.4.9:8080 was answered by target", "apiserver/cp1 record it denied", "isolated for ingress")
	if j.At.IsZero() || len(j.Sources) != 1 || j.Sources[0] != "newpod/worker2" {
		t.Errorf("the violation names its source and moment: %+v", j)
	}

	// The pod never got an address: nothing to judge.
	expect(t, inv, newPodRun(t, 2, 2).input(WindowToSettle), verdict.InsufficientData, "no connection from a new pod")

	// A connection answered while the API records it allowed is not a
	// breach: the policy was not there yet.
	r := newRun(t)
	r.round(0).value("apiserver/cp1", evidence.AgentPolicyExpected, 0.1, expectPair(true), "").
		value("newpod/worker2", evidence.AgentPolicyProbe, 0.4, answered(), "")
	r.round(1).value("apiserver/cp1", evidence.AgentPolicyExpected, 0.1, expectPair(false), "").
		value("newpod/worker2", evidence.AgentPolicyProbe, 0.4, refusedDial(), "")
	expect(t, inv, r.input(WindowToSettle), verdict.Preserved, "1 connection(s)")
}

// A new pod's connection that timed out is no proof it was refused.
func TestIsolatedFromStartATimeoutIsNoRefusal(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 6; i++ {
		r.round(float64(i)).value("apiserver/cp1", evidence.AgentPolicyExpected, 0.1, expectPair(false), "").
			value("newpod/worker2", evidence.AgentPolicyProbe, 0.4, evidence.DialValue{From: fromW2, Target: toTarget, Error: "timeout"}, "")
	}
	expect(t, IsolatedFromStart(), r.input(WindowToSettle), verdict.InsufficientData)
}
