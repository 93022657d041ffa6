package invariant

import (
	"fmt"
	"sort"
	"strings"

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
// its first moments.
//
// Reads: agents/policy-expected from every API server (what the recorded
// policies allow each pod's connection to the target) and
// agents/policy-probe from the new pod's node ("newpod/<node>": a new
// connection from the pod to the target, every round from the moment the
// pod has an address).
//
// Fires on the first round in which the new pod's connection was answered
// while every API server that answered records it denied: no bound, since
// a connection that got through once has already carried its data.
// Rounds where an API server records it allowed (the policy on its way)
// or none answered do not count either way, nor does a connection that
// neither was answered nor was rejected (a timeout: a lost or slow path). INSUFFICIENT_DATA when no
// round read the new pod's connection with a denial recorded (the pod
// never started, or every probe failed).
//
// Why: the NetworkPolicy API's reference says a pod created before the
// plugin has handled a policy may start unprotected; a plugin that
// programs a pod's isolation only after hearing of it leaves the pod's
// first connections open whenever it is slow or stopped. Kubernetes gives
// no way to hold a pod until its node isolates it.
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
	}
}

func (isolatedFromStart) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	exps, expGaps := collect[evidence.PolicyExpectationValue](snaps, consistentReaders, evidence.AgentPolicyExpected)
	probes, probeGaps := collect[evidence.DialValue](snaps, NewPodProbeReaders, evidence.AgentPolicyProbe)
	if len(exps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered what the policies allow: " + gapSummary(expGaps)}
	}
	if len(probes) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no connection from a new pod was read: " + gapSummary(probeGaps)}
	}
	// recorded[round][pair] → the outcomes servers gave, with who said so.
	recorded := map[int]map[pairKey]map[bool][]string{}
	why := map[pairKey]string{}
	for _, o := range exps {
		for _, pr := range o.Value.Pairs {
			k := pairKey{pr.From, pr.Target}
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
		return verdict.Judgement{Verdict: verdict.Violated, Reason: reason + fmt.Sprintf("; read by %s, %d round(s) refused before it", o.Source, refused),
			Sources: []string{string(o.Source)}, At: o.Taken, Exercised: verdict.Exercised(),
			Exercise: "a new pod's connection was read while its denial was recorded"}
	}
	if decided == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("no round read a new pod's connection while every API server that answered recorded it denied (%d connection(s) read)", len(probes))}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Exercised: verdict.Exercised(),
		Exercise: "a new pod's connection was read while its denial was recorded",
		Reason:   fmt.Sprintf("every one of the new pod's %d connection(s) read while they were recorded denied was refused, from %s to %s (resolution: one sampling interval; a connection between two rounds is not seen)", decided, firstAt, lastAt)}
}
