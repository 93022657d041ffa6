package invariants

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// PolicyEnforcedName names the policy-enforced invariant.
const PolicyEnforcedName = "policy-enforced"

// PolicyEnforced: a new connection between pods has the outcome the
// NetworkPolicies the API records give it, within the bound of a change.
//
// Reads: agents/policy-expected from every API server ("apiserver/*":
// for each client pod and the target pod, whether the recorded policies,
// pods and namespaces allow the connection) and agents/policy-probe from
// the client pod on each node ("pod/<node>": a new connection to the
// target pod's address each round).
//
// Each pair (a client pod → the target's address, as one of the readers
// dialled it) is judged round by round against each API server's record
// of whether the policies allow it, by name (record_marks.go):
//   - holding against a server when the connection's outcome (made:
//     answered, or TCP connected with no answer in time; or refused: a
//     REJECT's "connection refused", how the lab's agent denies) is what
//     that server records;
//   - broken when it is not: a denied connection that was made, or an
//     allowed one that was refused;
//   - unknown when the probe could not be read or failed otherwise (a
//     timeout before connecting: a lost or slow path as well as a
//     dropping policy; no route), the server gave no record, or the
//     servers that answered recorded different outcomes.
//
// Fires when a pair stayed broken against one server through a stretch
// proven longer than the bound. INSUFFICIENT_DATA when, after a server's
// record changed or the pair was seen not to follow it, unknown rounds
// against that server outlasted the bound before a round showed the
// pair following it (readable coverage after each change); when the
// evidence ended before a round showed a pair following a change (broken
// or suspect rounds through the last one); when a pair was never judged
// against any record; or when no pair was.
//
// Why: the policy agent watches NetworkPolicies, pods and namespaces and
// reprograms its node's filter when they change; until it does, the node
// enforces the old policies. Nothing in Kubernetes checks that a node
// enforces what was recorded, and the agent's health says only that it
// runs. An allowed connection refused can also be a network fault; the
// scenarios that cut the network say so beside this verdict.
//
// Exercised when a server's record of some probed pair changed during the
// input (a pair no reader dialled is not this judgement's); a PRESERVED
// where none changed is not exercised.
func PolicyEnforced(bound invariant.Bound) invariant.Invariant { return policyEnforced{bound: bound} }

type policyEnforced struct{ bound invariant.Bound }

func (policyEnforced) Name() string           { return PolicyEnforcedName }
func (policyEnforced) Phase() verdict.Phase   { return verdict.Safety }
func (p policyEnforced) Bound() time.Duration { return p.bound.Limit }
func (policyEnforced) Reads() []invariant.Reading {
	return []invariant.Reading{
		{Sources: invariant.ConsistentReaders, Question: dataplane.AgentPolicyExpected},
		{Sources: PodProbeReaders, Question: dataplane.AgentPolicyProbe},
		{Sources: PolicyRuleReaders, Question: dataplane.AgentPolicyRules},
	}
}

// PolicyRuleReaders are the nodes' policy agents' rules
// ("policy-agent/<node>"), shown as the cross-check.
const PolicyRuleReaders = "policy-agent/*"

// rulesText says what the nodes' policy agents applied to the pod at ip
// in round i: the cross-check of a broken round.
func rulesText(rules map[int]map[evidence.Source]invariant.Observation[dataplane.PolicyRulesValue], i int, ip string) string {
	var out []string
	srcs := make([]string, 0, len(rules[i]))
	for src := range rules[i] {
		srcs = append(srcs, string(src))
	}
	sort.Strings(srcs)
	for _, src := range srcs {
		o := rules[i][evidence.Source(src)]
		if t, ok := o.Value.Target(ip); ok {
			names := t.Ingress.Names()
			out = append(out, fmt.Sprintf("%s applies ingress isolated=%v with %s to it", src, t.Ingress.Isolated, setText(names)))
		}
	}
	if len(out) == 0 && len(srcs) > 0 {
		return "no policy agent read (" + strings.Join(srcs, ", ") + ") firewalls it"
	}
	return strings.Join(out, "; ")
}

func allowText(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

// pairKey is one connection: a client pod and the address it dials.
type pairKey struct{ from, target string }

// policyMarkSet is policy-enforced's marks: per pair a client's node
// probed, the pair's marks against each API server's record (see
// record_marks.go), in pair order; whether a probed pair's recorded
// outcome changed; and the node whose policy agent must enforce each
// pair: the node the API records the target on (its agent filters the
// target's ingress), whether or not that agent ever programmed the
// target; for evidence that does not say, the node whose rule dump
// firewalls the target.
type policyMarkSet struct {
	pairs   []subjectMarks
	keys    []pairKey
	changed bool
	nodeOf  map[pairKey]string
}

func pairName(k pairKey) string { return k.from + " → " + k.target }

// policyMarks are policy-enforced's marks over snaps (in order); a
// non-empty why means there is nothing to judge.
func policyMarks(snaps []evidence.Snapshot) (pm policyMarkSet, why string) {
	exps, expGaps := invariant.Collect[dataplane.PolicyExpectationValue](snaps, invariant.ConsistentReaders, dataplane.AgentPolicyExpected)
	probes, probeGaps := invariant.Collect[dataplane.DialValue](snaps, PodProbeReaders, dataplane.AgentPolicyProbe)
	rulesObs, _ := invariant.Collect[dataplane.PolicyRulesValue](snaps, PolicyRuleReaders, dataplane.AgentPolicyRules)
	rules := invariant.BySnapshotAndSource(rulesObs)
	if len(exps) == 0 {
		return pm, "no API server answered what the policies allow: " + invariant.GapSummary(expGaps)
	}
	if len(probes) == 0 {
		return pm, "no client pod's connection was read: " + invariant.GapSummary(probeGaps)
	}
	// records[round][pair][server] is the outcome the server records.
	records := make([]map[pairKey]map[string]serverRecord, len(snaps))
	for i := range records {
		records[i] = map[pairKey]map[string]serverRecord{}
	}
	denyWhy := map[pairKey]string{}
	targetNode := map[pairKey]string{}
	for _, o := range exps {
		for _, pr := range o.Value.Pairs {
			k := pairKey{pr.From, pr.Target}
			if pr.TargetNode != "" {
				targetNode[k] = pr.TargetNode
			}
			if records[o.Snapshot][k] == nil {
				records[o.Snapshot][k] = map[string]serverRecord{}
			}
			records[o.Snapshot][k][string(o.Source)] = serverRecord{Value: allowText(pr.Allowed), ReadAt: o.ReadAt}
			if !pr.Allowed && pr.Why != "" {
				denyWhy[k] = pr.Why
			}
		}
	}
	// A pair is the judgement's when one of its readers dialled it; a pair
	// the API names and no reader here dialled (a pod another invariant's
	// probe speaks for) is not.
	probeAt := map[int]map[pairKey]invariant.Observation[dataplane.DialValue]{}
	prober := map[pairKey]evidence.Source{}
	var keys []pairKey
	for _, o := range probes {
		if probeAt[o.Snapshot] == nil {
			probeAt[o.Snapshot] = map[pairKey]invariant.Observation[dataplane.DialValue]{}
		}
		k := pairKey{o.Value.From, o.Value.Target}
		probeAt[o.Snapshot][k] = o
		if _, ok := prober[k]; !ok {
			prober[k] = o.Source
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].from+keys[i].target < keys[j].from+keys[j].target })
	probeFailed := map[int]map[evidence.Source]invariant.Gap{}
	for _, g := range probeGaps {
		if probeFailed[g.Snapshot] == nil {
			probeFailed[g.Snapshot] = map[evidence.Source]invariant.Gap{}
		}
		probeFailed[g.Snapshot][g.Source] = g
	}

	pm = policyMarkSet{keys: keys, nodeOf: map[pairKey]string{}}
	for _, k := range keys {
		host, _, _ := net.SplitHostPort(k.target)
		rounds := make([]recordRound, len(snaps))
		for i, snap := range snaps {
			r := recordRound{Taken: snap.Taken, Records: records[i][k]}
			o, probed := probeAt[i][k]
			switch {
			case probed && !o.Value.Made() && !o.Value.Rejected():
				r.Unread = fmt.Sprintf("%s's connection to %s failed otherwise than a policy refuses (%s)", o.Source, k.target, o.Value.Error)
			case probed:
				r.Applied, r.AppliedAt = allowText(o.Value.Made()), o.ReadAt
			default:
				if g, failed := probeFailed[i][prober[k]]; failed {
					r.Unread = fmt.Sprintf("the probe could not be read: %s (%s)", g.Reason, g.Source)
				} else {
					r.Unread = fmt.Sprintf("%s did not dial %s in this round", prober[k], k.target)
				}
			}
			rounds[i] = r
		}
		sm := againstServers(pairName(k), rounds, func(r recordRound, server string, rec serverRecord) string {
			if r.Applied == rec.Value {
				return ""
			}
			var o invariant.Observation[dataplane.DialValue]
			i := 0
			for j, snap := range snaps {
				if snap.Taken.Equal(r.Taken) {
					o, i = probeAt[j][k], j
				}
			}
			outcome := madeText(o.Value)
			detail := fmt.Sprintf("%s → %s was %s while %s records it %s", k.from, k.target, outcome, server, rec.Value)
			if w := denyWhy[k]; o.Value.Made() && w != "" {
				detail += " (" + w + ")"
			}
			if rt := rulesText(rules, i, host); rt != "" {
				detail += "; " + rt
			}
			return detail
		})
		pm.changed = pm.changed || sm.Changed
		pm.pairs = append(pm.pairs, sm)
		if n, ok := targetNode[k]; ok {
			pm.nodeOf[k] = n
			continue
		}
		for _, o := range rulesObs {
			if _, ok := o.Value.Target(host); ok {
				pm.nodeOf[k] = invariant.HostOf(o.Source)
				break
			}
		}
	}
	return pm, ""
}

func (p policyEnforced) Judge(in invariant.Input) verdict.Judgement {
	pm, why := policyMarks(invariant.Ordered(in.Snapshots))
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	if none := undecided(pm.pairs); len(none) == len(pm.pairs) {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no round decided a pair: every connection was unreadable or failed otherwise than a policy refuses, or the API servers gave no one record"}
	}
	exercise := "no probed pair's recorded outcome changed"
	if pm.changed {
		exercise = "a probed pair's recorded outcome changed, so the policy agent had to reprogram"
	}
	v, u, open := judgeSubjects(pm.pairs, p.bound.Limit, invariant.MissedTicks(in))
	if v != nil {
		w := v.s
		return verdict.Judgement{
			Verdict: verdict.Violated,
			Reason: fmt.Sprintf("connections %s had another outcome than the policies %s records give them for at least %s, from %s to %s (bound %s); at its start: %s",
				v.subject, v.server, w.Lasted().Round(time.Millisecond), invariant.Stamp(w.First.ReadAt), invariant.Stamp(w.Last.Taken), p.bound, w.First.Detail),
			Sources: []string{"pod/*", v.server}, At: w.Last.Taken, Exercised: verdict.Exercised(), Exercise: exercise,
		}
	}
	if u != nil {
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("connections %s could not be shown to have the outcome %s records from %s to %s (%s, over the bound %s); %s; last: %s",
				u.subject, u.server, invariant.Stamp(u.s.First.ReadAt), invariant.Stamp(u.s.Last.Taken), u.s.Lasted().Round(time.Millisecond), p.bound.Limit, invariant.Untold(u.marks, u.s), u.s.Last.Detail),
			Sources: []string{"pod/*", u.server}, At: u.s.Last.Taken,
		}
	}
	if none := undecided(pm.pairs); len(none) > 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("connections %s never read in a round that had one API server record to judge them by", strings.Join(none, ", "))}
	}
	if open != nil {
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("connections %s were not shown to have the outcome %s records by the end of the evidence: from %s to the last round at %s no round showed it (the change is not covered by later reads); at its start: %s",
				open.subject, open.server, invariant.Stamp(open.s.First.ReadAt), invariant.Stamp(open.s.Last.Taken), open.s.First.Detail),
			Sources: []string{"pod/*", open.server}, At: open.s.Last.Taken,
		}
	}
	reason := fmt.Sprintf("every probed pair's connections (%d pairs) matched the outcome each API server recorded, within the bound %s, every change followed by readable rounds", len(pm.pairs), p.bound.Limit)
	if longest, of := longestProven(pm.pairs); longest > 0 {
		reason += fmt.Sprintf("; the longest proven difference was %s (%s)", longest.Round(time.Millisecond), of)
	} else if pm.changed {
		reason += "; no round caught a connection differing after a change (resolution: one sampling interval)"
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: []string{"pod/*"}, Exercise: exercise}
	if pm.changed {
		j.Exercised = verdict.Exercised()
	} else {
		j.Exercised = verdict.NotExercised()
	}
	return j
}

// policyMarksByNode are policy-enforced's pairs by the node whose policy
// agent must enforce them (policyMarkSet.nodeOf).
func policyMarksByNode(snaps []evidence.Snapshot) map[string][]subjectMarks {
	pm, why := policyMarks(snaps)
	if why != "" {
		return nil
	}
	out := map[string][]subjectMarks{}
	for i, k := range pm.keys {
		if n, ok := pm.nodeOf[k]; ok {
			out[n] = append(out[n], pm.pairs[i])
		}
	}
	return out
}

// madeText says what came of a connection that got through or was
// refused.
func madeText(d dataplane.DialValue) string {
	switch {
	case d.Answered():
		return "answered by " + d.Body
	case d.Made():
		return fmt.Sprintf("made (TCP connected; no answer: %s)", d.Error)
	}
	return "refused (" + d.Error + ")"
}
