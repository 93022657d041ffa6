package invariants

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// IsolatedFromStartName names the isolated-from-start invariant.
const IsolatedFromStartName = "isolated-from-start"

// NewPodProbeReaders are the connections made from a pod that starts
// during the window ("newpod/<node>"), asked as agents/policy-probe.
const NewPodProbeReaders = "newpod/*"

// IsolatedFromStart: a pod that starts selected by a policy that denies
// its connection never makes that connection, not even once, not even in
// its first moments, once its node's policy agent has handled the policy.
//
// Reads: agents/policy-expected from every API server (what the recorded
// policies allow each pod's connection to the target, the policies that
// isolate it, its node and its address), agents/policy-probe from the new
// pod's node ("newpod/<node>": a new connection from the pod to the
// target, every round from the moment the pod has an address) and
// agents/policy-rules from that node's policy agent ("policy-agent/<node>").
//
// Premise: the NetworkPolicy reference says a pod created before the
// plugin has handled a policy "may be started unprotected", so the
// guarantee holds only for a pod created after the agent handled the
// denying policy. That is shown by the agent's rules, read before the pod
// existed (before the start of the last round whose API reads did not
// name it): the new pod's node's agent applied a policy that denies the
// new pod's egress to the target (one isolating it for egress, none
// admitting the connection) to an existing pod's egress, or the target's
// node's agent applied one that denies the target's ingress from it to an
// existing pod's ingress. A policy that isolates an end but admits the
// connection, or one applied in the other direction, shows nothing.
// Without the premise the verdict is INSUFFICIENT_DATA, never VIOLATED.
//
// Fires on the first round in which the new pod's connection was made
// (answered, or TCP connected with no answer in time: the SYN got through
// a policy that would have rejected it) while every API server that
// answered records it denied: no bound, since a connection that got
// through once has already carried its data. Rounds where an API server
// records it allowed (the policy on its way) or none answered do not
// count either way, nor does a connection that was neither made nor
// rejected (a timeout before connecting: a lost or slow path).
// INSUFFICIENT_DATA when no round read the new pod's connection with a
// denial recorded (the pod never started, or every probe failed), or when
// a connection was made in a round whose API reads recorded nothing of the
// pair (all failed, or none named it): it may have been denied then, so
// "not even once" is not shown.
//
// Resolution: the probe can ask only once the pod has an address and
// netexec in it listens, up to a tick later; a connection the pod makes
// before its first read is not seen. The reason says when its address was
// first recorded (its network was up by then) and when its first
// connection was read, so "from its first instant" is claimed only from
// there.
//
// Why: a plugin that programs a pod's isolation only after hearing of it
// leaves the pod's first connections open whenever it is slow or stopped.
// Kubernetes gives no way to hold a pod until its node isolates it.
//
// Exercised when a round read the new pod's connection while its denial
// was recorded; VIOLATED is always exercised.
func IsolatedFromStart() invariant.Invariant { return isolatedFromStart{} }

type isolatedFromStart struct{}

func (isolatedFromStart) Name() string         { return IsolatedFromStartName }
func (isolatedFromStart) Phase() verdict.Phase { return verdict.Safety }
func (isolatedFromStart) Reads() []invariant.Reading {
	return []invariant.Reading{
		{Sources: invariant.ConsistentReaders, Question: dataplane.AgentPolicyExpected},
		{Sources: NewPodProbeReaders, Question: dataplane.AgentPolicyProbe},
		{Sources: PolicyRuleReaders, Question: dataplane.AgentPolicyRules},
	}
}

// newPodStart is what the API's reads say of a new pod's start: the last
// round before it was named (it did not exist at some instant of that
// round), and when its address was first recorded.
type newPodStart struct {
	notYet    int // snapshot index, -1 when every read named it
	addressAt time.Time
	addressBy string
	address   string
	// egress and ingress are the policies that deny the pair in that
	// direction, with the node whose agent enforces it.
	egress, ingress  []string
	node, targetNode string
}

func (isolatedFromStart) Judge(in invariant.Input) verdict.Judgement {
	snaps := invariant.Ordered(in.Snapshots)
	exps, expGaps := invariant.Collect[dataplane.PolicyExpectationValue](snaps, invariant.ConsistentReaders, dataplane.AgentPolicyExpected)
	probes, probeGaps := invariant.Collect[dataplane.DialValue](snaps, NewPodProbeReaders, dataplane.AgentPolicyProbe)
	rulesObs, _ := invariant.Collect[dataplane.PolicyRulesValue](snaps, PolicyRuleReaders, dataplane.AgentPolicyRules)
	if len(exps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered what the policies allow: " + invariant.GapSummary(expGaps)}
	}
	if len(probes) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no connection from a new pod was read: " + invariant.GapSummary(probeGaps)}
	}
	// recorded[round][pair] → the outcomes servers gave, with who said so.
	recorded := map[int]map[pairKey]map[bool][]string{}
	why := map[pairKey]string{}
	starts := map[pairKey]*newPodStart{}
	named := map[int]map[pairKey]bool{}
	for _, o := range exps {
		if named[o.Snapshot] == nil {
			named[o.Snapshot] = map[pairKey]bool{}
		}
		for _, pr := range o.Value.Pairs {
			k := pairKey{pr.From, pr.Target}
			named[o.Snapshot][k] = true
			if recorded[o.Snapshot] == nil {
				recorded[o.Snapshot] = map[pairKey]map[bool][]string{}
			}
			if recorded[o.Snapshot][k] == nil {
				recorded[o.Snapshot][k] = map[bool][]string{}
			}
			recorded[o.Snapshot][k][pr.Allowed] = append(recorded[o.Snapshot][k][pr.Allowed], string(o.Source))
			if !pr.Allowed && pr.Why != "" {
				why[k] = pr.Why
			}
			st := starts[k]
			if st == nil {
				st = &newPodStart{notYet: -1}
				starts[k] = st
			}
			if pr.FromIP != "" && (st.addressAt.IsZero() || o.ReadAt.Before(st.addressAt)) {
				st.addressAt, st.addressBy, st.address = o.ReadAt, string(o.Source), pr.FromIP
			}
			if len(pr.EgressDenying) > 0 {
				st.egress = pr.EgressDenying
			}
			if len(pr.IngressDenying) > 0 {
				st.ingress = pr.IngressDenying
			}
			if pr.FromNode != "" {
				st.node = pr.FromNode
			}
			if pr.TargetNode != "" {
				st.targetNode = pr.TargetNode
			}
		}
	}
	for k, st := range starts {
		// The last round, before any that named the pair, in which a
		// readable read did not name it.
		for _, o := range exps {
			if named[o.Snapshot][k] {
				break
			}
			st.notYet = o.Snapshot
		}
	}
	sort.SliceStable(probes, func(i, j int) bool { return probes[i].Snapshot < probes[j].Snapshot })
	decided, refused := 0, 0
	var firstAt, lastAt string
	// unjudged: a connection made in a round no API read recorded the
	// pair in (every read failed or none named it): it may have been
	// denied, so it is no pass.
	var unjudged *invariant.Observation[dataplane.DialValue]
	for i, o := range probes {
		k := pairKey{o.Value.From, o.Value.Target}
		rec := recorded[o.Snapshot][k]
		if len(rec[false]) == 0 && len(rec[true]) == 0 && o.Value.Made() && unjudged == nil {
			unjudged = &probes[i]
		}
		if len(rec[false]) == 0 || len(rec[true]) > 0 {
			continue
		}
		if !o.Value.Made() && !o.Value.Rejected() {
			continue
		}
		premise, premiseWhy := handledBefore(starts[k], invariant.HostOf(o.Source), snaps, rulesObs)
		if !premise {
			return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: []string{string(o.Source)},
				Reason: fmt.Sprintf("%s → %s was read while recorded denied, but the premise was not shown: %s", k.from, k.target, premiseWhy)}
		}
		decided++
		if firstAt == "" {
			firstAt = invariant.Stamp(o.Taken)
		}
		lastAt = invariant.Stamp(o.Taken)
		if !o.Value.Made() {
			refused++
			continue
		}
		reason := fmt.Sprintf("%s → %s was %s at %s while %s record it denied", k.from, k.target, madeText(o.Value), invariant.Stamp(o.ReadAt), strings.Join(rec[false], ", "))
		if w := why[k]; w != "" {
			reason += " (" + w + ")"
		}
		reason += fmt.Sprintf("; read by %s, %d round(s) refused before it; the premise held: %s; %s", o.Source, refused, premiseWhy, firstReadText(starts[k], probes, k))
		return verdict.Judgement{Verdict: verdict.Violated, Reason: reason,
			Sources: []string{string(o.Source)}, At: o.Taken, Exercised: verdict.Exercised(),
			Exercise: "a new pod's connection was read while its denial was recorded"}
	}
	if decided == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("no round read a new pod's connection answered or rejected while every API server that answered recorded it denied (%d connection(s) read)", len(probes))}
	}
	if u := unjudged; u != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: []string{string(u.Source)}, At: u.Taken,
			Reason: fmt.Sprintf("%s → %s was %s at %s in a round whose API reads recorded nothing of the pair (%s), so whether it was denied then is not known; %d connection(s) read while recorded denied were rejected",
				u.Value.From, u.Value.Target, madeText(u.Value), invariant.Stamp(u.ReadAt), gapsIn(expGaps, u.Snapshot), decided)}
	}
	var k pairKey
	for _, o := range probes {
		k = pairKey{o.Value.From, o.Value.Target}
		break
	}
	_, premiseWhy := handledBefore(starts[k], invariant.HostOf(probes[0].Source), snaps, rulesObs)
	return verdict.Judgement{Verdict: verdict.Preserved, Exercised: verdict.Exercised(),
		Exercise: "a new pod's connection was read while its denial was recorded",
		Reason: fmt.Sprintf("every one of the new pod's %d connection(s) read while they were recorded denied was rejected, from %s to %s (resolution: one sampling interval; a connection between two rounds is not seen); the premise held: %s; %s",
			decided, firstAt, lastAt, premiseWhy, firstReadText(starts[k], probes, k))}
}

// handledBefore says whether a policy agent had handled a policy that
// denies the pair, in the direction it denies, before the pod existed: in
// a dump read before then, it applied one of the policies denying the new
// pod's egress to an existing pod's egress (the agent of the new pod's
// node: the API's record of it, else the probe's host), or one of the
// policies denying the target's ingress to an existing pod's ingress (the
// agent of the target's node), and how.
func handledBefore(st *newPodStart, probeHost string, snaps []evidence.Snapshot, rules []invariant.Observation[dataplane.PolicyRulesValue]) (bool, string) {
	if st == nil || (len(st.egress) == 0 && len(st.ingress) == 0) {
		return false, "no API server named a policy that denies the connection, with its direction"
	}
	if st.notYet < 0 {
		return false, "no readable API read before the pod existed, so no rule dump is known to predate it"
	}
	before := snaps[st.notYet].Taken
	node := st.node
	if node == "" {
		node = probeHost
	}
	type side struct {
		node     string
		policies []string
		dir      string
		of       func(dataplane.PolicyTarget) dataplane.PolicyDirection
	}
	sides := []side{
		{node, st.egress, "egress", func(t dataplane.PolicyTarget) dataplane.PolicyDirection { return t.Egress }},
		{st.targetNode, st.ingress, "ingress", func(t dataplane.PolicyTarget) dataplane.PolicyDirection { return t.Ingress }},
	}
	var wanted []string
	for _, sd := range sides {
		if len(sd.policies) == 0 || sd.node == "" {
			continue
		}
		src := evidence.Source("policy-agent/" + sd.node)
		wanted = append(wanted, fmt.Sprintf("%s (%s, by %s)", strings.Join(sd.policies, ", "), sd.dir, src))
		for _, o := range rules {
			if o.Source != src || o.ReadAt.After(before) {
				continue
			}
			for _, t := range o.Value.Targets {
				for _, name := range sd.of(t).Names() {
					if slices.Contains(sd.policies, name) {
						return true, fmt.Sprintf("%s applied %s, which denies the connection, to %s's %s in its rules read at %s, before the pod existed (not named by the API's reads of the round at %s)",
							src, name, firstOf(t.Pod, t.PodIP), sd.dir, invariant.Stamp(o.ReadAt), invariant.Stamp(before))
					}
				}
			}
		}
	}
	if len(wanted) == 0 {
		return false, "the node whose agent enforces the denial is not known"
	}
	return false, fmt.Sprintf("no rules read before the pod existed (before %s) applied a policy denying the connection in its direction: %s", invariant.Stamp(before), strings.Join(wanted, "; "))
}

// firstReadText says how soon after the pod's network came up its first
// connection was read.
func firstReadText(st *newPodStart, probes []invariant.Observation[dataplane.DialValue], k pairKey) string {
	var first *invariant.Observation[dataplane.DialValue]
	for i := range probes {
		if (pairKey{probes[i].Value.From, probes[i].Value.Target}) == k {
			first = &probes[i]
			break
		}
	}
	if first == nil {
		return "no connection of it was read"
	}
	if st == nil || st.addressAt.IsZero() {
		return fmt.Sprintf("its first connection was read at %s; when its network came up is not known (no API read recorded its address)", invariant.Stamp(first.ReadAt))
	}
	return fmt.Sprintf("its address (%s) was first recorded by %s at %s, so its network was up by then; its first connection was read at %s, %s later: a connection it made before that is not seen",
		st.address, st.addressBy, invariant.Stamp(st.addressAt), invariant.Stamp(first.ReadAt), first.ReadAt.Sub(st.addressAt).Round(time.Millisecond))
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// gapsIn says which reads of round i failed.
func gapsIn(gaps []invariant.Gap, i int) string {
	var out []string
	for _, g := range gaps {
		if g.Snapshot == i {
			out = append(out, fmt.Sprintf("%s: %s", g.Source, g.Reason))
		}
	}
	if len(out) == 0 {
		return "no read named it"
	}
	return strings.Join(out, "; ")
}
