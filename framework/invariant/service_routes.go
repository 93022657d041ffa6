package invariant

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// ServiceRoutesTruthfulName names the service-routes-truthful invariant.
const ServiceRoutesTruthfulName = "service-routes-truthful"

// The sources service-routes-truthful reads beside the API servers.
const (
	// ProxyRuleReaders are the nodes' kube-proxy rules for the agents'
	// service ("kube-proxy/<node>").
	ProxyRuleReaders = "kube-proxy/*"
	// PodProbeReaders are the client pods' connections ("pod/<node>").
	PodProbeReaders = "pod/*"
)

// ServiceRoutesTruthful: every node forwards the agents' test service to
// the endpoints the API records as ready, and to no other, within the
// bound of a change.
//
// Reads: agents/service-endpoints from every API server ("apiserver/*":
// the ready addresses), agents/service-translation from every node's
// kube-proxy rules ("kube-proxy/<node>": the DNAT targets), and, as the
// cross-check shown in the reason, agents/service-probe from the client
// pod on each node ("pod/<node>": which backend answered a new
// connection, or why none did).
//
// Each round leaves a mark per node:
//   - holding when the node's targets are, as addresses, the ready set
//     one of the API servers answered with in that round (a round spans a
//     change, so any server's set counts: this invariant does not judge
//     the API servers against each other);
//   - broken when they are none of them (a target that is gone or not
//     ready, or a ready endpoint missing);
//   - unknown when the node's rules or every API server could not be read.
//
// Fires when a node stayed broken through a stretch proven longer than the
// bound (persistence.go). INSUFFICIENT_DATA when broken-or-unknown rounds
// after a broken one outlasted the bound, or no node was read.
//
// Why: kube-proxy watches EndpointSlices and reprograms a node's rules
// when they change, at most minSyncPeriod apart; a node that keeps the old
// rules sends new connections to a backend that is gone. Nothing in
// Kubernetes checks that a node applied a change: kube-proxy's own healthz
// says only that it synced recently, not that it heard of the change.
//
// Exercised when the API's ready set changed during the input, so every
// node had to reprogram; a PRESERVED where it never changed is not
// exercised. VIOLATED is always exercised.
func ServiceRoutesTruthful(bound time.Duration) Invariant { return serviceRoutes{bound: bound} }

type serviceRoutes struct{ bound time.Duration }

func (serviceRoutes) Name() string           { return ServiceRoutesTruthfulName }
func (serviceRoutes) Phase() verdict.Phase   { return verdict.Safety }
func (s serviceRoutes) Bound() time.Duration { return s.bound }
func (serviceRoutes) Reads() []Reading {
	return []Reading{
		{Sources: consistentReaders, Question: evidence.AgentServiceEndpoints},
		{Sources: ProxyRuleReaders, Question: evidence.AgentServiceTranslation},
		{Sources: PodProbeReaders, Question: evidence.AgentServiceProbe},
	}
}

// proxyTargets are the addresses a node forwards the service to, without
// ports, sorted; a port whose traffic is rejected forwards nowhere.
func proxyTargets(v evidence.ProxyBackendsValue) []string {
	seen := map[string]bool{}
	for _, p := range v.Ports {
		for _, b := range p.Backends {
			host, _, err := net.SplitHostPort(b)
			if err != nil {
				host = b
			}
			seen[host] = true
		}
	}
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

func setText(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return "[" + strings.Join(s, " ") + "]"
}

// routeMarks are service-routes-truthful's marks per node over snaps (in
// order), the nodes read, and whether the API's ready set changed; a
// non-empty why means there is nothing to judge.
func routeMarks(snaps []evidence.Snapshot) (marks map[string][]mark, nodes []string, changed bool, why string) {
	eps, epGaps := collect[evidence.EndpointsValue](snaps, consistentReaders, evidence.AgentServiceEndpoints)
	rules, ruleGaps := collect[evidence.ProxyBackendsValue](snaps, ProxyRuleReaders, evidence.AgentServiceTranslation)
	probes, _ := collect[evidence.DialValue](snaps, PodProbeReaders, evidence.AgentServiceProbe)
	if len(eps) == 0 {
		return nil, nil, false, "no API server answered for the agents' service's endpoints: " + gapSummary(epGaps)
	}
	if len(rules) == 0 {
		return nil, nil, false, "no node's kube-proxy rules were read: " + gapSummary(ruleGaps)
	}
	// The API's ready sets per round, as texts, with the latest read.
	type apiRound struct {
		sets   map[string][]string // set text → the servers that answered it
		readAt time.Time
	}
	api := map[int]*apiRound{}
	var firstSet string
	for _, o := range eps {
		r := api[o.Snapshot]
		if r == nil {
			r = &apiRound{sets: map[string][]string{}}
			api[o.Snapshot] = r
		}
		txt := setText(o.Value.Ready)
		r.sets[txt] = append(r.sets[txt], string(o.Source))
		if o.ReadAt.After(r.readAt) {
			r.readAt = o.ReadAt
		}
		if firstSet == "" {
			firstSet = txt
		} else if txt != firstSet {
			changed = true
		}
	}
	ruleAt := bySnapshotAndSource(rules)
	ruleFailed := map[int]map[evidence.Source]gap{}
	for _, g := range ruleGaps {
		if ruleFailed[g.Snapshot] == nil {
			ruleFailed[g.Snapshot] = map[evidence.Source]gap{}
		}
		ruleFailed[g.Snapshot][g.Source] = g
	}
	probeAt := bySnapshotAndSource(probes)
	nodes = sourcesOf(rules, ruleGaps)

	marks = map[string][]mark{}
	for i, snap := range snaps {
		for _, n := range nodes {
			src := evidence.Source(n)
			o, read := ruleAt[i][src]
			if !read {
				if g, failed := ruleFailed[i][src]; failed {
					marks[n] = append(marks[n], mark{Taken: snap.Taken, ReadAt: g.At, State: unknown, Detail: fmt.Sprintf("%s could not be read (%s)", n, g.Reason)})
				}
				continue
			}
			a := api[i]
			if a == nil {
				marks[n] = append(marks[n], mark{Taken: snap.Taken, ReadAt: o.ReadAt, State: unknown, Detail: "no API server answered for the endpoints"})
				continue
			}
			got := setText(proxyTargets(o.Value))
			readAt := o.ReadAt
			if a.readAt.After(readAt) {
				readAt = a.readAt
			}
			if _, ok := a.sets[got]; ok {
				marks[n] = append(marks[n], mark{Taken: snap.Taken, ReadAt: readAt, State: holds})
				continue
			}
			var recorded []string
			for txt, servers := range a.sets {
				recorded = append(recorded, fmt.Sprintf("%s records %s", strings.Join(servers, ", "), txt))
			}
			sort.Strings(recorded)
			detail := fmt.Sprintf("%s forwards to %s while %s", n, got, strings.Join(recorded, "; "))
			if p, ok := probeAt[i][evidence.Source("pod/"+hostOf(src))]; ok {
				detail += "; " + probeText(p)
			}
			marks[n] = append(marks[n], mark{Taken: snap.Taken, ReadAt: readAt, State: broken, Detail: detail})
		}
	}
	return marks, nodes, changed, ""
}

func (s serviceRoutes) Judge(in Input) verdict.Judgement {
	marks, nodes, changed, why := routeMarks(ordered(in.Snapshots))
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	exercise := "the API's ready endpoints never changed, so no node had to reprogram"
	if changed {
		exercise = "the API's ready endpoints changed, so every node had to reprogram"
	}
	var unsureOf string
	var unsure *stretch
	var unsureMarks []mark
	longest, longestOf := time.Duration(0), ""
	missed := missedTicks(in)
	for _, n := range nodes {
		ms := withMissed(marks[n], missed)
		v, u := persisting(ms, s.bound, false)
		if v != nil {
			w := widened(ms, *v)
			return verdict.Judgement{
				Verdict: verdict.Violated,
				Reason: fmt.Sprintf("%s kept forwarding to what the API no longer records as ready for at least %s (bound %s: kube-proxy's sync after an EndpointSlice change, measured in the null arm), from %s to %s; at its start: %s",
					n, w.Lasted().Round(time.Millisecond), s.bound, stamp(w.First.ReadAt), stamp(w.Last.Taken), w.First.Detail),
				Sources: []string{n}, At: w.Last.Taken, Exercised: verdict.Exercised(), Exercise: exercise,
			}
		}
		if u != nil && unsure == nil {
			unsure, unsureOf, unsureMarks = u, n, ms
		}
		for _, st := range stretchesOf(ms) {
			if st.Lasted() > longest {
				longest, longestOf = st.Lasted(), n
			}
		}
	}
	if unsure != nil {
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s differed from the API and then could not be read, from %s to %s (%s, over the bound %s): it may have kept the old rules; %s; last: %s",
				unsureOf, stamp(unsure.First.ReadAt), stamp(unsure.Last.Taken), unsure.Lasted().Round(time.Millisecond), s.bound, untold(unsureMarks, *unsure), unsure.Last.Detail),
			Sources: []string{unsureOf}, At: unsure.Last.Taken,
		}
	}
	reason := fmt.Sprintf("every node's kube-proxy rules (%s) matched the ready endpoints an API server recorded within the bound %s", strings.Join(nodes, ", "), s.bound)
	if longest > 0 {
		reason += fmt.Sprintf("; the longest proven difference was %s on %s", longest.Round(time.Millisecond), longestOf)
	} else if changed {
		reason += "; no round caught a node differing from the API after a change (resolution: one sampling interval)"
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: nodes, Exercise: exercise}
	if changed {
		j.Exercised = verdict.Exercised()
	} else {
		j.Exercised = verdict.NotExercised()
	}
	return j
}

// stretchesOf are the proven-broken runs of marks.
func stretchesOf(marks []mark) []stretch {
	var out []stretch
	var cur *stretch
	for _, m := range marks {
		if m.State == broken {
			if cur == nil {
				cur = &stretch{First: m, Last: m, Proven: true}
			} else {
				cur.Last = m
			}
			cur.Broken++
			continue
		}
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

// probeText says what a client pod's new connection found.
func probeText(o observation[evidence.DialValue]) string {
	p := o.Value
	switch {
	case p.Answered():
		return fmt.Sprintf("%s's connection to %s was answered by %s", o.Source, p.Target, p.Body)
	case p.Connected:
		return fmt.Sprintf("%s's connection to %s was made and not answered (%s)", o.Source, p.Target, p.Error)
	default:
		return fmt.Sprintf("%s's connection to %s failed (%s)", o.Source, p.Target, p.Error)
	}
}
