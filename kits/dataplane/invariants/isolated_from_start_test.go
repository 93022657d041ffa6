package invariants

import (
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

func TestIsolatedFromStart(t *testing.T) {
	inv := IsolatedFromStart()

	// Rejected from its first connection on.
	expect(t, inv, newcomerRun(t, 8, 2, 2, 2, 0).Input(invariant.WindowToSettle), verdict.Preserved, "6 connection(s)", "the premise held")

	// One answered connection, at second 2, is enough: no bound.
	j := expect(t, inv, newcomerRun(t, 8, 2, 2, 3, 0).Input(invariant.WindowToSettle), verdict.Violated,
		newcomer+" → 10.240.4.9:8080 was answered by target", "apiserver/cp1 record it denied", "isolated for egress")
	if j.At.IsZero() || len(j.Sources) != 1 || j.Sources[0] != "newpod/worker1" {
		t.Errorf("the violation names its source and moment: %+v", j)
	}

	// The pod never got an address: nothing to judge.
	expect(t, inv, newcomerRun(t, 2, 1, 2, 2, 0).Input(invariant.WindowToSettle), verdict.InsufficientData, "no connection from a new pod")

	// A connection answered while the API records it allowed is not a
	// breach: the policy was not there yet.
	r := newcomerRun(t, 4, 2, 2, 3, 0)
	allowed := dataplane.PolicyExpectationValue{Pairs: []dataplane.PolicyPair{{From: newcomer, To: "faultline-agents/target", Target: toTarget, Allowed: true, FromNode: "worker1", FromIP: "10.244.1.77"}}}
	r.Snaps[2].Set("apiserver/cp1", dataplane.AgentPolicyExpected, mustValue(t, allowed, r.Snaps[2].Taken))
	expect(t, inv, r.Input(invariant.WindowToSettle), verdict.Preserved, "1 connection(s)")
}

// A new pod's connection that timed out is no proof it was refused.
func TestIsolatedFromStartATimeoutIsNoRefusal(t *testing.T) {
	r := newcomerRun(t, 6, 2, 2, 2, 0)
	for i := 2; i < 6; i++ {
		r.Snaps[i].Set("newpod/worker1", dataplane.AgentPolicyProbe, mustValue(t, dataplane.DialValue{From: newcomer, Target: toTarget, Error: "timeout"}, r.Snaps[i].Taken))
	}
	expect(t, IsolatedFromStart(), r.Input(invariant.WindowToSettle), verdict.InsufficientData)
}

const (
	newcomer     = "faultline-agents/newcomer"
	denyNewcomer = "faultline-agents/deny-newcomer-egress"
)

// newcomerRun: the deny is recorded throughout; the newcomer exists in
// the API from second created, has an address from second addressed, and
// its connections are read from then on, answered until second isolated.
// The policy agent on worker1 applies the deny to an existing pod (the
// witness) from second handled on.
func newcomerRun(t *testing.T, rounds int, created, addressed, isolated, handled float64) *run {
	r := newRun(t)
	for i := 0; i < rounds; i++ {
		s := float64(i)
		exp := dataplane.PolicyExpectationValue{Pairs: []dataplane.PolicyPair{}}
		if s >= created {
			p := dataplane.PolicyPair{From: newcomer, To: "faultline-agents/target", Target: toTarget, Allowed: false,
				Isolating: []string{denyNewcomer}, EgressDenying: []string{denyNewcomer}, Why: "faultline-agents/newcomer is isolated for egress", FromNode: "worker1", TargetNode: "worker1"}
			if s >= addressed {
				p.FromIP = "10.244.1.77"
			}
			exp.Pairs = append(exp.Pairs, p)
		}
		rd := r.Round(s).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, exp, "")
		rules := dataplane.PolicyRulesValue{Agent: "kube-router", Decided: dataplane.DecidedInKernel, Targets: []dataplane.PolicyTarget{}}
		if s >= handled {
			rules.Targets = append(rules.Targets, dataplane.PolicyTarget{PodIP: "10.244.1.66", Pod: "faultline-agents/witness",
				Egress: dataplane.PolicyDirection{Isolated: true, Policies: []dataplane.AppliedPolicy{{Name: denyNewcomer, Kind: "NetworkPolicy", Allow: []dataplane.PolicyAllow{}}}}})
		}
		rd.Value("policy-agent/worker1", dataplane.AgentPolicyRules, 0.2, rules, "")
		d := dataplane.DialValue{From: newcomer, Target: toTarget}
		switch {
		case s < addressed:
			rd.Unreadable("newpod/worker1", dataplane.AgentPolicyProbe, 0.4, "looking up the client pod: not found")
			continue
		case s < isolated:
			d.Connected, d.Status, d.Body = true, 200, "target"
		default:
			d.Error = "dial tcp 10.240.4.9:8080: connect: connection refused"
		}
		rd.Value("newpod/worker1", dataplane.AgentPolicyProbe, 0.4, d, "")
	}
	return r
}

// The guarantee has a premise: the agent had handled the denying policy
// before the pod started (the NetworkPolicy reference: a pod created
// before that "may be started unprotected"). Without the premise shown,
// an answered connection is no violation.
func TestIsolatedFromStartNeedsThePolicyHandledBeforeThePodStarted(t *testing.T) {
	inv := IsolatedFromStart()
	// The agent's rules show the deny only after the pod was created.
	expect(t, inv, newcomerRun(t, 8, 2, 3, 4, 3).Input(invariant.WindowToSettle), verdict.InsufficientData, "before", denyNewcomer)

	// Shown before: the answered connection is a violation, and the reason
	// says how soon after the pod's network came up it was first read.
	expect(t, inv, newcomerRun(t, 8, 2, 3, 4, 0).Input(invariant.WindowToSettle), verdict.Violated,
		"policy-agent/worker1", denyNewcomer, "was first recorded by apiserver/cp1", "not seen")
}

// A connection made (TCP connected, no HTTP answer in time) while the
// policy denies it got through the policy: it breaks the guarantee, it is
// not skipped as a lost path.
func TestIsolatedFromStartAConnectionMadeIsNotSkipped(t *testing.T) {
	r := newcomerRun(t, 8, 2, 2, 2, 0)
	r.Snaps[2].Set("newpod/worker1", dataplane.AgentPolicyProbe, mustValue(t, dataplane.DialValue{From: newcomer, Target: toTarget, Connected: true, Error: "timeout"}, r.Snaps[2].Taken))
	expect(t, IsolatedFromStart(), r.Input(invariant.WindowToSettle), verdict.Violated, "made (TCP connected; no answer: timeout)")
}

// A connection answered in a round whose API read timed out is no pass:
// the pod started at 2 and its first connection was answered in that
// round; the denial is recorded from the next round on, and every later
// connection is rejected. "Not even once" is not shown.
func TestIsolatedFromStartAnAnswerInAnUnjudgedRoundIsNoPass(t *testing.T) {
	r := newcomerRun(t, 8, 2, 2, 3, 0)
	r.Snaps[2].Set("apiserver/cp1", dataplane.AgentPolicyExpected, evidence.UnreadableAnswer("timeout: no answer within 5s", r.Snaps[2].Taken.Add(5*time.Second)))
	expect(t, IsolatedFromStart(), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "recorded nothing of the pair (apiserver/cp1: timeout")
}

// The premise is the denying policy itself, in its direction: the pair is
// isolated by deny-newcomer-egress (which denies) and by
// allow-target-ingress (the target's ingress policy, which admits the
// newcomer); the dump before the pod existed shows only the target's
// ingress policy, so the agent's handling of the denial is not shown.
func TestIsolatedFromStartPremiseNeedsTheDenyingPolicy(t *testing.T) {
	const allowTarget = "faultline-agents/allow-target-ingress"
	build := func(withDirection bool, applied dataplane.PolicyTarget) *run {
		r := newRun(t)
		for i := 0; i < 8; i++ {
			s := float64(i)
			exp := dataplane.PolicyExpectationValue{Pairs: []dataplane.PolicyPair{}}
			if s >= 2 {
				p := dataplane.PolicyPair{From: newcomer, To: "faultline-agents/target", Target: toTarget, Allowed: false,
					Isolating: []string{allowTarget, denyNewcomer}, Why: "faultline-agents/newcomer is isolated for egress",
					FromNode: "worker1", TargetNode: "worker1", FromIP: "10.244.1.77"}
				if withDirection {
					p.EgressDenying = []string{denyNewcomer}
				}
				exp.Pairs = append(exp.Pairs, p)
			}
			rd := r.Round(s).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, exp, "")
			rd.Value("policy-agent/worker1", dataplane.AgentPolicyRules, 0.2, dataplane.PolicyRulesValue{Agent: "kube-router", Decided: dataplane.DecidedInKernel,
				Targets: []dataplane.PolicyTarget{applied}}, "")

			if s < 2 {
				rd.Unreadable("newpod/worker1", dataplane.AgentPolicyProbe, 0.4, "looking up the client pod: not found")
				continue
			}
			rd.Value("newpod/worker1", dataplane.AgentPolicyProbe, 0.4, dataplane.DialValue{From: newcomer, Target: toTarget, Connected: true, Status: 200, Body: "target"}, "")
		}
		return r
	}
	targetIngress := dataplane.PolicyTarget{PodIP: "10.240.4.9", Pod: "faultline-agents/target",
		Ingress: dataplane.PolicyDirection{Isolated: true, Policies: []dataplane.AppliedPolicy{{Name: allowTarget, Kind: "NetworkPolicy", Allow: []dataplane.PolicyAllow{}}}}}
	// A record without the denying direction (written before it was
	// recorded) shows no premise either way.
	expect(t, IsolatedFromStart(), build(false, targetIngress).Input(invariant.WindowToSettle), verdict.InsufficientData, "premise was not shown")
	expect(t, IsolatedFromStart(), build(true, targetIngress).Input(invariant.WindowToSettle), verdict.InsufficientData, "premise was not shown", denyNewcomer+" (egress")
	// The denying policy applied, but to a pod's ingress: not its direction.
	wrongWay := dataplane.PolicyTarget{PodIP: "10.244.1.66", Pod: "faultline-agents/witness",
		Ingress: dataplane.PolicyDirection{Isolated: true, Policies: []dataplane.AppliedPolicy{{Name: denyNewcomer, Kind: "NetworkPolicy", Allow: []dataplane.PolicyAllow{}}}}}
	expect(t, IsolatedFromStart(), build(true, wrongWay).Input(invariant.WindowToSettle), verdict.InsufficientData, "premise was not shown")
	// Applied to an existing pod's egress: the premise holds.
	rightWay := wrongWay
	rightWay.Egress, rightWay.Ingress = wrongWay.Ingress, dataplane.PolicyDirection{}
	expect(t, IsolatedFromStart(), build(true, rightWay).Input(invariant.WindowToSettle), verdict.Violated, "which denies the connection, to faultline-agents/witness's egress")
}
