package invariant

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// EndpointsTruthfulName names the endpoints-truthful invariant.
const EndpointsTruthfulName = "endpoints-truthful"

// EndpointsTruthful: after a bound, the test service's ready endpoints
// point only at pods whose containers run and answer.
//
// Reads: service/endpoints (the ready addresses) and statefulpod/object
// (the pod's IP, UID and node) from every API server; the pod's
// containers from the runtime of its node ("cri/<node>"); and whether each
// address answered a request from a worker ("probe/*",
// service/endpoint-probes), other than the pod's own node.
//
// For each API server and ready address, a round is:
//   - broken when the address is not the pod's IP as that server shows it
//     (it points at no pod of the service), or the node's runtime was read
//     and runs no container of that pod, or every prober that tried the
//     address got no answer;
//   - holding when the pod's containers were seen running and a prober got
//     an answer;
//   - unknown otherwise (the runtime or the probers unreadable).
//
// Fires when an address stayed broken through a stretch proven longer
// than the bound (see persistence.go).
//
// Why: the endpoints controller takes an address out of the ready set
// when the pod stops being Ready, and the node lifecycle controller marks
// the pods of an unreachable node not Ready; the bound is how long that
// chain may take (node-monitor-grace-period plus the controllers' sync).
//
// INSUFFICIENT_DATA when broken-or-unknown rounds outlasted the bound
// (the guarantee needs a positive check of every ready address), or when
// an address was still not shown right as the evidence ended, less than
// the bound after it went wrong: the window was too short to tell.
func EndpointsTruthful(bound time.Duration) Invariant { return endpointsTruthful{bound: bound} }

type endpointsTruthful struct{ bound time.Duration }

func (endpointsTruthful) Name() string         { return EndpointsTruthfulName }
func (endpointsTruthful) Phase() verdict.Phase { return verdict.Safety }
func (endpointsTruthful) Reads() []Reading {
	return []Reading{
		{Sources: consistentReaders, Question: evidence.ServiceEndpoints},
		{Sources: consistentReaders, Question: evidence.PodObject},
		{Sources: "cri/*", Question: evidence.PodRunningHere},
		{Sources: "probe/*", Question: evidence.EndpointProbes},
	}
}

func (e endpointsTruthful) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	eps, epGaps := collect[evidence.EndpointsValue](snaps, consistentReaders, evidence.ServiceEndpoints)
	pods, podGaps := collect[evidence.PodValue](snaps, consistentReaders, evidence.PodObject)
	rts, rtGaps := collect[evidence.RuntimePodValue](snaps, "cri/*", evidence.PodRunningHere)
	probes, prGaps := collect[evidence.EndpointProbesValue](snaps, "probe/*", evidence.EndpointProbes)
	if len(eps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered for the service's endpoints: " + gapSummary(epGaps)}
	}
	podAt := map[int]map[evidence.Source]observation[evidence.PodValue]{}
	for _, p := range pods {
		if podAt[p.Snapshot] == nil {
			podAt[p.Snapshot] = map[evidence.Source]observation[evidence.PodValue]{}
		}
		podAt[p.Snapshot][p.Source] = p
	}
	rtAt := map[int]map[string]observation[evidence.RuntimePodValue]{}
	for _, r := range rts {
		if rtAt[r.Snapshot] == nil {
			rtAt[r.Snapshot] = map[string]observation[evidence.RuntimePodValue]{}
		}
		rtAt[r.Snapshot][hostOf(r.Source)] = r
	}
	probeAt := map[int][]observation[evidence.EndpointProbesValue]{}
	for _, p := range probes {
		probeAt[p.Snapshot] = append(probeAt[p.Snapshot], p)
	}

	// marks per (server, address), in round order.
	type key struct {
		server evidence.Source
		addr   string
	}
	marks := map[key][]mark{}
	var keys []key
	checkedRounds := 0
	for _, ep := range eps {
		seenNow := map[string]bool{}
		for _, addr := range ep.Value.Ready {
			seenNow[addr] = true
			k := key{ep.Source, addr}
			if _, ok := marks[k]; !ok {
				keys = append(keys, k)
			}
			m := e.judgeAddress(ep, addr, podAt[ep.Snapshot][ep.Source], rtAt[ep.Snapshot], probeAt[ep.Snapshot])
			if m.State != unknown {
				checkedRounds++
			}
			marks[k] = append(marks[k], m)
		}
		// An address no longer ready holds for this server.
		for _, k := range keys {
			if k.server == ep.Source && !seenNow[k.addr] {
				marks[k] = append(marks[k], mark{Taken: ep.Taken, ReadAt: ep.ReadAt, State: holds})
			}
		}
	}
	sources := uniqueSorted(append(append(sourcesOf(eps, epGaps), sourcesOf(pods, podGaps)...), append(sourcesOf(rts, rtGaps), sourcesOf(probes, prGaps)...)...))
	var unsure *stretch
	var unsureKey key
	var unsureSpan string // how the unsure stretch stands to the bound
	for _, k := range keys {
		v, u := persisting(marks[k], e.bound, true)
		if v != nil {
			return verdict.Judgement{Verdict: verdict.Violated,
				Reason: fmt.Sprintf("%s kept %s as a ready endpoint from %s to %s (at least %s, bound %s) while it did not point at a running, answering pod: %s",
					k.server, k.addr, stamp(v.First.Taken), stamp(v.Last.Taken), v.Lasted().Round(time.Millisecond), e.bound, v.Last.Detail),
				Sources: []string{string(k.server)}, At: v.Last.Taken}
		}
		if u != nil && unsure == nil {
			unsure, unsureKey = u, k
			unsureSpan = fmt.Sprintf("longer than the bound of %s", e.bound)
		}
		if open := trailing(marks[k]); open != nil && unsure == nil && len(snaps) > 0 && snaps[len(snaps)-1].Taken.Sub(open.First.Taken) < e.bound {
			// Still not shown right when the evidence ends, before the
			// bound could pass: whether it would have outlasted it is
			// not known.
			undecided := *open
			undecided.Last.Detail = fmt.Sprintf("still so when the evidence ended at %s, before the bound could pass; %s", stamp(snaps[len(snaps)-1].Taken), open.Last.Detail)
			unsure, unsureKey = &undecided, k
			unsureSpan = fmt.Sprintf("%s when the evidence ended, under the bound of %s", undecided.Lasted().Round(time.Millisecond), e.bound)
		}
	}
	if unsure != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s kept %s ready from %s to %s (%s) without it being shown to run and answer: %s; %s",
				unsureKey.server, unsureKey.addr, stamp(unsure.First.Taken), stamp(unsure.Last.Taken), unsureSpan, unsure.Last.Detail, gapSummary(append(rtGaps, prGaps...))),
			Sources: sources, At: unsure.First.Taken}
	}
	return verdict.Judgement{Verdict: verdict.Preserved,
		Reason:  fmt.Sprintf("every ready endpoint pointed at a running, answering pod, or stopped being ready within %s (%d addresses over %d server reads, %d checks decided)", e.bound, len(keys), len(eps), checkedRounds),
		Sources: sources}
}

// trailing returns the stretch of rounds at the end of marks that are not
// known to hold, if any.
func trailing(marks []mark) *stretch {
	var open *stretch
	for _, m := range marks {
		if m.State == holds {
			open = nil
			continue
		}
		if open == nil {
			open = &stretch{First: m, Last: m}
		} else {
			open.Last = m
		}
	}
	return open
}

// judgeAddress decides one ready address in one round, as one server
// shows it.
func (endpointsTruthful) judgeAddress(ep observation[evidence.EndpointsValue], addr string, pod observation[evidence.PodValue], rts map[string]observation[evidence.RuntimePodValue], probes []observation[evidence.EndpointProbesValue]) mark {
	m := mark{Taken: ep.Taken, ReadAt: ep.ReadAt}
	if pod.Source == "" {
		m.State, m.Detail = unknown, fmt.Sprintf("%s did not answer for the pod in this round", ep.Source)
		return m
	}
	m.ReadAt = later(m.ReadAt, pod.ReadAt)
	if !pod.Value.Exists || pod.Value.PodIP != addr {
		m.State = broken
		m.Detail = fmt.Sprintf("%s shows no pod of the service at %s (%s)", ep.Source, addr, describePod(pod.Value))
		return m
	}
	var problems, unknowns []string
	runs := false
	if rt, ok := rts[pod.Value.NodeName]; ok {
		m.ReadAt = later(m.ReadAt, rt.ReadAt)
		for _, c := range rt.Value.Containers {
			if c.PodUID == pod.Value.UID && c.State == "CONTAINER_RUNNING" {
				runs = true
			}
		}
		if !runs {
			problems = append(problems, fmt.Sprintf("%s runs no container of pod %s", rt.Source, pod.Value.UID))
		}
	} else {
		unknowns = append(unknowns, fmt.Sprintf("the runtime of %q was not readable", pod.Value.NodeName))
	}
	answered, tried := false, 0
	var failures []string
	for _, p := range probes {
		// A prober on the pod's own node reaches it over the node's local
		// bridge, whatever became of the pod network; it cannot speak for
		// the service's clients elsewhere, so it does not count.
		if p.Source == evidence.Source("probe/"+pod.Value.NodeName) {
			continue
		}
		for _, pr := range p.Value.Probes {
			if pr.Address != addr {
				continue
			}
			tried++
			m.ReadAt = later(m.ReadAt, p.ReadAt)
			if pr.Answered {
				answered = true
			} else {
				failures = append(failures, fmt.Sprintf("%s: %s", p.Source, pr.Detail))
			}
		}
	}
	switch {
	case tried == 0:
		unknowns = append(unknowns, "no prober tried "+addr)
	case !answered:
		problems = append(problems, addr+" did not answer ("+strings.Join(failures, "; ")+")")
	}
	switch {
	case len(problems) > 0:
		m.State, m.Detail = broken, strings.Join(problems, "; ")
	case len(unknowns) > 0:
		m.State, m.Detail = unknown, strings.Join(unknowns, "; ")
	default:
		m.State = holds
	}
	return m
}

func describePod(v evidence.PodValue) string {
	if !v.Exists {
		return "the pod does not exist"
	}
	ip := v.PodIP
	if ip == "" {
		ip = "no IP"
	}
	return fmt.Sprintf("pod %s has %s", v.UID, ip)
}
