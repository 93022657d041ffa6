package invariant

import (
	"fmt"
	"net"
	"path"
	"sort"
	"strings"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// ConvergenceName names the convergence invariant.
const ConvergenceName = "convergence"

// objectReaders are the sources that read Kubernetes objects: the API
// servers, etcd directly, and the informer cache.
var objectReaders = []string{ConsistentReaders, "etcd/*", cacheReader}

// Convergence: after heal, every source agrees again and the lab matches
// its clean baseline, within the settle bound.
//
// Reads, in the settle sample judged and the baseline: worker1's Ready and
// taints, the stateful pod and the service's endpoints from every source
// that reads objects (API servers, etcd, the informer); the pod from
// worker1's kubelet; the pod's containers from every node's runtime; the
// service's backends as kube-proxy programmed them; the DNS answer.
//
// Fires when, in the snapshot judged (the first settle sample in which
// this holds with full evidence, or the final one at the settle timeout
// when none did), a definite difference shows:
//   - a source says worker1 is not Ready, or shows a taint the baseline
//     did not have (a leftover unreachable/not-ready taint);
//   - the pod is missing, Terminating (stuck deletion), not Ready, or the
//     object readers disagree on which pod it is or where it runs;
//   - a kubelet lists the pod when the pod is bound elsewhere, or misses
//     it when bound to it;
//   - a node other than the pod's runs a container of the pod's name (a
//     duplicate), or the pod's node runs none of its containers;
//   - the object readers disagree on the ready endpoints, their number
//     differs from the baseline's, or kube-proxy sends traffic to
//     other addresses than the ready endpoints;
//   - DNS answers differently from the baseline;
//   - a source that answered in the baseline refuses now, or answers with
//     an error (the lab is not back to where it started; the reason names
//     the error).
//
// A source that answered in the baseline and whose read timed out, was
// cancelled or could not reach it now is unknown, not different: it may
// serve anything. With no definite difference, any such source makes the
// verdict INSUFFICIENT_DATA (the settle loop samples again until its
// bound), naming the source and the reason. A source unreadable at
// baseline is not compared.
//
// Why: Kubernetes is level-triggered; once the fault is gone every
// controller and agent is meant to drive the cluster back to its declared
// state, and every view of it back into agreement.
//
// INSUFFICIENT_DATA also when there is no baseline, or no API server
// answered and nothing else shows a definite difference.
//
// Exercised when the lab left its baseline during the run, in what
// convergence reads: an earlier sample of the input shows one of the
// differences above; or the pod judged is not the baseline's (another UID
// or node); or the timeline has, after the fault was injected and before
// the judged sample, worker1 (or the node the pod ran on at baseline)
// going Ready=Unknown or False or gaining a taint, the baseline's pod
// getting a deletionTimestamp, deleted or replaced, or the endpoints
// changing (an event a relisting replayed counts by when the cluster
// recorded it, where it says: evidence.Event.Within). Runtimes, kube-proxy
// and DNS are not on the timeline, so a departure seen only there, with
// the judged sample alone in the input, reads as not exercised; the
// Exercise says what was looked at. VIOLATED is always exercised.
func Convergence() Invariant { return convergence{} }

type convergence struct{}

func (convergence) Name() string         { return ConvergenceName }
func (convergence) Phase() verdict.Phase { return verdict.Convergence }
func (convergence) Reads() []Reading {
	var rs []Reading
	for _, g := range objectReaders {
		for _, q := range []evidence.Question{evidence.NodeReady, evidence.NodeTaints, evidence.PodObject, evidence.ServiceEndpoints} {
			rs = append(rs, Reading{Sources: g, Question: q})
		}
	}
	return append(rs,
		Reading{Sources: "kubelet/*", Question: evidence.PodObject},
		Reading{Sources: "cri/*", Question: evidence.PodRunningHere},
		Reading{Sources: "proxy/*", Question: evidence.ServiceProxyBackends},
		Reading{Sources: "dns", Question: evidence.ServiceDNS},
	)
}

// Timeline events of worker1 and the test service (recorded by
// evidence/watch) that mark the lab leaving its baseline.
const (
	readyUnknownEvent     = "ready-unknown"
	readyFalseEvent       = "ready-false"
	taintAddedEvent       = "taint-added"
	endpointsChangedEvent = "endpoints-changed"
)

// fromObjectReaders collects q from every object reader.
func fromObjectReaders[T any](snaps []evidence.Snapshot, q evidence.Question) ([]Observation[T], []Gap) {
	var obs []Observation[T]
	var gaps []Gap
	for _, g := range objectReaders {
		o, gp := Collect[T](snaps, g, q)
		obs = append(obs, o...)
		gaps = append(gaps, gp...)
	}
	return obs, gaps
}

func (convergence) Judge(in Input) verdict.Judgement {
	snaps := Ordered(in.Snapshots)
	if len(snaps) == 0 || in.Baseline == nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "convergence compares the final snapshot with the baseline, and one of them is missing"}
	}
	final := snaps[len(snaps)-1]
	c := compareWithBaseline(final, *in.Baseline)
	exercised, exercise := leftBaseline(snaps[:len(snaps)-1], final, in, c)
	switch {
	case len(c.problems) > 0:
		reason := fmt.Sprintf("not back to the baseline at %s: %s", Stamp(final.Taken), strings.Join(c.problems, "; "))
		if len(c.unknowns) > 0 {
			reason += "; besides, unknown: " + strings.Join(c.unknowns, "; ")
		}
		if !exercised {
			exercise = "not back to the baseline in the judged sample"
		}
		return verdict.Judgement{Verdict: verdict.Violated, Reason: reason, At: final.Taken, Exercised: verdict.Exercised(), Exercise: exercise}
	case !c.apiReadable:
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered in the final snapshot: " + orNone(c.apiGaps)}
	case len(c.unknowns) > 0:
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("no difference from the baseline at %s in what could be read, but unknown (a read that timed out says nothing of what the source serves): %s",
				Stamp(final.Taken), strings.Join(c.unknowns, "; ")),
			At: final.Taken}
	}
	return verdict.Judgement{Verdict: verdict.Preserved,
		Reason:    fmt.Sprintf("at %s every source agrees and matches the baseline: worker1 Ready, pod %s on %q running there only, %d ready endpoint(s)", Stamp(final.Taken), c.pod.UID, c.pod.NodeName, len(c.ready)),
		Exercised: &exercised, Exercise: exercise}
}

// baselineComparison is what one snapshot shows against the baseline.
type baselineComparison struct {
	// problems are definite differences; unknowns are sources that
	// answered at baseline and whose reads now timed out or failed to
	// reach them.
	problems, unknowns []string
	apiReadable        bool
	apiGaps            string
	// pod is the pod the object readers agree on (empty if none); ready
	// its ready endpoints.
	pod   evidence.PodValue
	ready []string
}

func compareWithBaseline(snap, baseline evidence.Snapshot) baselineComparison {
	final := []evidence.Snapshot{snap}
	base := []evidence.Snapshot{baseline}
	var c baselineComparison
	bad := func(format string, args ...any) { c.problems = append(c.problems, fmt.Sprintf(format, args...)) }

	// worker1 Ready, no new taints.
	readies, _ := fromObjectReaders[evidence.NodeReadyValue](final, evidence.NodeReady)
	for _, o := range readies {
		if ok, _ := path.Match(ConsistentReaders, string(o.Source)); ok {
			c.apiReadable = true
		}
		if !o.Value.Exists || o.Value.Status != "True" {
			bad("%s says worker1 is not Ready (exists=%v, Ready=%q, %s)", o.Source, o.Value.Exists, o.Value.Status, o.Value.Reason)
		}
	}
	baseTaints := map[string]bool{}
	bt, _ := fromObjectReaders[[]evidence.TaintValue](base, evidence.NodeTaints)
	for _, o := range bt {
		for _, t := range o.Value {
			baseTaints[t.Key+":"+t.Effect] = true
		}
	}
	taints, _ := fromObjectReaders[[]evidence.TaintValue](final, evidence.NodeTaints)
	for _, o := range taints {
		for _, t := range o.Value {
			if !baseTaints[t.Key+":"+t.Effect] {
				bad("%s shows worker1 tainted %s:%s, which the baseline was not", o.Source, t.Key, t.Effect)
			}
		}
	}

	// The pod: one, settled, agreed on.
	pods, _ := fromObjectReaders[evidence.PodValue](final, evidence.PodObject)
	for _, o := range pods {
		if ok, _ := path.Match(ConsistentReaders, string(o.Source)); ok {
			c.apiReadable = true
		}
	}
	if !c.apiReadable {
		_, gaps := Collect[any](final, ConsistentReaders, evidence.PodObject)
		c.apiGaps = GapSummary(gaps)
	}
	podViews := map[string][]string{}
	for _, o := range pods {
		v := o.Value
		switch {
		case !v.Exists:
			bad("%s has no stateful pod", o.Source)
		case v.DeletionTimestamp != nil:
			bad("%s shows pod %s still Terminating (deletionTimestamp %s)", o.Source, v.UID, Stamp(*v.DeletionTimestamp))
		case !v.Ready:
			bad("%s shows pod %s not Ready (phase %s)", o.Source, v.UID, v.Phase)
		}
		if v.Exists {
			key := fmt.Sprintf("pod %s on %q", v.UID, v.NodeName)
			podViews[key] = append(podViews[key], string(o.Source))
		}
	}
	switch len(podViews) {
	case 0:
	case 1:
		for _, o := range pods {
			if o.Value.Exists {
				c.pod = o.Value
			}
		}
	default:
		bad("the sources disagree about the pod: %s", describeViews(podViews))
	}

	if pod := c.pod; pod.UID != "" {
		kubelets, _ := Collect[evidence.PodValue](final, "kubelet/*", evidence.PodObject)
		for _, o := range kubelets {
			bound := HostOf(o.Source) == pod.NodeName
			switch {
			case bound && (!o.Value.Exists || o.Value.UID != pod.UID):
				bad("%s does not run pod %s, which is bound to it (%s)", o.Source, pod.UID, describePod(o.Value))
			case !bound && o.Value.Exists:
				bad("%s still lists pod %s, which is bound to %q", o.Source, o.Value.UID, pod.NodeName)
			}
		}
		rts, _ := Collect[evidence.RuntimePodValue](final, "cri/*", evidence.PodRunningHere)
		for _, o := range rts {
			here := HostOf(o.Source) == pod.NodeName
			running := runningContainers(o.Value)
			ours := false
			for _, ct := range o.Value.Containers {
				if ct.State == "CONTAINER_RUNNING" && ct.PodUID == pod.UID {
					ours = true
				}
			}
			switch {
			case here && !ours:
				bad("%s runs no container of pod %s, which is bound to it", o.Source, pod.UID)
			case !here && len(running) > 0:
				bad("%s runs %d container(s) of the pod's name while the pod is bound to %q: a duplicate", o.Source, len(running), pod.NodeName)
			}
		}
	}

	// Endpoints agree, as many as at baseline, and kube-proxy follows them.
	eps, _ := fromObjectReaders[evidence.EndpointsValue](final, evidence.ServiceEndpoints)
	epViews := map[string][]string{}
	for _, o := range eps {
		key := "[" + strings.Join(o.Value.Ready, " ") + "]"
		epViews[key] = append(epViews[key], string(o.Source))
		c.ready = o.Value.Ready
	}
	if len(epViews) > 1 {
		bad("the sources disagree about the ready endpoints: %s", describeViews(epViews))
	} else if len(epViews) == 1 {
		baseEps, _ := Collect[evidence.EndpointsValue](base, ConsistentReaders, evidence.ServiceEndpoints)
		if len(baseEps) > 0 && len(baseEps[0].Value.Ready) != len(c.ready) {
			bad("%d ready endpoint(s) now, %d at baseline", len(c.ready), len(baseEps[0].Value.Ready))
		}
		proxies, _ := Collect[evidence.ProxyBackendsValue](final, "proxy/*", evidence.ServiceProxyBackends)
		want := strings.Join(c.ready, " ")
		for _, o := range proxies {
			for _, p := range o.Value.Ports {
				if got := strings.Join(backendIPs(p.Backends), " "); got != want {
					bad("%s sends %s to [%s], the ready endpoints are [%s]", o.Source, p.Port, got, want)
				}
			}
		}
	}

	// DNS as at baseline.
	baseDNS, _ := Collect[evidence.DNSValue](base, "dns", evidence.ServiceDNS)
	dns, _ := Collect[evidence.DNSValue](final, "dns", evidence.ServiceDNS)
	if len(baseDNS) > 0 && len(dns) > 0 {
		if a, b := strings.Join(sortedCopy(baseDNS[0].Value.Addresses), " "), strings.Join(sortedCopy(dns[0].Value.Addresses), " "); a != b {
			bad("DNS answers [%s], at baseline [%s]", b, a)
		}
	}

	// Every source that answered at baseline answers now; a read that
	// timed out is unknown, not a difference.
	for _, src := range baseline.Sources() {
		var silent []string
		var first evidence.Answer
		for q, a := range baseline.Answers[src] {
			if !a.Readable() {
				continue
			}
			now := snap.Get(src, q)
			switch {
			case now.State != evidence.Unreadable:
			case now.Refused():
				bad("%s answered %s at baseline but not after settle (%s)", src, q, now.Reason)
			default:
				if len(silent) == 0 || now.ReadAt.Before(first.ReadAt) {
					first = now
				}
				silent = append(silent, string(q))
			}
		}
		if len(silent) > 0 {
			sort.Strings(silent)
			c.unknowns = append(c.unknowns, fmt.Sprintf("%s answered %s at baseline, and its reads after settle did not come back (first at %s: %s)",
				src, strings.Join(silent, ", "), Stamp(first.ReadAt), first.Reason))
		}
	}

	c.problems = uniqueSorted(c.problems)
	c.unknowns = uniqueSorted(c.unknowns)
	return c
}

// leftBaseline applies convergence's exercise rule: whether the lab left
// its baseline during the run, from the earlier samples of the input, the
// pod judged, and the timeline.
func leftBaseline(earlier []evidence.Snapshot, judged evidence.Snapshot, in Input, final baselineComparison) (bool, string) {
	base := *in.Baseline
	for _, s := range earlier {
		if c := compareWithBaseline(s, base); len(c.problems) > 0 {
			return true, fmt.Sprintf("at %s: %s", Stamp(s.Taken), c.problems[0])
		}
	}
	basePods, _ := Collect[evidence.PodValue]([]evidence.Snapshot{base}, ConsistentReaders, evidence.PodObject)
	var basePod evidence.PodValue
	for _, o := range basePods {
		if o.Value.Exists {
			basePod = o.Value
			break
		}
	}
	if basePod.UID != "" && final.pod.UID != "" && (final.pod.UID != basePod.UID || final.pod.NodeName != basePod.NodeName) {
		return true, fmt.Sprintf("the pod came back as %s on %q (%s on %q at baseline)", final.pod.UID, final.pod.NodeName, basePod.UID, basePod.NodeName)
	}

	nodes := map[string]bool{}
	if basePod.NodeName != "" {
		nodes["node/"+basePod.NodeName] = true
	}
	pods := map[string]bool{}
	for _, src := range base.Sources() {
		if ok, _ := path.Match("kubelet/*", string(src)); ok {
			nodes["node/"+HostOf(src)] = true
		}
	}
	rts, _ := Collect[evidence.RuntimePodValue]([]evidence.Snapshot{base}, "cri/*", evidence.PodRunningHere)
	for _, o := range rts {
		for _, sb := range o.Value.Sandboxes {
			if sb.UID == basePod.UID && sb.Name != "" {
				pods["pod/"+sb.Namespace+"/"+sb.Name] = true
			}
		}
	}
	from, to := base.Taken, judged.Taken
	if e := in.Timeline.OfKind(FaultInjectedEvent); len(e) > 0 {
		from = e[0].At
	}
	for _, e := range in.Timeline {
		if !e.Within(from, to) {
			continue
		}
		ours := false
		switch e.Kind {
		case readyUnknownEvent, readyFalseEvent, taintAddedEvent:
			ours = nodes[e.Subject]
		case podDeletionEvent, podDeletedEvent, podCreatedEvent:
			ours = pods[e.Subject] || (basePod.UID != "" && strings.Contains(e.Detail, "uid "+basePod.UID))
		case endpointsChangedEvent:
			ours = true
		}
		if ours {
			return true, fmt.Sprintf("%s %s at %s (%s)", e.Subject, e.Kind, eventStamp(e), e.Detail)
		}
	}
	samples := fmt.Sprintf("in the %d earlier sample(s) of the input", len(earlier))
	if len(earlier) == 0 {
		samples = "in the input (the judged sample only)"
	}
	return false, fmt.Sprintf("nothing convergence reads left the baseline %s, nor on the timeline from %s to %s (worker1's Ready and taints, the stateful pod, the endpoints), and the pod is the baseline's; runtimes, kube-proxy and DNS are not on the timeline",
		samples, Stamp(from), Stamp(to))
}

func describeViews(views map[string][]string) string {
	var parts []string
	for v, srcs := range views {
		sort.Strings(srcs)
		parts = append(parts, fmt.Sprintf("%s say %s", strings.Join(srcs, ", "), v))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// backendIPs strips the ports of kube-proxy's DNAT destinations, sorted.
func backendIPs(backends []string) []string {
	var out []string
	for _, b := range backends {
		if host, _, err := net.SplitHostPort(b); err == nil {
			out = append(out, host)
		} else {
			out = append(out, b)
		}
	}
	sort.Strings(out)
	return out
}

func sortedCopy(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}
