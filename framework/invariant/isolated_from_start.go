package invariant

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

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
// guarantee holds only for a pod created after its node's agent handled
// the denying policy. That is shown by the agent's rules: a dump of the
// new pod's node, read before the pod existed (before the start of the
// last round whose API reads did not name it), that applies one of the
// policies isolating the pair to an existing pod. Without it the verdict
// is INSUFFICIENT_DATA, never VIOLATED.
//
// Fires on the first round in which the new pod's connection was answered
// while every API server that answered records it denied: no bound, since
// a connection that got through once has already carried its data.
// Rounds where an API server records it allowed (the policy on its way)
// or none answered do not count either way, nor does a connection that
// neither was answered nor was rejected (a timeout: a lost or slow path).
// INSUFFICIENT_DATA when no round read the new pod's connection with a
// denial recorded (the pod never started, or every probe failed).
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
func IsolatedFromStart() Invariant { return isolatedFromStart{} }

type isolatedFromStart struct{}

func (isolatedFromStart) Name() string         { return IsolatedFromStartName }
func (isolatedFromStart) Phase() verdict.Phase { return verdict.Safety }
func (isolatedFromStart) Reads() []Reading {
	return []Reading{
		{Sources: consistentReaders, Question: evidence.AgentPolicyExpected},
		{Sources: NewPodProbeReaders, Question: evidence.AgentPolicyProbe},
		{Sources: PolicyRuleReaders, Question: evidence.AgentPolicyRules},
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
	isolating []string
	node      string
}

func (isolatedFromStart) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	exps, expGaps := collect[evidence.PolicyExpectationValue](snaps, consistentReaders, evidence.AgentPolicyExpected)
	probes, probeGaps := collect[evidence.DialValue](snaps, NewPodProbeReaders, evidence.AgentPolicyProbe)
	rulesObs, _ := collect[evidence.PolicyRulesValue](snaps, PolicyRuleReaders, evidence.AgentPolicyRules)
	if len(exps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered what the policies allow: " + gapSummary(expGaps)}
	}
	if len(probes) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no connection from a new pod was read: " + gapSummary(probeGaps)}
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
			if len(pr.Isolating) > 0 {
				st.isolating = pr.Isolating
			}
			if pr.FromNode != "" {
				st.node = pr.FromNode
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
	for _, o := range probes {
		k := pairKey{o.Value.From, o.Value.Target}
		rec := recorded[o.Snapshot][k]
		if len(rec[false]) == 0 || len(rec[true]) > 0 {
			continue
		}
		if !o.Value.Answered() && !o.Value.Rejected() {
			continue
		}
		premise, premiseWhy := handledBefore(starts[k], hostOf(o.Source), snaps, rulesObs)
		if !premise {
			return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: []string{string(o.Source)},
				Reason: fmt.Sprintf("%s → %s was read while recorded denied, but the premise was not shown: %s", k.from, k.target, premiseWhy)}
		}
		decided++
		if firstAt == "" {
			firstAt = stamp(o.Taken)
		}
		lastAt = stamp(o.Taken)
		if !o.Value.Answered() {
			refused++
			continue
		}
		reason := fmt.Sprintf("%s → %s was answered by %s at %s while %s record it denied", k.from, k.target, o.Value.Body, stamp(o.ReadAt), strings.Join(rec[false], ", "))
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
	var k pairKey
	for _, o := range probes {
		k = pairKey{o.Value.From, o.Value.Target}
		break
	}
	_, premiseWhy := handledBefore(starts[k], hostOf(probes[0].Source), snaps, rulesObs)
	return verdict.Judgement{Verdict: verdict.Preserved, Exercised: verdict.Exercised(),
		Exercise: "a new pod's connection was read while its denial was recorded",
		Reason: fmt.Sprintf("every one of the new pod's %d connection(s) read while they were recorded denied was rejected, from %s to %s (resolution: one sampling interval; a connection between two rounds is not seen); the premise held: %s; %s",
			decided, firstAt, lastAt, premiseWhy, firstReadText(starts[k], probes, k))}
}

// handledBefore says whether the policy agent of the new pod's node
// (the API's record of it, else the probe's host) had applied one of the
// policies isolating the pair to an existing pod in a dump read before the
// pod existed, and how.
func handledBefore(st *newPodStart, probeHost string, snaps []evidence.Snapshot, rules []observation[evidence.PolicyRulesValue]) (bool, string) {
	if st == nil || len(st.isolating) == 0 {
		return false, "no API server named the policies that isolate it"
	}
	node := st.node
	if node == "" {
		node = probeHost
	}
	src := evidence.Source("policy-agent/" + node)
	if st.notYet < 0 {
		return false, fmt.Sprintf("no readable API read before the pod existed, so no rule dump of %s is known to predate it", src)
	}
	before := snaps[st.notYet].Taken
	for _, o := range rules {
		if o.Source != src || o.ReadAt.After(before) {
			continue
		}
		for _, t := range o.Value.Targets {
			for _, dir := range []evidence.PolicyDirection{t.Egress, t.Ingress} {
				for _, name := range dir.Names() {
					if slices.Contains(st.isolating, name) {
						return true, fmt.Sprintf("%s applied %s to %s in its rules read at %s, before the pod existed (not named by the API's reads of the round at %s)",
							src, name, firstOf(t.Pod, t.PodIP), stamp(o.ReadAt), stamp(before))
					}
				}
			}
		}
	}
	return false, fmt.Sprintf("no rules of %s read before the pod existed (before %s) applied %s to any pod", src, stamp(before), strings.Join(st.isolating, ", "))
}

// firstReadText says how soon after the pod's network came up its first
// connection was read.
func firstReadText(st *newPodStart, probes []observation[evidence.DialValue], k pairKey) string {
	var first *observation[evidence.DialValue]
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
		return fmt.Sprintf("its first connection was read at %s; when its network came up is not known (no API read recorded its address)", stamp(first.ReadAt))
	}
	return fmt.Sprintf("its address (%s) was first recorded by %s at %s, so its network was up by then; its first connection was read at %s, %s later: a connection it made before that is not seen",
		st.address, st.addressBy, stamp(st.addressAt), stamp(first.ReadAt), first.ReadAt.Sub(st.addressAt).Round(time.Millisecond))
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
