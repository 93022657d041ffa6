package invariants

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

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
// Each node is judged round by round against each API server's record,
// by name (record_marks.go): a round holds against a server when the
// node's targets are, as addresses, the ready set that server answered
// with; it is broken when they are not (a target that is gone or not
// ready, or a ready endpoint missing); it is unknown when the node's
// rules could not be read, the server gave no answer, or the servers that
// answered gave different sets (no one record to judge by: a stale server
// never vouches for a stale node).
//
// Fires when a node stayed broken against one server through a stretch
// proven longer than the bound (persistence.go). INSUFFICIENT_DATA when,
// after a server's set changed or the node was seen not to apply it,
// unknown rounds against that server outlasted the bound before a round
// showed the node applying it (readable coverage after each change), when
// the evidence ended before a round showed the node applying a change
// (broken or suspect rounds through the last one), when a node was never
// judged against any record, or when no node was read.
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
func ServiceRoutesTruthful(bound invariant.Bound) invariant.Invariant {
	return serviceRoutes{bound: bound}
}

type serviceRoutes struct{ bound invariant.Bound }

func (serviceRoutes) Name() string           { return ServiceRoutesTruthfulName }
func (serviceRoutes) Phase() verdict.Phase   { return verdict.Safety }
func (s serviceRoutes) Bound() time.Duration { return s.bound.Limit }
func (serviceRoutes) Reads() []invariant.Reading {
	return []invariant.Reading{
		{Sources: invariant.ConsistentReaders, Question: dataplane.AgentServiceEndpoints},
		{Sources: ProxyRuleReaders, Question: dataplane.AgentServiceTranslation},
		{Sources: PodProbeReaders, Question: dataplane.AgentServiceProbe},
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

// readySet is the API's ready addresses as a set, sorted: an endpoint
// may be listed in more than one EndpointSlice of a service at the same
// time (the EndpointSlice documentation, "Duplicate endpoints"), and
// kube-proxy forwards to it once.
func readySet(ready []string) []string {
	out := append([]string(nil), ready...)
	sort.Strings(out)
	return slices.Compact(out)
}

func setText(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return "[" + strings.Join(s, " ") + "]"
}

// routeMarks are service-routes-truthful's marks of every node's rules
// against each API server's record (see record_marks.go), nodes in name
// order, and whether a server's ready set changed; a non-empty why means
// there is nothing to judge.
func routeMarks(snaps []evidence.Snapshot) (nodes []subjectMarks, changed bool, why string) {
	eps, epGaps := invariant.Collect[evidence.EndpointsValue](snaps, invariant.ConsistentReaders, dataplane.AgentServiceEndpoints)
	rules, ruleGaps := invariant.Collect[evidence.ProxyBackendsValue](snaps, ProxyRuleReaders, dataplane.AgentServiceTranslation)
	probes, _ := invariant.Collect[dataplane.DialValue](snaps, PodProbeReaders, dataplane.AgentServiceProbe)
	if len(eps) == 0 {
		return nil, false, "no API server answered for the agents' service's endpoints: " + invariant.GapSummary(epGaps)
	}
	if len(rules) == 0 {
		return nil, false, "no node's kube-proxy rules were read: " + invariant.GapSummary(ruleGaps)
	}
	records := make([]map[string]serverRecord, len(snaps))
	for i := range records {
		records[i] = map[string]serverRecord{}
	}
	for _, o := range eps {
		records[o.Snapshot][string(o.Source)] = serverRecord{Value: setText(readySet(o.Value.Ready)), ReadAt: o.ReadAt}
	}
	ruleAt := invariant.BySnapshotAndSource(rules)
	ruleFailed := map[int]map[evidence.Source]invariant.Gap{}
	for _, g := range ruleGaps {
		if ruleFailed[g.Snapshot] == nil {
			ruleFailed[g.Snapshot] = map[evidence.Source]invariant.Gap{}
		}
		ruleFailed[g.Snapshot][g.Source] = g
	}
	probeAt := invariant.BySnapshotAndSource(probes)
	for _, n := range invariant.SourcesOf(rules, ruleGaps) {
		src := evidence.Source(n)
		rounds := make([]recordRound, len(snaps))
		for i, snap := range snaps {
			r := recordRound{Taken: snap.Taken, Records: records[i]}
			if o, ok := ruleAt[i][src]; ok {
				r.Applied, r.AppliedAt = setText(proxyTargets(o.Value)), o.ReadAt
			} else if g, failed := ruleFailed[i][src]; failed {
				r.Unread = fmt.Sprintf("%s could not be read (%s)", n, g.Reason)
			} else {
				r.Unread = n + " was not read in this round"
			}
			rounds[i] = r
		}
		sm := againstServers(n, rounds, func(r recordRound, server string, rec serverRecord) string {
			if r.Applied == rec.Value {
				return ""
			}
			detail := fmt.Sprintf("%s forwards to %s while %s records %s: %s", n, r.Applied, server, rec.Value, routeDifference(r.Applied, rec.Value, server))
			for i, snap := range snaps {
				if snap.Taken.Equal(r.Taken) {
					if p, ok := probeAt[i][evidence.Source("pod/"+invariant.HostOf(src))]; ok {
						detail += "; " + probeText(p)
					}
				}
			}
			return detail
		})
		changed = changed || sm.Changed
		nodes = append(nodes, sm)
	}
	return nodes, changed, ""
}

func (s serviceRoutes) Judge(in invariant.Input) verdict.Judgement {
	nodes, changed, why := routeMarks(invariant.Ordered(in.Snapshots))
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	exercise := "the API's ready endpoints never changed, so no node had to reprogram"
	if changed {
		exercise = "the API's ready endpoints changed, so every node had to reprogram"
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	v, u, open := judgeSubjects(nodes, s.bound.Limit, invariant.MissedTicks(in))
	if v != nil {
		w := v.s
		return verdict.Judgement{
			Verdict: verdict.Violated,
			Reason: fmt.Sprintf("%s did not forward the service to the ready endpoints %s records for at least %s, from %s to %s (bound %s); at its start: %s",
				v.subject, v.server, w.Lasted().Round(time.Millisecond), invariant.Stamp(w.First.ReadAt), invariant.Stamp(w.Last.Taken), s.bound, w.First.Detail),
			Sources: []string{v.subject, v.server}, At: w.Last.Taken, Exercised: verdict.Exercised(), Exercise: exercise,
		}
	}
	if u != nil {
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s could not be shown to apply %s's record from %s to %s (%s, over the bound %s): it may have kept the old rules; %s; last: %s",
				u.subject, u.server, invariant.Stamp(u.s.First.ReadAt), invariant.Stamp(u.s.Last.Taken), u.s.Lasted().Round(time.Millisecond), s.bound.Limit, invariant.Untold(u.marks, u.s), u.s.Last.Detail),
			Sources: []string{u.subject, u.server}, At: u.s.Last.Taken,
		}
	}
	if none := undecided(nodes); len(none) > 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s never read in a round that had one API server record to judge it by", strings.Join(none, ", "))}
	}
	if open != nil {
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s was not shown to apply %s's record by the end of the evidence: from %s to the last round at %s no round showed it applying it (the change is not covered by later reads); at its start: %s",
				open.subject, open.server, invariant.Stamp(open.s.First.ReadAt), invariant.Stamp(open.s.Last.Taken), open.s.First.Detail),
			Sources: []string{open.subject, open.server}, At: open.s.Last.Taken,
		}
	}
	reason := fmt.Sprintf("every node's kube-proxy rules (%s) matched the ready endpoints each API server recorded, within the bound %s, every change followed by readable rounds", strings.Join(names, ", "), s.bound.Limit)
	if longest, of := longestProven(nodes); longest > 0 {
		reason += fmt.Sprintf("; the longest proven difference was %s (%s)", longest.Round(time.Millisecond), of)
	} else if changed {
		reason += "; no round caught a node differing from the API after a change (resolution: one sampling interval)"
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: names, Exercise: exercise}
	if changed {
		j.Exercised = verdict.Exercised()
	} else {
		j.Exercised = verdict.NotExercised()
	}
	return j
}

// routeDifference says which way a node's targets differ from a server's
// ready set (both as setText gives them): what it forwards to that the
// server does not record as ready, and what the server records as ready
// that it does not forward to.
func routeDifference(applied, recorded, server string) string {
	node, api := setOf(applied), setOf(recorded)
	var extra, missing []string
	for _, a := range node {
		if !slices.Contains(api, a) {
			extra = append(extra, a)
		}
	}
	for _, a := range api {
		if !slices.Contains(node, a) {
			missing = append(missing, a)
		}
	}
	var parts []string
	if len(extra) > 0 {
		parts = append(parts, fmt.Sprintf("it forwards to %s, which %s does not record as ready", setText(extra), server))
	}
	if len(missing) > 0 {
		parts = append(parts, fmt.Sprintf("it does not forward to %s, which %s records as ready", setText(missing), server))
	}
	return strings.Join(parts, ", and ")
}

// setOf reads back what setText wrote.
func setOf(text string) []string {
	if text == "nothing" {
		return nil
	}
	return strings.Fields(strings.Trim(text, "[]"))
}

// stretchesOf are the proven-broken runs of marks.
func stretchesOf(marks []invariant.Mark) []invariant.Stretch {
	var out []invariant.Stretch
	var cur *invariant.Stretch
	for _, m := range marks {
		if m.State == invariant.Broken {
			if cur == nil {
				cur = &invariant.Stretch{First: m, Last: m, Proven: true}
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
func probeText(o invariant.Observation[dataplane.DialValue]) string {
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
