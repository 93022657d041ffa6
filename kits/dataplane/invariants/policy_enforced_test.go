package invariants

import (
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

const (
	fromW2   = "faultline-agents/client-worker2"
	toTarget = "10.240.4.9:8080"
)

func expectPair(allowed bool) dataplane.PolicyExpectationValue {
	p := dataplane.PolicyPair{From: fromW2, To: "faultline-agents/target", Target: toTarget, Allowed: allowed}
	if !allowed {
		p.Isolating, p.Why = []string{"faultline-agents/deny"}, "faultline-agents/target is isolated for ingress"
	}
	return dataplane.PolicyExpectationValue{Pairs: []dataplane.PolicyPair{p}}
}

func answered() dataplane.DialValue {
	return dataplane.DialValue{From: fromW2, Target: toTarget, Connected: true, Status: 200, Body: "target"}
}

func refusedDial() dataplane.DialValue {
	return dataplane.DialValue{From: fromW2, Target: toTarget, Error: "dial tcp 10.240.4.9:8080: connect: connection refused"}
}

// policyRun: a deny policy recorded from second 3; the node enforces it
// from second enforced.
func policyRun(t *testing.T, rounds int, enforced float64, probe func(i int, d dataplane.DialValue) (dataplane.DialValue, bool)) *run {
	r := newRun(t)
	for i := 0; i < rounds; i++ {
		s := float64(i)
		rd := r.Round(s).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, expectPair(s < 3), "")
		d := answered()
		if s >= enforced {
			d = refusedDial()
		}
		if probe != nil {
			var ok bool
			if d, ok = probe(i, d); !ok {
				rd.Unreadable("pod/worker2", dataplane.AgentPolicyProbe, 0.4, "timeout: no answer within 4s")
				continue
			}
		}
		rd.Value("pod/worker2", dataplane.AgentPolicyProbe, 0.4, d, "")
	}
	return r
}

func TestPolicyEnforced(t *testing.T) {
	inv := PolicyEnforced(testBound(3 * time.Second))
	j := expect(t, inv, policyRun(t, 10, 4, nil).Input(invariant.WindowToSettle), verdict.Preserved, "matched the outcome each API server recorded", "bound 3s")
	if j.Exercised == nil || !*j.Exercised {
		t.Errorf("a recorded change exercises it: %+v", j)
	}
	expect(t, inv, policyRun(t, 12, 10, nil).Input(invariant.WindowToSettle), verdict.Violated,
		fromW2+" → "+toTarget+" was answered by target while apiserver/cp1 records it denied", "isolated for ingress", "bound 3s")

	// The rule dump of the target's node is the cross-check.
	r0 := policyRun(t, 12, 10, nil)
	for i := range r0.Snaps {
		a, err := evidence.ValueAnswer(dataplane.PolicyRulesValue{Agent: "kube-router", Decided: dataplane.DecidedInKernel, Targets: []dataplane.PolicyTarget{}}, r0.Snaps[i].Taken.Add(300*time.Millisecond), "")
		if err != nil {
			t.Fatal(err)
		}
		r0.Snaps[i].Set("policy-agent/worker1", dataplane.AgentPolicyRules, a)
	}
	expect(t, inv, r0.Input(invariant.WindowToSettle), verdict.Violated, "no policy agent read (policy-agent/worker1) firewalls it")

	// A refused connection while allowed is broken too (before the policy).
	r := newRun(t)
	for i := 0; i < 8; i++ {
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, expectPair(true), "").Value(
			"pod/worker2", dataplane.AgentPolicyProbe, 0.4, refusedDial(), "")

	}
	expect(t, inv, r.Input(invariant.WindowToSettle), verdict.Violated, "was refused", "records it allowed")

	// A failure that is no policy's answer never decides.
	r = newRun(t)
	for i := 0; i < 8; i++ {
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, expectPair(false), "").Value(
			"pod/worker2", dataplane.AgentPolicyProbe, 0.4, dataplane.DialValue{From: fromW2, Target: toTarget, Error: "dial tcp: connect: no route to host"}, "")

	}
	expect(t, inv, r.Input(invariant.WindowToSettle), verdict.InsufficientData, "no round decided")

	// Stale, then the probes unreadable past the bound: cannot tell.
	expect(t, inv, policyRun(t, 12, 100, func(i int, d dataplane.DialValue) (dataplane.DialValue, bool) { return d, i < 4 }).Input(invariant.WindowToSettle),
		verdict.InsufficientData, "could not be shown to have the outcome apiserver/cp1 records")
}

// Every probe after the change unreadable: nothing shows the deny was
// enforced.
func TestPolicyEnforcedNeedsReadableProbesAfterAChange(t *testing.T) {
	expect(t, PolicyEnforced(testBound(3*time.Second)), policyRun(t, 12, 3, func(i int, d dataplane.DialValue) (dataplane.DialValue, bool) { return d, i < 3 }).Input(invariant.WindowToSettle),
		verdict.InsufficientData, fromW2, "could not be read")
}

// A pair no probe read is not what exercised the invariant.
func TestPolicyEnforcedIsExercisedOnlyByAProbedPair(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 8; i++ {
		exp := expectPair(true)
		other := dataplane.PolicyPair{From: "faultline-agents/newcomer", To: "faultline-agents/target", Target: toTarget, Allowed: i < 3}
		exp.Pairs = append(exp.Pairs, other)
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, exp, "").Value(
			"pod/worker2", dataplane.AgentPolicyProbe, 0.4, answered(), "")

	}
	j := expect(t, PolicyEnforced(testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.Preserved)
	if j.Exercised == nil || *j.Exercised {
		t.Errorf("only an unprobed pair's recorded outcome changed, yet it is exercised: %s", j.Exercise)
	}
}

func timedOutDial() dataplane.DialValue {
	return dataplane.DialValue{From: fromW2, Target: toTarget, Error: "timeout"}
}

// A connection that timed out was lost or slow on its way: the lab's
// policy agent denies with a reject, so a timeout is no policy's answer
// either way.
func TestPolicyEnforcedATimeoutIsNoRefusal(t *testing.T) {
	inv := PolicyEnforced(testBound(3 * time.Second))
	// Allowed throughout, every connection timing out: not a refusal of an
	// allowed connection, and nothing decided.
	r := newRun(t)
	for i := 0; i < 8; i++ {
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, expectPair(true), "").Value(
			"pod/worker2", dataplane.AgentPolicyProbe, 0.4, timedOutDial(), "")

	}
	expect(t, inv, r.Input(invariant.WindowToSettle), verdict.InsufficientData, "no round decided")

	// Denied from second 3, every connection after it timing out: no
	// evidence the denial holds.
	expect(t, inv, policyRun(t, 12, 3, func(i int, d dataplane.DialValue) (dataplane.DialValue, bool) {
		if i >= 3 {
			return timedOutDial(), true
		}
		return d, true
	}).Input(

		invariant.WindowToSettle),

		verdict.InsufficientData, "failed otherwise than a policy refuses")
}

// A denied pair whose connections are made (TCP connected: the agent's
// REJECT would have refused the SYN) and then not answered in time, for
// 9 s past a 3 s bound, is not enforced: VIOLATED, not unknown.
func TestPolicyEnforcedAConnectionMadeWhileDeniedBreaks(t *testing.T) {
	in := policyRun(t, 12, 100, func(i int, d dataplane.DialValue) (dataplane.DialValue, bool) {
		if i >= 3 {
			return dataplane.DialValue{From: fromW2, Target: toTarget, Connected: true, Error: "timeout"}, true
		}
		return d, true
	}).Input(

		invariant.WindowToSettle)

	expect(t, PolicyEnforced(testBound(3*time.Second)), in, verdict.Violated, "made (TCP connected; no answer: timeout)")
}

// A pair still not following a change when the evidence ends, within the
// bound, is not shown to follow it: the deny is recorded from 3, the
// connections are answered at 3 and 4, the last round.
func TestPolicyEnforcedAChangeAtTheEndIsNotCovered(t *testing.T) {
	expect(t, PolicyEnforced(testBound(3*time.Second)), policyRun(t, 5, 100, nil).Input(invariant.WindowToSettle), verdict.InsufficientData, "not covered by later reads")
}
