package invariants

import (
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// withHealth adds each node's agents' health to every round of r, with
// kube-proxy on worker1 answering status.
func withHealth(t *testing.T, r *run, status int) *run {
	for i := range r.Snaps {
		for _, n := range []string{"worker1", "worker2"} {
			code := 200
			if n == "worker1" {
				code = status
			}
			v := dataplane.AgentHealthValue{Agents: map[string]dataplane.AgentHealthAnswer{
				"kube-proxy":  {StatusCode: code, Body: `{"healthy":true}`},
				"kube-router": {StatusCode: 200, Body: "OK"},
			}}
			a, err := evidence.ValueAnswer(v, r.Snaps[i].Taken.Add(300*time.Millisecond), "")
			if err != nil {
				t.Fatal(err)
			}
			r.Snaps[i].Set(evidence.Source("agents/"+n), dataplane.AgentHealth, a)
		}
	}
	return r
}

func TestAgentHealthTruthful(t *testing.T) {
	inv := AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second))
	expect(t, inv, withHealth(t, routesRun(t, 12, 9, nil), 200).Input(invariant.WindowToSettle), verdict.Violated,
		"kube-proxy on worker1 reported itself healthy", "answered its health check 200", "forwards to [10.240.3.5]")
	j := expect(t, inv, withHealth(t, routesRun(t, 12, 9, nil), 503).Input(invariant.WindowToSettle), verdict.Preserved)
	if j.Exercised == nil || !*j.Exercised {
		t.Errorf("a diverging agent that says it is unhealthy exercises it: %+v", j)
	}
	// A change both nodes follow within a round still diverges for that
	// round: exercised, never past the bound.
	expect(t, inv, withHealth(t, routesRun(t, 10, 0, nil), 200).Input(invariant.WindowToSettle), verdict.Preserved)
	steady := newRun(t)
	for i := 0; i < 5; i++ {
		steady.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps("10.240.3.5"), "").Value(
			"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")

	}
	j = expect(t, inv, withHealth(t, steady, 200).Input(invariant.WindowToSettle), verdict.Preserved)
	if j.Exercised == nil || *j.Exercised {
		t.Errorf("agents that never diverge do not exercise it: %+v", j)
	}
	expect(t, inv, routesRun(t, 10, 0, nil).Input(invariant.WindowToSettle), verdict.InsufficientData, "health was read")
}

// A stale agent whose health could not be read is not shown truthful.
func TestAgentHealthTruthfulNeedsTheHealthOfAStaleAgent(t *testing.T) {
	r := routesRun(t, 12, 9, nil)
	for i := range r.Snaps {
		r.Snaps[i].Set("agents/worker1", dataplane.AgentHealth, evidence.UnreadableAnswer("timeout: no answer within 5s", r.Snaps[i].Taken.Add(300*time.Millisecond)))
		a, err := evidence.ValueAnswer(dataplane.AgentHealthValue{Agents: map[string]dataplane.AgentHealthAnswer{"kube-proxy": {StatusCode: 200}, "kube-router": {StatusCode: 200}}}, r.Snaps[i].Taken.Add(300*time.Millisecond), "")
		if err != nil {
			t.Fatal(err)
		}
		r.Snaps[i].Set("agents/worker2", dataplane.AgentHealth, a)
	}
	expect(t, AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "kube-proxy on worker1")
}

// policyHealthRun: a deny recorded from second 3 for the target on
// worker1, its connections answered throughout, no rule dump naming the
// target (the agent never programmed it), and both nodes' agents
// answering 200.
func policyHealthRun(t *testing.T) *run {
	r := newRun(t)
	for i := 0; i < 12; i++ {
		s := float64(i)
		exp := expectPair(s < 3)
		exp.Pairs[0].TargetNode, exp.Pairs[0].FromNode = "worker1", "worker2"
		r.Round(s).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, exp, "").Value(
			"pod/worker2", dataplane.AgentPolicyProbe, 0.4, answered(), "").Value(

			"policy-agent/worker1", dataplane.AgentPolicyRules, 0.3, dataplane.PolicyRulesValue{Agent: "kube-router", Decided: dataplane.DecidedInKernel, Targets: []dataplane.PolicyTarget{}}, "")

	}
	return withHealth(t, r, 200)
}

// The policy agent that must enforce a pair is the one on the node the
// target runs on, whether or not its rules name the target.
func TestAgentHealthTruthfulLinksThePolicyAgentByTheTargetsNode(t *testing.T) {
	expect(t, AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second)), policyHealthRun(t).Input(invariant.WindowToSettle), verdict.Violated,
		"kube-router on worker1 reported itself healthy", "was answered by target while apiserver/cp1 records it denied")
}

// Every agent that reported itself healthy while stale is named, not the
// first alone.
func TestAgentHealthTruthfulNamesEveryStaleAgent(t *testing.T) {
	r := policyHealthRun(t)
	for i := range r.Snaps {
		s := r.Snaps[i].Taken
		ready := "10.240.3.5"
		if i >= 3 {
			ready = "10.240.3.9"
		}
		for src, q := range map[evidence.Source]evidence.Question{"apiserver/cp1": dataplane.AgentServiceEndpoints, "kube-proxy/worker1": dataplane.AgentServiceTranslation} {
			var v any = eps(ready)
			if q == dataplane.AgentServiceTranslation {
				v = dnat("10.240.3.5:8080")
			}
			a, err := evidence.ValueAnswer(v, s.Add(200*time.Millisecond), "")
			if err != nil {
				t.Fatal(err)
			}
			r.Snaps[i].Set(src, q, a)
		}
	}
	j := expect(t, AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.Violated,
		"kube-proxy on worker1 reported itself healthy", "kube-router on worker1 reported itself healthy")
	if len(j.Sources) == 0 {
		t.Errorf("no source named: %+v", j)
	}
}

// A health read that timed out is no admission: kube-proxy on worker1
// stays stale from the change at 3 to the end and answers its health 200,
// except that the 1 s health reads at 6 and 9 timed out. The stretch is
// not proven past the bound, but unknown rounds that could hide it are:
// INSUFFICIENT_DATA, never PRESERVED.
func TestAgentHealthATimedOutHealthReadIsNoAdmission(t *testing.T) {
	r := withHealth(t, routesRun(t, 12, 100, nil), 200)
	for _, i := range []int{6, 9} {
		v := dataplane.AgentHealthValue{Agents: map[string]dataplane.AgentHealthAnswer{
			"kube-proxy":  {Error: "no answer within 1s"},
			"kube-router": {StatusCode: 200, Body: "OK"},
		}}
		r.Snaps[i].Set("agents/worker1", dataplane.AgentHealth, mustValue(t, v, r.Snaps[i].Taken.Add(200*time.Millisecond)))
	}
	expect(t, AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.InsufficientData,
		"health read failed (no answer within 1s)")

	// A refused connection is the agent's admission: nothing listens.
	for _, i := range []int{6, 9} {
		v := dataplane.AgentHealthValue{Agents: map[string]dataplane.AgentHealthAnswer{
			"kube-proxy":  {Error: "connection failed: dial tcp 10.0.0.11:10256: connect: connection refused"},
			"kube-router": {StatusCode: 200, Body: "OK"},
		}}
		r.Snaps[i].Set("agents/worker1", dataplane.AgentHealth, mustValue(t, v, r.Snaps[i].Taken.Add(200*time.Millisecond)))
	}
	expect(t, AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.Preserved)

	// So is a connection made and not answered (a frozen agent, as its
	// checker sees it); one not made in time is not.
	for _, c := range []struct {
		err  string
		want verdict.Verdict
	}{{evidence.ConnectedNoAnswer + " 1s", verdict.Preserved}, {"no connection within 1s", verdict.InsufficientData}} {
		for _, i := range []int{6, 9} {
			v := dataplane.AgentHealthValue{Agents: map[string]dataplane.AgentHealthAnswer{
				"kube-proxy":  {Error: c.err},
				"kube-router": {StatusCode: 200, Body: "OK"},
			}}
			r.Snaps[i].Set("agents/worker1", dataplane.AgentHealth, mustValue(t, v, r.Snaps[i].Taken.Add(200*time.Millisecond)))
		}
		expect(t, AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second)), r.Input(invariant.WindowToSettle), c.want)
	}
}

// An agent whose divergence no round told is no pass: kube-proxy's rules
// on worker1 were read only in rounds whose API reads failed, and the API
// only in rounds whose rule dumps failed.
func TestAgentHealthNeverDecidedIsNoPass(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 11; i++ {
		rd := r.Round(float64(i))
		if i < 2 {
			rd.Unreadable("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, "timeout: no answer within 5s").Value(
				"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")

		} else {
			rd.Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps("10.240.3.9"), "").Unreadable(
				"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.3, "timeout: no answer within 4s")

		}
	}
	r = withHealth(t, r, 200)
	expect(t, AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.InsufficientData,
		"no round told whether kube-proxy on worker1 diverged")
}
