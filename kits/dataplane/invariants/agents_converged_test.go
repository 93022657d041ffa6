package invariants

import (
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// withSteadyPolicy adds to every round of r a connection that the
// policies allow and that is answered: the connection half, converged.
func withSteadyPolicy(t *testing.T, r *run) *run {
	for i := range r.Snaps {
		r.Snaps[i].Set("apiserver/cp1", dataplane.AgentPolicyExpected, mustValue(t, expectPair(true), r.Snaps[i].Taken))
		r.Snaps[i].Set("pod/worker2", dataplane.AgentPolicyProbe, mustValue(t, answered(), r.Snaps[i].Taken))
	}
	return r
}

func TestAgentsConverged(t *testing.T) {
	inv := AgentsConverged()

	// worker1 kept the old backend until second 9 and follows after: the
	// last sample holds everywhere, and the earlier difference exercised it.
	j := expect(t, inv, withSteadyPolicy(t, routesRun(t, 12, 9, nil)).Input(invariant.Final), verdict.Preserved, "routes of kube-proxy/worker1", "routes of kube-proxy/worker2")
	if j.Exercised == nil || !*j.Exercised {
		t.Errorf("an earlier difference exercises it: %+v", j)
	}

	// worker1 never follows: still different in the sample judged.
	j = expect(t, inv, withSteadyPolicy(t, routesRun(t, 8, 100, nil)).Input(invariant.Final), verdict.Violated,
		"not converged", "kube-proxy/worker1 forwards to [10.240.3.5] while apiserver/cp1 records [10.240.3.9]")
	if j.Exercised == nil || !*j.Exercised || j.At.IsZero() {
		t.Errorf("a violation is exercised and names its moment: %+v", j)
	}

	// Both follow at once, but worker1 cannot be read in the sample judged.
	expect(t, inv, withSteadyPolicy(t, routesRun(t, 8, 0, map[int]bool{7: true})).Input(invariant.Final), verdict.InsufficientData, "could not tell", "kube-proxy/worker1 could not be read")

	// Nothing changed before the sample judged: nothing to converge from.
	j = expect(t, inv, withSteadyPolicy(t, routesRun(t, 3, 0, nil)).Input(invariant.Final), verdict.Preserved, "every node applied what the API records")
	if j.Exercised == nil || *j.Exercised {
		t.Errorf("with no difference it is not exercised: %+v", j)
	}
}

// Each half needs evidence of its own: a sample in which every kube-proxy
// dump failed settles nothing, whatever the connections say, and a run
// in which no connection was ever read says nothing of the policies.
func TestAgentsConvergedNeedsEachHalfRead(t *testing.T) {
	inv := AgentsConverged()
	r := policyRun(t, 1, 100, nil)
	r.Snaps[0].Set("kube-proxy/worker1", dataplane.AgentServiceTranslation, evidence.UnreadableAnswer("timeout: no answer within 5s", r.Snaps[0].Taken.Add(time.Second)))
	r.Snaps[0].Set("apiserver/cp1", dataplane.AgentServiceEndpoints, mustValue(t, eps("10.240.3.5"), r.Snaps[0].Taken))
	expect(t, inv, r.Input(invariant.Final), verdict.InsufficientData, "kube-proxy")

	// Routes read and converged, no connection ever read.
	expect(t, inv, routesRun(t, 8, 0, nil).Input(invariant.Final), verdict.InsufficientData, "connection")
}

func mustValue(t *testing.T, v any, at time.Time) evidence.Answer {
	t.Helper()
	a, err := evidence.ValueAnswer(v, at.Add(100*time.Millisecond), "")
	if err != nil {
		t.Fatal(err)
	}
	return a
}
