package invariant

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// AgentHealthTruthfulName names the agent-health-truthful invariant.
const AgentHealthTruthfulName = "agent-health-truthful"

// AgentHealthReaders are the nodes' agents' health endpoints
// ("agents/<node>").
const AgentHealthReaders = "agents/*"

// The agents whose health the invariant weighs, by the name their health
// answers carry (the lab's service names).
const (
	healthKubeProxy   = "kube-proxy"
	healthPolicyAgent = "kube-router"
)

// AgentHealthTruthful: a node agent does not report itself healthy while
// what it applied diverges from what the API records, longer than the
// bound.
//
// Reads: what service-routes-truthful reads (a node's kube-proxy rules
// against the API's ready endpoints), what policy-enforced reads (the
// client pods' connections against the recorded policies) and the
// agents' health on each node ("agents/<node>": kube-proxy's /healthz,
// the policy agent's /healthz).
//
// Each round leaves a mark per node and agent:
//   - broken when the agent's applied state diverges in that round
//     (kube-proxy: the node's rules are not what an API server records;
//     the policy agent: a connection to a pod it firewalls, named in its
//     rule dump, has another outcome than recorded) and its health
//     endpoint answered 200;
//   - holding when it does not diverge, or its health says it is not
//     healthy (it admits it; no answer at all counts as not healthy, as
//     to a health checker);
//   - unknown when the divergence could not be told or the health not
//     read.
//
// Fires when a stretch of broken rounds is proven longer than the bound.
//
// Why: kube-proxy's /healthz reports only that it synced within its sync
// period, and kube-router's that its controllers ran recently: neither
// says the agent heard the last change. A health check that stays green
// while a node applies stale rules cannot be what an operator relies on
// to find such a node.
//
// Exercised when some agent's applied state diverged in a round; a
// PRESERVED where none did is not exercised.
func AgentHealthTruthful(bound time.Duration) Invariant { return agentHealth{bound: bound} }

type agentHealth struct{ bound time.Duration }

func (agentHealth) Name() string           { return AgentHealthTruthfulName }
func (agentHealth) Phase() verdict.Phase   { return verdict.Safety }
func (a agentHealth) Bound() time.Duration { return a.bound }
func (agentHealth) Reads() []Reading {
	return append(append(serviceRoutes{}.Reads(), policyEnforced{}.Reads()...),
		Reading{Sources: AgentHealthReaders, Question: evidence.AgentHealth})
}

func (a agentHealth) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	health, healthGaps := collect[evidence.AgentHealthValue](snaps, AgentHealthReaders, evidence.AgentHealth)
	if len(health) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no node's agents' health was read: " + gapSummary(healthGaps)}
	}
	healthAt := bySnapshotAndSource(health)
	// diverged[agent key][round] is the route or policy mark of that
	// round for the agent on a node.
	type agentKey struct{ node, agent string }
	diverged := map[agentKey]map[int]mark{}
	put := func(k agentKey, i int, m mark) {
		if diverged[k] == nil {
			diverged[k] = map[int]mark{}
		}
		// Of two marks of one round (two pairs), broken wins, then unknown.
		if old, ok := diverged[k][i]; ok && (old.State == broken || (old.State == unknown && m.State == holds)) {
			return
		}
		diverged[k][i] = m
	}
	roundOf := map[time.Time]int{}
	for i, s := range snaps {
		roundOf[s.Taken] = i
	}
	if marks, _, _, why := routeMarks(snaps); why == "" {
		for n, ms := range marks {
			for _, m := range ms {
				put(agentKey{hostOf(evidence.Source(n)), healthKubeProxy}, roundOf[m.Taken], m)
			}
		}
	}
	for node, ms := range policyMarksByNode(snaps) {
		for _, m := range ms {
			put(agentKey{node, healthPolicyAgent}, roundOf[m.Taken], m)
		}
	}
	if len(diverged) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no agent's applied state could be told against the API (see service-routes-truthful and policy-enforced)"}
	}
	var keys []agentKey
	for k := range diverged {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].node+keys[i].agent < keys[j].node+keys[j].agent })
	exercised := false
	var unsure *stretch
	var unsureKey agentKey
	missed := missedTicks(in)
	for _, k := range keys {
		var out []mark
		for i, s := range snaps {
			d, ok := diverged[k][i]
			if !ok {
				continue
			}
			h, read := healthAt[i][evidence.Source("agents/"+k.node)]
			switch {
			case d.State == holds:
				out = append(out, mark{Taken: s.Taken, ReadAt: d.ReadAt, State: holds})
			case d.State == unknown || !read:
				out = append(out, mark{Taken: s.Taken, ReadAt: d.ReadAt, State: unknown, Detail: d.Detail})
			default:
				exercised = true
				ans := h.Value.Agents[k.agent]
				if !ans.Healthy() {
					out = append(out, mark{Taken: s.Taken, ReadAt: h.ReadAt, State: holds})
					continue
				}
				readAt := d.ReadAt
				if h.ReadAt.After(readAt) {
					readAt = h.ReadAt
				}
				out = append(out, mark{Taken: s.Taken, ReadAt: readAt, State: broken,
					Detail: fmt.Sprintf("%s on %s answered its health check 200 (%s) while %s", k.agent, k.node, firstWordsOf(ans.Body), d.Detail)})
			}
		}
		out = withMissed(out, missed)
		v, u := persisting(out, a.bound, false)
		if v != nil {
			w := widened(out, *v)
			return verdict.Judgement{
				Verdict: verdict.Violated,
				Reason: fmt.Sprintf("%s on %s reported itself healthy while what it applied diverged from the API for at least %s (bound %s), from %s to %s; at its start: %s",
					k.agent, k.node, w.Lasted().Round(time.Millisecond), a.bound, stamp(w.First.ReadAt), stamp(w.Last.Taken), w.First.Detail),
				Sources: []string{"agents/" + k.node}, At: w.Last.Taken, Exercised: verdict.Exercised(),
				Exercise: "an agent's applied state diverged from the API",
			}
		}
		if u != nil && unsure == nil {
			unsure, unsureKey = u, k
		}
	}
	if unsure != nil {
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s on %s was healthy while diverged and then could not be told, from %s to %s (%s, over the bound %s); last: %s",
				unsureKey.agent, unsureKey.node, stamp(unsure.First.ReadAt), stamp(unsure.Last.Taken), unsure.Lasted().Round(time.Millisecond), a.bound, unsure.Last.Detail),
			At: unsure.Last.Taken,
		}
	}
	var names []string
	for _, k := range keys {
		names = append(names, k.agent+" on "+k.node)
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Sources: []string{AgentHealthReaders},
		Reason: fmt.Sprintf("no agent (%s) reported itself healthy while diverging from the API longer than the bound %s", strings.Join(names, ", "), a.bound)}
	if exercised {
		j.Exercised, j.Exercise = verdict.Exercised(), "an agent's applied state diverged from the API"
	} else {
		j.Exercised, j.Exercise = verdict.NotExercised(), "no agent's applied state diverged from the API"
	}
	return j
}

func firstWordsOf(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}
