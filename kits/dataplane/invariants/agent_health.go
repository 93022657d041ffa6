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
// Each round leaves a mark per node, agent and API server (what the agent
// applied is judged against each server's record, record_marks.go):
//   - broken when the agent's applied state diverges in that round
//     (kube-proxy: the node's rules are not what the server records;
//     the policy agent: a connection to a pod on its node, where the API
//     records the target and where its agent filters the target's ingress
//     whether or not it ever programmed it, has another outcome than the
//     server records) and its health endpoint answered 200;
//   - holding when it does not diverge, or its health says it is not
//     healthy (it admits it: another status than 200, or its port
//     refused the connection);
//   - unknown when the divergence could not be told (suspect as
//     policy-enforced and service-routes-truthful say), or when it
//     diverged and its health could not be read or its health read timed
//     out or failed otherwise (suspect: it may have said it was healthy;
//     a read that timed out may have been slow on the reader's side).
//
// Fires when a stretch of broken rounds is proven longer than the agent's
// bound; the reason names every agent that did, with its stretch.
// INSUFFICIENT_DATA when unknown rounds that could hide one outlast the
// bound, or when no round told, for some agent, whether it diverged (held
// or broken against some server): an agent never decided is no pass. The bound is the paper's definition, not the agent's: an agent
// may say it is healthy while a change is on its way (the agent's own
// applying bound), not longer. Neither agent promises that much of its
// health: kube-proxy's /healthz fails only once an update it queued has
// waited 2 × its sync period (cmd/kube-proxy/app/server.go), and never
// for one it did not hear; kube-router's only once its controllers'
// heartbeat is older than their sync period (5 min by default) and a
// grace.
//
// Why: kube-proxy's /healthz reports only that it synced within its sync
// period, and kube-router's that its controllers ran recently: neither
// says the agent heard the last change. A health check that stays green
// while a node applies stale rules cannot be what an operator relies on
// to find such a node.
//
// Exercised when some agent's applied state diverged in a round; a
// PRESERVED where none did is not exercised.
func AgentHealthTruthful(kubeProxy, policyAgent invariant.Bound) invariant.Invariant {
	return agentHealth{bounds: map[string]invariant.Bound{healthKubeProxy: kubeProxy, healthPolicyAgent: policyAgent}}
}

type agentHealth struct{ bounds map[string]invariant.Bound }

func (agentHealth) Name() string         { return AgentHealthTruthfulName }
func (agentHealth) Phase() verdict.Phase { return verdict.Safety }

// Bound is the longer of the agents' bounds.
func (a agentHealth) Bound() time.Duration {
	var longest time.Duration
	for _, b := range a.bounds {
		longest = max(longest, b.Limit)
	}
	return longest
}
func (agentHealth) Reads() []invariant.Reading {
	return append(append(serviceRoutes{}.Reads(), policyEnforced{}.Reads()...),
		invariant.Reading{Sources: AgentHealthReaders, Question: dataplane.AgentHealth})
}

func (a agentHealth) Judge(in invariant.Input) verdict.Judgement {
	snaps := invariant.Ordered(in.Snapshots)
	health, healthGaps := invariant.Collect[dataplane.AgentHealthValue](snaps, AgentHealthReaders, dataplane.AgentHealth)
	if len(health) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no node's agents' health was read: " + invariant.GapSummary(healthGaps)}
	}
	healthAt := invariant.BySnapshotAndSource(health)
	// subjects[agent key] are what the agent on a node applies: its
	// node's rules (kube-proxy), the pairs whose target it firewalls (the
	// policy agent), each judged against each API server.
	type agentKey struct{ node, agent string }
	subjects := map[agentKey][]subjectMarks{}
	if nodes, _, why := routeMarks(snaps); why == "" {
		for _, sm := range nodes {
			k := agentKey{invariant.HostOf(evidence.Source(sm.Name)), healthKubeProxy}
			subjects[k] = append(subjects[k], sm)
		}
	}
	for node, sms := range policyMarksByNode(snaps) {
		k := agentKey{node, healthPolicyAgent}
		subjects[k] = append(subjects[k], sms...)
	}
	if len(subjects) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no agent's applied state could be told against the API (see service-routes-truthful and policy-enforced)"}
	}
	var keys []agentKey
	for k := range subjects {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].node+keys[i].agent < keys[j].node+keys[j].agent })
	exercised := false
	var unsure *invariant.Stretch
	var unsureKey agentKey
	var unsureServer string
	var unsureBound time.Duration
	var unsureMarks []invariant.Mark
	missed := invariant.MissedTicks(in)
	// Every agent that reported itself healthy while stale is named.
	violatedAgent := map[agentKey]bool{}
	// decided: the agents some round told, held or broken, against some
	// server.
	decided := map[agentKey]bool{}
	var violations, violatedSources []string
	var violatedAt time.Time
	for _, k := range keys {
		servers := map[string]bool{}
		for _, sm := range subjects[k] {
			for _, s := range sm.Servers {
				servers[s] = true
			}
		}
		for _, server := range sortedSet(servers) {
			var out []invariant.Mark
			for i, snap := range snaps {
				// Of the agent's subjects in this round against this
				// server, broken wins, then unknown.
				var d invariant.Mark
				have := false
				for _, sm := range subjects[k] {
					ms, ok := sm.ByServer[server]
					if !ok || i >= len(ms) {
						continue
					}
					m := ms[i]
					switch {
					case !have:
						d, have = m, true
					case m.State == invariant.Broken && d.State != invariant.Broken:
						d = m
					case m.State == invariant.Unknown && d.State == invariant.Holds:
						d = m
					case m.State == invariant.Unknown && d.State == invariant.Unknown:
						d.Suspect = d.Suspect || m.Suspect
					}
				}
				if !have {
					continue
				}
				h, read := healthAt[i][evidence.Source("agents/"+k.node)]
				switch {
				case d.State == invariant.Holds:
					out = append(out, invariant.Mark{Taken: snap.Taken, ReadAt: d.ReadAt, State: invariant.Holds})
				case d.State == invariant.Unknown:
					out = append(out, invariant.Mark{Taken: snap.Taken, ReadAt: d.ReadAt, State: invariant.Unknown, Detail: d.Detail, Suspect: d.Suspect})
				case !read:
					// Diverged, and whether it said so is unknown: it
					// may have said it was healthy.
					out = append(out, invariant.Mark{Taken: snap.Taken, ReadAt: d.ReadAt, State: invariant.Unknown, Suspect: true,
						Detail: fmt.Sprintf("agents/%s's health could not be read while %s", k.node, d.Detail)})
				default:
					ans := h.Value.Agents[k.agent]
					if !ans.Healthy() && !ans.Admits() {
						// Diverged, and its health read timed out or
						// failed: no claim and no admission.
						why := ans.Error
						if why == "" {
							why = "no answer recorded"
						}
						out = append(out, invariant.Mark{Taken: snap.Taken, ReadAt: laterOf(d.ReadAt, h.ReadAt), State: invariant.Unknown, Suspect: true,
							Detail: fmt.Sprintf("%s on %s's health read failed (%s) while %s", k.agent, k.node, why, d.Detail)})
						continue
					}
					exercised = true
					if ans.Admits() {
						out = append(out, invariant.Mark{Taken: snap.Taken, ReadAt: h.ReadAt, State: invariant.Holds})
						continue
					}
					out = append(out, invariant.Mark{Taken: snap.Taken, ReadAt: laterOf(d.ReadAt, h.ReadAt), State: invariant.Broken,
						Detail: fmt.Sprintf("%s on %s answered its health check 200 (%s) while %s", k.agent, k.node, firstWordsOf(ans.Body), d.Detail)})
				}
			}
			for _, m := range out {
				if m.State != invariant.Unknown {
					decided[k] = true
				}
			}
			out = invariant.WithMissed(out, missed)
			bound := a.bounds[k.agent]
			v, u := invariant.Persisting(out, bound.Limit, false)
			if v != nil && !violatedAgent[k] {
				// One stretch per agent: the first server's.
				violatedAgent[k] = true
				w := invariant.Widened(out, *v)
				violations = append(violations, fmt.Sprintf("%s on %s reported itself healthy while what it applied diverged from %s's record for at least %s, from %s to %s (bound %s); at its start: %s",
					k.agent, k.node, server, w.Lasted().Round(time.Millisecond), invariant.Stamp(w.First.ReadAt), invariant.Stamp(w.Last.Taken), bound, w.First.Detail))
				violatedSources = append(violatedSources, "agents/"+k.node)
				if violatedAt.IsZero() || w.Last.Taken.Before(violatedAt) {
					violatedAt = w.Last.Taken
				}
			}
			if u != nil && unsure == nil {
				unsure, unsureKey, unsureServer, unsureBound, unsureMarks = u, k, server, bound.Limit, out
			}
		}
	}
	if len(violations) > 0 {
		return verdict.Judgement{
			Verdict: verdict.Violated, Reason: strings.Join(violations, "; and "),
			Sources: slices.Compact(slices.Sorted(slices.Values(violatedSources))), At: violatedAt, Exercised: verdict.Exercised(),
			Exercise: "an agent's applied state diverged from the API",
		}
	}
	if unsure != nil {
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s on %s could not be shown truthful against %s's record from %s to %s (%s, over its bound %s): it diverged or may have, and what its health said then is not known; %s; last: %s",
				unsureKey.agent, unsureKey.node, unsureServer, invariant.Stamp(unsure.First.ReadAt), invariant.Stamp(unsure.Last.Taken), unsure.Lasted().Round(time.Millisecond), unsureBound, invariant.Untold(unsureMarks, *unsure), unsure.Last.Detail),
			Sources: []string{"agents/" + unsureKey.node}, At: unsure.Last.Taken,
		}
	}
	var names, undecided []string
	for _, k := range keys {
		names = append(names, k.agent+" on "+k.node)
		if !decided[k] {
			undecided = append(undecided, k.agent+" on "+k.node)
		}
	}
	if len(undecided) > 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("no round told whether %s diverged from an API server's record while its health was read (what it applied and the API's record, or its health, were never read together)", strings.Join(undecided, ", "))}
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Sources: []string{AgentHealthReaders},
		Reason: fmt.Sprintf("no agent (%s) reported itself healthy while diverging from the API longer than its bound (kube-proxy %s, the policy agent %s)", strings.Join(names, ", "), a.bounds[healthKubeProxy].Limit, a.bounds[healthPolicyAgent].Limit)}
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

// sortedSet is a set's members in order.
func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
