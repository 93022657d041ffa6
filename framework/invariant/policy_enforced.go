package invariant

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

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
// Each round leaves a mark per pair (client pod → target address):
//   - holding when the connection's outcome (answered, or refused: a
//     REJECT's "connection refused" or a dropped SYN's timeout) is what
//     one of the API servers' expectations in that round says (a round
//     spans a change: any server's counts);
//   - broken when it is what none of them says: a denied connection that
//     was answered, or an allowed one that was refused;
//   - unknown when the probe could not be read or failed otherwise (no
//     route: not a policy's answer), or no API server's expectation names
//     the pair.
//
// Fires when a pair stayed broken through a stretch proven longer than
// the bound. INSUFFICIENT_DATA when broken-or-unknown rounds after a
// broken one outlasted the bound, or no pair was ever decided.
//
// Why: the policy agent watches NetworkPolicies, pods and namespaces and
// reprograms its node's filter when they change; until it does, the node
// enforces the old policies. Nothing in Kubernetes checks that a node
// enforces what was recorded, and the agent's health says only that it
// runs. An allowed connection refused can also be a network fault; the
// scenarios that cut the network say so beside this verdict.
//
// Exercised when the expectation of some pair changed during the input;
// a PRESERVED where none changed is not exercised.
func PolicyEnforced(bound time.Duration) Invariant { return policyEnforced{bound: bound} }

type policyEnforced struct{ bound time.Duration }

func (policyEnforced) Name() string           { return PolicyEnforcedName }
func (policyEnforced) Phase() verdict.Phase   { return verdict.Safety }
func (p policyEnforced) Bound() time.Duration { return p.bound }
func (policyEnforced) Reads() []Reading {
	return []Reading{
		{Sources: consistentReaders, Question: evidence.AgentPolicyExpected},
		{Sources: PodProbeReaders, Question: evidence.AgentPolicyProbe},
		{Sources: PolicyRuleReaders, Question: evidence.AgentPolicyRules},
	}
}

// PolicyRuleReaders are the nodes' policy agents' rules
// ("policy-agent/<node>"), shown as the cross-check.
const PolicyRuleReaders = "policy-agent/*"

// rulesText says what the nodes' policy agents applied to the pod at ip
// in round i: the cross-check of a broken round.
func rulesText(rules map[int]map[evidence.Source]observation[evidence.PolicyRulesValue], i int, ip string) string {
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

// policyMarkSet is policy-enforced's marks per pair, the pairs in order,
// whether a recorded outcome changed, how many rounds decided a pair, and
// the node whose policy agent firewalls each pair's target (from its rule
// dumps; absent when no dump names it).
type policyMarkSet struct {
	marks   map[pairKey][]mark
	keys    []pairKey
	changed bool
	decided int
	nodeOf  map[pairKey]string
}

// policyMarks are policy-enforced's marks over snaps (in order); a
// non-empty why means there is nothing to judge.
func policyMarks(snaps []evidence.Snapshot) (pm policyMarkSet, why string) {
	exps, expGaps := collect[evidence.PolicyExpectationValue](snaps, consistentReaders, evidence.AgentPolicyExpected)
	probes, probeGaps := collect[evidence.DialValue](snaps, PodProbeReaders, evidence.AgentPolicyProbe)
	rulesObs, _ := collect[evidence.PolicyRulesValue](snaps, PolicyRuleReaders, evidence.AgentPolicyRules)
	rules := bySnapshotAndSource(rulesObs)
	if len(exps) == 0 {
		return pm, "no API server answered what the policies allow: " + gapSummary(expGaps)
	}
	if len(probes) == 0 {
		return pm, "no client pod's connection was read: " + gapSummary(probeGaps)
	}
	// expected[round][pair] → the outcomes servers gave, with who said so.
	expected := map[int]map[pairKey]map[bool][]string{}
	denyWhy := map[pairKey]string{}
	first := map[pairKey]bool{}
	seen := map[pairKey]bool{}
	changed := false
	var keys []pairKey
	for _, o := range exps {
		for _, pr := range o.Value.Pairs {
			k := pairKey{pr.From, pr.Target}
			if expected[o.Snapshot] == nil {
				expected[o.Snapshot] = map[pairKey]map[bool][]string{}
			}
			if expected[o.Snapshot][k] == nil {
				expected[o.Snapshot][k] = map[bool][]string{}
			}
			expected[o.Snapshot][k][pr.Allowed] = append(expected[o.Snapshot][k][pr.Allowed], string(o.Source))
			if !seen[k] {
				seen[k], first[k] = true, pr.Allowed
				keys = append(keys, k)
			} else if first[k] != pr.Allowed {
				changed = true
			}
			if !pr.Allowed && pr.Why != "" {
				denyWhy[k] = pr.Why
			}
		}
	}
	probeAt := map[int]map[pairKey]observation[evidence.DialValue]{}
	probedPair := map[pairKey]bool{}
	for _, o := range probes {
		if probeAt[o.Snapshot] == nil {
			probeAt[o.Snapshot] = map[pairKey]observation[evidence.DialValue]{}
		}
		k := pairKey{o.Value.From, o.Value.Target}
		probeAt[o.Snapshot][k] = o
		probedPair[k] = true
	}
	// A pair the API names and none of these readers ever dialled (a pod
	// another invariant's probe speaks for) is not this judgement's.
	keys = slices.DeleteFunc(keys, func(k pairKey) bool { return !probedPair[k] })
	sort.Slice(keys, func(i, j int) bool { return keys[i].from+keys[i].target < keys[j].from+keys[j].target })
	probeFailed := map[int][]gap{}
	for _, g := range probeGaps {
		probeFailed[g.Snapshot] = append(probeFailed[g.Snapshot], g)
	}

	marks := map[pairKey][]mark{}
	decided := 0
	nodeOf := map[pairKey]string{}
	for i, snap := range snaps {
		for _, k := range keys {
			exp := expected[i][k]
			o, probed := probeAt[i][k]
			switch {
			case !probed:
				if len(probeFailed[i]) > 0 {
					marks[k] = append(marks[k], mark{Taken: snap.Taken, ReadAt: probeFailed[i][0].At, State: unknown, Detail: "the probe could not be read: " + probeFailed[i][0].Reason})
				}
				continue
			case exp == nil:
				marks[k] = append(marks[k], mark{Taken: snap.Taken, ReadAt: o.ReadAt, State: unknown, Detail: "no API server's expectation names the pair"})
				continue
			case !o.Value.Answered() && !o.Value.Refused():
				marks[k] = append(marks[k], mark{Taken: snap.Taken, ReadAt: o.ReadAt, State: unknown, Detail: fmt.Sprintf("%s's connection to %s failed otherwise than a policy refuses (%s)", o.Source, k.target, o.Value.Error)})
				continue
			}
			decided++
			got := o.Value.Answered()
			if _, ok := exp[got]; ok {
				marks[k] = append(marks[k], mark{Taken: snap.Taken, ReadAt: o.ReadAt, State: holds})
				continue
			}
			outcome := "answered by " + o.Value.Body
			if !got {
				outcome = "refused (" + o.Value.Error + ")"
			}
			detail := fmt.Sprintf("%s → %s was %s while %s record it %s", k.from, k.target, outcome, strings.Join(exp[!got], ", "), allowText(!got))
			if w := denyWhy[k]; got && w != "" {
				detail += " (" + w + ")"
			}
			if host, _, err := net.SplitHostPort(k.target); err == nil {
				if rt := rulesText(rules, i, host); rt != "" {
					detail += "; " + rt
				}
			}
			marks[k] = append(marks[k], mark{Taken: snap.Taken, ReadAt: o.ReadAt, State: broken, Detail: detail})
		}
	}
	for _, k := range keys {
		host, _, err := net.SplitHostPort(k.target)
		if err != nil {
			continue
		}
		for _, o := range rulesObs {
			if _, ok := o.Value.Target(host); ok {
				nodeOf[k] = hostOf(o.Source)
				break
			}
		}
	}
	return policyMarkSet{marks: marks, keys: keys, changed: changed, decided: decided, nodeOf: nodeOf}, ""
}

func (p policyEnforced) Judge(in Input) verdict.Judgement {
	pm, why := policyMarks(ordered(in.Snapshots))
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	marks, keys, changed, decided := pm.marks, pm.keys, pm.changed, pm.decided
	if decided == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no round decided a pair: every connection was unreadable or failed otherwise than a policy refuses"}
	}
	exercise := "no pair's recorded outcome changed"
	if changed {
		exercise = "a pair's recorded outcome changed, so the policy agent had to reprogram"
	}
	var unsure *stretch
	var unsureKey pairKey
	var unsureMarks []mark
	missed := missedTicks(in)
	for _, k := range keys {
		marks[k] = withMissed(marks[k], missed)
		v, u := persisting(marks[k], p.bound, false)
		if v != nil {
			w := widened(marks[k], *v)
			return verdict.Judgement{
				Verdict: verdict.Violated,
				Reason: fmt.Sprintf("connections from %s to %s had another outcome than the recorded policies give for at least %s (bound %s: the policy agent's sync after a change, measured in the null arms), from %s to %s; at its start: %s",
					k.from, k.target, w.Lasted().Round(time.Millisecond), p.bound, stamp(w.First.ReadAt), stamp(w.Last.Taken), w.First.Detail),
				Sources: []string{"pod/*"}, At: w.Last.Taken, Exercised: verdict.Exercised(), Exercise: exercise,
			}
		}
		if u != nil && unsure == nil {
			unsure, unsureKey, unsureMarks = u, k, marks[k]
		}
	}
	if unsure != nil {
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("connections from %s to %s differed from the recorded policies and then could not be decided, from %s to %s (%s, over the bound %s); %s; last: %s",
				unsureKey.from, unsureKey.target, stamp(unsure.First.ReadAt), stamp(unsure.Last.Taken), unsure.Lasted().Round(time.Millisecond), p.bound, untold(unsureMarks, *unsure), unsure.Last.Detail),
			At: unsure.Last.Taken,
		}
	}
	longest, longestKey := time.Duration(0), pairKey{}
	for _, k := range keys {
		for _, st := range stretchesOf(marks[k]) {
			if st.Lasted() > longest {
				longest, longestKey = st.Lasted(), k
			}
		}
	}
	reason := fmt.Sprintf("%d connection outcomes of %d pairs matched the recorded policies within the bound %s", decided, len(keys), p.bound)
	if longest > 0 {
		reason += fmt.Sprintf("; the longest proven difference was %s (%s → %s)", longest.Round(time.Millisecond), longestKey.from, longestKey.target)
	} else if changed {
		reason += "; no round caught a connection differing after a change (resolution: one sampling interval)"
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: []string{"pod/*"}, Exercise: exercise}
	if changed {
		j.Exercised = verdict.Exercised()
	} else {
		j.Exercised = verdict.NotExercised()
	}
	return j
}

// policyMarksByNode are policy-enforced's marks of the pairs whose target
// each node's policy agent firewalls, by node.
func policyMarksByNode(snaps []evidence.Snapshot) map[string][]mark {
	pm, why := policyMarks(snaps)
	if why != "" {
		return nil
	}
	out := map[string][]mark{}
	for _, k := range pm.keys {
		if n, ok := pm.nodeOf[k]; ok {
			out[n] = append(out[n], pm.marks[k]...)
		}
	}
	return out
}
