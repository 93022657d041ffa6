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

// EndpointsTruthful: a ready endpoint of the test service stops being
// ready within the bound once what it points at is dead.
//
// Reads: service/endpoints (the ready addresses), statefulpod/object (the
// pod's IP, UID and node) and worker1/ready (the subject node's Ready
// condition, with its name) from every API server, and the pod's
// containers from the runtime of its node ("cri/<node>").
//
// For each API server and each ready address it has shown, every snapshot
// leaves a mark:
//   - broken when, as that server shows it, the address points at no pod
//     of the service (the pod gone or re-addressed), or the pod's node is
//     not Ready or gone (known only for the node worker1/ready asks
//     after, whose name its answers carry; for a pod on any other node no
//     question asks, so that part does not apply), or the node's runtime
//     was read and runs no container of the pod;
//   - holding when the pod is at that address, that server shows its node
//     Ready (where the question applies), and its runtime was read
//     running a container of it; and, for an address the server no
//     longer lists as ready, holding;
//   - unknown when a read it needed failed: the server's endpoints, pod
//     or node read, or the node's runtime. A failed endpoint read is a
//     mark too, never a skipped round: a stretch is never made longer, or
//     ended, by rounds that could not tell.
//
// Fires when an address stayed broken through a stretch proven longer
// than the bound (see persistence.go).
//
// Why: this is what Kubernetes promises. The node lifecycle controller
// marks the pods of a node that stopped reporting (Ready Unknown or
// False) not Ready once node-monitor-grace-period passes, the kubelet
// marks a pod whose containers stopped not Ready, and the EndpointSlice
// controller then drops the address; the bound is how long that chain may
// take. Kubernetes does not promise that a ready endpoint is reachable
// from its peers: no component checks pod-to-pod reachability, and a pod
// network cut keeps the pod Ready and in the endpoints by design. So the
// endpoint probes ("probe/*") are evidence shown beside the verdicts, not
// part of this one.
//
// INSUFFICIENT_DATA when broken-or-unknown rounds outlasted the bound
// (the guarantee needs a positive check of every ready address), or when
// an address was still not shown right as the evidence ended, less than
// the bound after it went wrong: the window was too short to tell.
//
// Exercised when some ready endpoint was seen pointing at something dead
// in at least one round, so the removal had to happen; a PRESERVED where
// no endpoint ever did is not exercised. VIOLATED is always exercised.
func EndpointsTruthful(bound time.Duration) Invariant { return endpointsTruthful{bound: bound} }

type endpointsTruthful struct{ bound time.Duration }

func (endpointsTruthful) Name() string           { return EndpointsTruthfulName }
func (endpointsTruthful) Phase() verdict.Phase   { return verdict.Safety }
func (e endpointsTruthful) Bound() time.Duration { return e.bound }
func (endpointsTruthful) Reads() []Reading {
	return []Reading{
		{Sources: ConsistentReaders, Question: evidence.ServiceEndpoints},
		{Sources: ConsistentReaders, Question: evidence.PodObject},
		{Sources: ConsistentReaders, Question: evidence.NodeReady},
		{Sources: "cri/*", Question: evidence.PodRunningHere},
	}
}

// endpointKey is one address as one server shows it.
type endpointKey struct {
	server evidence.Source
	addr   string
}

func (e endpointsTruthful) Judge(in Input) verdict.Judgement {
	snaps := Ordered(in.Snapshots)
	eps, epGaps := Collect[evidence.EndpointsValue](snaps, ConsistentReaders, evidence.ServiceEndpoints)
	pods, podGaps := Collect[evidence.PodValue](snaps, ConsistentReaders, evidence.PodObject)
	nodes, nodeGaps := Collect[evidence.NodeReadyValue](snaps, ConsistentReaders, evidence.NodeReady)
	rts, rtGaps := Collect[evidence.RuntimePodValue](snaps, "cri/*", evidence.PodRunningHere)
	if len(eps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered for the service's endpoints: " + GapSummary(epGaps)}
	}
	epAt := BySnapshotAndSource(eps)
	podAt := BySnapshotAndSource(pods)
	nodeAt := BySnapshotAndSource(nodes)
	rtAt := map[int]map[string]Observation[evidence.RuntimePodValue]{}
	for _, r := range rts {
		if rtAt[r.Snapshot] == nil {
			rtAt[r.Snapshot] = map[string]Observation[evidence.RuntimePodValue]{}
		}
		rtAt[r.Snapshot][HostOf(r.Source)] = r
	}
	epFailed := map[int]map[evidence.Source]Gap{}
	for _, g := range epGaps {
		if epFailed[g.Snapshot] == nil {
			epFailed[g.Snapshot] = map[evidence.Source]Gap{}
		}
		epFailed[g.Snapshot][g.Source] = g
	}

	subjectNode := nodeNamed(nodes)

	marks := map[endpointKey][]Mark{}
	var keys []endpointKey
	checked, dead := 0, 0
	var firstDead *Mark
	servers := serversOf(eps, epGaps)
	for i, s := range snaps {
		for _, server := range servers {
			ep, read := epAt[i][server]
			if !read {
				g, failed := epFailed[i][server]
				if !failed {
					continue // not asked in this round
				}
				for _, k := range keys {
					if k.server == server {
						marks[k] = append(marks[k], Mark{Taken: s.Taken, ReadAt: g.At, State: Unknown,
							Detail: fmt.Sprintf("%s could not be read for the endpoints (%s)", server, g.Reason)})
					}
				}
				continue
			}
			readyNow := map[string]bool{}
			for _, addr := range ep.Value.Ready {
				readyNow[addr] = true
				k := endpointKey{server, addr}
				if _, ok := marks[k]; !ok {
					keys = append(keys, k)
				}
				pod, podRead := podAt[i][server]
				node, nodeRead := nodeAt[i][server]
				m := e.judgeAddress(ep, addr, pod, podRead, subjectNode, node, nodeRead, rtAt[i])
				if m.State != Unknown {
					checked++
				}
				if m.State == Broken {
					dead++
					if firstDead == nil {
						fd := m
						firstDead = &fd
					}
				}
				marks[k] = append(marks[k], m)
			}
			// An address no longer ready holds for this server.
			for _, k := range keys {
				if k.server == server && !readyNow[k.addr] {
					marks[k] = append(marks[k], Mark{Taken: ep.Taken, ReadAt: ep.ReadAt, State: Holds})
				}
			}
		}
	}
	sources := uniqueSorted(append(append(SourcesOf(eps, epGaps), SourcesOf(pods, podGaps)...), append(SourcesOf(nodes, nodeGaps), SourcesOf(rts, rtGaps)...)...))
	var unsure *Stretch
	var unsureKey endpointKey
	var unsureSpan string // how the unsure stretch stands to the bound
	missed := MissedTicks(in)
	for _, k := range keys {
		marks[k] = WithMissed(marks[k], missed)
		v, u := Persisting(marks[k], e.bound, true)
		if v != nil {
			whole := Widened(marks[k], *v)
			return verdict.Judgement{Verdict: verdict.Violated,
				Reason: fmt.Sprintf("%s kept %s as a ready endpoint from %s to %s (at least %s, bound %s, first past it at %s) while it pointed at something dead: %s",
					k.server, k.addr, Stamp(whole.First.Taken), Stamp(whole.Last.Taken), whole.Lasted().Round(time.Millisecond), e.bound, Stamp(v.Last.Taken), whole.Last.Detail),
				Sources: []string{string(k.server)}, At: v.Last.Taken, Exercised: verdict.Exercised(),
				Exercise: "a ready endpoint pointed at something dead: " + v.First.Detail}
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
			undecided.Last.Detail = fmt.Sprintf("still so when the evidence ended at %s, before the bound could pass; %s", Stamp(snaps[len(snaps)-1].Taken), open.Last.Detail)
			unsure, unsureKey = &undecided, k
			unsureSpan = fmt.Sprintf("%s when the evidence ended, under the bound of %s", undecided.Lasted().Round(time.Millisecond), e.bound)
		}
	}
	if unsure != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s kept %s ready from %s to %s (%s) without it being shown to point at a live pod: %s; %s",
				unsureKey.server, unsureKey.addr, Stamp(unsure.First.Taken), Stamp(unsure.Last.Taken), unsureSpan, unsure.Last.Detail,
				orNone(GapSummary(append(append(epGaps, podGaps...), append(nodeGaps, rtGaps...)...)))),
			Sources: sources, At: unsure.First.Taken}
	}
	j := verdict.Judgement{Verdict: verdict.Preserved,
		Reason: fmt.Sprintf("every ready endpoint pointed at a live pod, or stopped being ready within %s of pointing at something dead (%d addresses over %d server reads, %d checks decided, %d of them dead)",
			e.bound, len(keys), len(eps), checked, dead),
		Sources: sources}
	if firstDead != nil {
		j.Exercised = verdict.Exercised()
		j.Exercise = fmt.Sprintf("a ready endpoint pointed at something dead in %d check(s), first at %s: %s", dead, Stamp(firstDead.Taken), firstDead.Detail)
	} else {
		j.Exercised = verdict.NotExercised()
		j.Exercise = "no ready endpoint pointed at a dead pod"
	}
	return j
}

// BySnapshotAndSource indexes observations by snapshot and source.
func BySnapshotAndSource[T any](obs []Observation[T]) map[int]map[evidence.Source]Observation[T] {
	out := map[int]map[evidence.Source]Observation[T]{}
	for _, o := range obs {
		if out[o.Snapshot] == nil {
			out[o.Snapshot] = map[evidence.Source]Observation[T]{}
		}
		out[o.Snapshot][o.Source] = o
	}
	return out
}

// nodeNamed returns the name of the node worker1/ready asks after, from
// the first answer that names it, or "" when none does (the node never
// existed in the evidence, or the record predates the name).
func nodeNamed(nodes []Observation[evidence.NodeReadyValue]) string {
	for _, n := range nodes {
		if n.Value.Name != "" {
			return n.Value.Name
		}
	}
	return ""
}

// serversOf lists the servers asked for the endpoints, answered or not.
func serversOf(eps []Observation[evidence.EndpointsValue], gaps []Gap) []evidence.Source {
	var out []evidence.Source
	for _, s := range SourcesOf(eps, gaps) {
		out = append(out, evidence.Source(s))
	}
	return out
}

// trailing returns the stretch of rounds at the end of marks that are not
// known to hold, if any.
func trailing(marks []Mark) *Stretch {
	var open *Stretch
	for _, m := range marks {
		if m.State == Holds {
			open = nil
			continue
		}
		if open == nil {
			open = &Stretch{First: m, Last: m}
		} else {
			open.Last = m
		}
	}
	return open
}

// judgeAddress decides one ready address in one round, as one server
// shows it. subjectNode is the node whose readiness node holds (its read
// by the same server in the same round, if nodeRead); a pod on any other
// node is judged without its node's readiness, which no question asks.
func (endpointsTruthful) judgeAddress(ep Observation[evidence.EndpointsValue], addr string,
	pod Observation[evidence.PodValue], podRead bool,
	subjectNode string, node Observation[evidence.NodeReadyValue], nodeRead bool,
	rts map[string]Observation[evidence.RuntimePodValue]) Mark {
	m := Mark{Taken: ep.Taken, ReadAt: ep.ReadAt}
	if !podRead {
		m.State, m.Detail = Unknown, fmt.Sprintf("%s did not answer for the pod in this round", ep.Source)
		return m
	}
	m.ReadAt = later(m.ReadAt, pod.ReadAt)
	if !pod.Value.Exists || pod.Value.PodIP != addr {
		m.State = Broken
		m.Detail = fmt.Sprintf("%s shows no pod of the service at %s (%s)", ep.Source, addr, describePod(pod.Value))
		return m
	}
	var problems, unknowns []string
	if subjectNode != "" && pod.Value.NodeName == subjectNode {
		switch {
		case !nodeRead:
			unknowns = append(unknowns, fmt.Sprintf("%s did not answer for the readiness of the pod's node %s", ep.Source, subjectNode))
		case !node.Value.Exists || node.Value.Status != "True":
			m.ReadAt = later(m.ReadAt, node.ReadAt)
			problems = append(problems, fmt.Sprintf("%s shows the pod's node %s not Ready (%s)", ep.Source, subjectNode, describeNodeReady(node.Value)))
		default:
			m.ReadAt = later(m.ReadAt, node.ReadAt)
		}
	}
	if rt, ok := rts[pod.Value.NodeName]; ok {
		m.ReadAt = later(m.ReadAt, rt.ReadAt)
		runs := false
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
	switch {
	case len(problems) > 0:
		m.State, m.Detail = Broken, strings.Join(problems, "; ")
	case len(unknowns) > 0:
		m.State, m.Detail = Unknown, strings.Join(unknowns, "; ")
	default:
		m.State = Holds
	}
	return m
}

func describeNodeReady(v evidence.NodeReadyValue) string {
	if !v.Exists {
		return "no node object"
	}
	s := "Ready=" + v.Status
	if v.Reason != "" {
		s += ", " + v.Reason
	}
	if !v.LastTransitionTime.IsZero() {
		s += ", since " + Stamp(v.LastTransitionTime)
	}
	return s
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
