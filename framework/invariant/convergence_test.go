package invariant

import (
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

const (
	etcd1   = evidence.Source("etcd/etcd1/linearizable")
	kubelet = evidence.Source("kubelet/worker1")
	proxy1  = evidence.Source("proxy/worker1")
	dnsSrc  = evidence.Source("dns")
)

// labView is a hand-built clean lab: the pod on node with ip, seen alike by
// every source; change adjusts the answers before they are recorded.
type labView struct {
	podNode, podUID, podIP string
	ready                  evidence.NodeReadyValue
	taints                 []evidence.TaintValue
	runtimes               map[evidence.Source]evidence.RuntimePodValue
	unreadable             map[evidence.Source]string
	proxyBackends          []string
}

func cleanLab() labView {
	return labView{
		podNode: "worker1", podUID: "u1", podIP: "10.244.1.5",
		ready:  readyTrue,
		taints: []evidence.TaintValue{},
		runtimes: map[evidence.Source]evidence.RuntimePodValue{
			cri1: runtimeWith("u1", map[string]string{"c1": running}),
			cri2: runtimeWith("", nil),
		},
		unreadable:    map[evidence.Source]string{},
		proxyBackends: []string{"10.244.1.5:8080"},
	}
}

func (l labView) record(rd *round) {
	pod := podAt(l.podUID, l.podNode, l.podIP)
	for _, src := range []evidence.Source{cp1, cp2, etcd1} {
		if why, ok := l.unreadable[src]; ok {
			for _, q := range []evidence.Question{evidence.NodeReady, evidence.NodeTaints, evidence.PodObject, evidence.ServiceEndpoints} {
				rd.Unreadable(src, q, 1.5, why)
			}
			continue
		}
		rd.Value(src, evidence.NodeReady, 0.1, l.ready, "10").
			Value(src, evidence.NodeTaints, 0.1, l.taints, "10").
			Value(src, evidence.PodObject, 0.1, pod, "11").
			Value(src, evidence.ServiceEndpoints, 0.1, ready(l.podIP), "12")
	}
	kpod := evidence.PodValue{}
	if l.podNode == "worker1" {
		kpod = pod
	}
	rd.Value(kubelet, evidence.PodObject, 0.1, kpod, "")
	for src, v := range l.runtimes {
		rd.Value(src, q, 0.2, v, "")
	}
	rd.Value(proxy1, evidence.ServiceProxyBackends, 0.2, evidence.ProxyBackendsValue{Ports: []evidence.ProxyPort{{Port: "faultline/stateful:http", Backends: l.proxyBackends}}}, "")
	rd.Value(dnsSrc, evidence.ServiceDNS, 0.1, evidence.DNSValue{Name: "stateful.faultline.svc.cluster.local", Addresses: []string{"10.96.0.20"}}, "")
}

func convergenceInput(t *testing.T, final labView) Input {
	r := newRun(t)
	cleanLab().record(r.Round(0))
	base := r.Snaps[0]
	f := newRun(t)
	final.record(f.Round(60))
	return Input{Moment: Final, Snapshots: f.Snaps, Baseline: &base}
}

func TestConvergencePreservedWhenTheLabIsBack(t *testing.T) {
	expect(t, Convergence(), convergenceInput(t, cleanLab()), verdict.Preserved, `pod u1 on "worker1"`)
	// The pod may come back elsewhere under a new UID: that is converged.
	moved := cleanLab()
	moved.podNode, moved.podUID, moved.podIP = "worker2", "u2", "10.244.2.9"
	moved.runtimes = map[evidence.Source]evidence.RuntimePodValue{cri1: runtimeWith("", nil), cri2: runtimeWith("u2", map[string]string{"c2": running})}
	moved.proxyBackends = []string{"10.244.2.9:8080"}
	expect(t, Convergence(), convergenceInput(t, moved), verdict.Preserved)
}

func TestConvergenceViolatedByWhatAFaultLeavesBehind(t *testing.T) {
	for name, c := range map[string]struct {
		change func(*labView)
		word   string
	}{
		"not ready": {func(l *labView) { l.ready = readyUnknown }, "says worker1 is not Ready"},
		"taint left": {func(l *labView) {
			l.taints = []evidence.TaintValue{{Key: "node.kubernetes.io/unreachable", Effect: "NoExecute"}}
		}, "tainted node.kubernetes.io/unreachable:NoExecute"},
		"duplicate": {func(l *labView) {
			l.runtimes[cri2] = runtimeWith("u0", map[string]string{"c0": running})
		}, "a duplicate"},
		"proxy stale": {func(l *labView) { l.proxyBackends = []string{"10.244.9.9:8080"} }, "sends faultline/stateful:http to [10.244.9.9]"},
		"source down": {func(l *labView) { l.unreadable[cp2] = "connection refused" }, "apiserver/cp2 answered worker1/ready at baseline but not after settle (connection refused)"},
	} {
		t.Run(name, func(t *testing.T) {
			l := cleanLab()
			c.change(&l)
			expect(t, Convergence(), convergenceInput(t, l), verdict.Violated, c.word)
		})
	}
}

func TestConvergenceViolatedByAStuckTerminatingPod(t *testing.T) {
	in := convergenceInput(t, cleanLab())
	pod := podAt("u1", "worker1", "10.244.1.5")
	ts := sec(30)
	pod.DeletionTimestamp = &ts
	a, _ := evidence.ValueAnswer(pod, sec(60.1), "20")
	in.Snapshots[0].Set(cp1, evidence.PodObject, a)
	expect(t, Convergence(), in, verdict.Violated, "apiserver/cp1 shows pod u1 still Terminating")
}

func TestConvergenceInsufficientWithoutTheAPIOrTheBaseline(t *testing.T) {
	l := cleanLab()
	l.unreadable[cp1], l.unreadable[cp2] = "timeout", "timeout"
	expect(t, Convergence(), convergenceInput(t, l), verdict.InsufficientData, "no API server answered")

	in := convergenceInput(t, cleanLab())
	in.Baseline = nil
	expect(t, Convergence(), in, verdict.InsufficientData, "baseline")
}

func TestConvergenceATimeoutAfterSettleIsUnknownNotADifference(t *testing.T) {
	// cp2 answered at baseline and timed out after settle: it may be back
	// or not; nothing says which.
	l := cleanLab()
	l.unreadable[cp2] = "timeout: no answer within 2s"
	expect(t, Convergence(), convergenceInput(t, l), verdict.InsufficientData, "apiserver/cp2", "timeout: no answer within 2s", "unknown")

	// A refusal is definite: the server is not back.
	l = cleanLab()
	l.unreadable[cp2] = "connection refused: dial tcp 10.0.0.12:6443"
	expect(t, Convergence(), convergenceInput(t, l), verdict.Violated, "apiserver/cp2", "connection refused")

	// A definite difference stands beside a timeout.
	l = cleanLab()
	l.unreadable[cp2] = "timeout: no answer within 2s"
	l.ready = readyUnknown
	expect(t, Convergence(), convergenceInput(t, l), verdict.Violated, "says worker1 is not Ready", "apiserver/cp2")

	// A runtime that timed out may hide a duplicate: unknown.
	in := convergenceInput(t, cleanLab())
	in.Snapshots[0].Set(cri2, q, evidence.UnreadableAnswer("timeout: ssh: i/o timeout", sec(62)))
	expect(t, Convergence(), in, verdict.InsufficientData, "cri/worker2")
}

func TestConvergenceEveryAPIServerRefusingIsNotBack(t *testing.T) {
	l := cleanLab()
	l.unreadable[cp1], l.unreadable[cp2] = "connection refused", "connection refused"
	expect(t, Convergence(), convergenceInput(t, l), verdict.Violated, "apiserver/cp1 answered worker1/ready at baseline but not after settle (connection refused)")
}

func TestConvergenceIsExercisedWhenTheLabLeftItsBaseline(t *testing.T) {
	// Nothing on the timeline, the same pod back: never challenged.
	j := expect(t, Convergence(), convergenceInput(t, cleanLab()), verdict.Preserved)
	wantExercised(t, j, false, "nothing convergence reads")

	// worker1 went NotReady during the window.
	in := convergenceInput(t, cleanLab())
	in.Timeline = evidence.Timeline{
		{At: sec(5), Source: "faultline", Kind: FaultInjectedEvent},
		{At: sec(20), Source: "apiserver/cp1", Subject: "node/worker1", Kind: "ready-unknown", Detail: "True → Unknown (NodeStatusUnknown)"},
	}
	wantExercised(t, expect(t, Convergence(), in, verdict.Preserved), true, "ready-unknown", "node/worker1")

	// Another node's, or one before the fault, does not count.
	in.Timeline = evidence.Timeline{
		{At: sec(3), Source: "apiserver/cp1", Subject: "node/worker1", Kind: "ready-unknown"},
		{At: sec(5), Source: "faultline", Kind: FaultInjectedEvent},
		{At: sec(20), Source: "apiserver/cp1", Subject: "node/worker3", Kind: "ready-unknown"},
	}
	wantExercised(t, expect(t, Convergence(), in, verdict.Preserved), false)

	// The stateful pod got a deletionTimestamp.
	in.Timeline = evidence.Timeline{{At: sec(20), Source: "apiserver/cp1", Subject: "pod/faultline/stateful-0", Kind: "pod-deletion-set", Detail: "uid u1, deletionTimestamp 2026-11-01T10:00:20Z"}}
	wantExercised(t, expect(t, Convergence(), in, verdict.Preserved), true, "pod-deletion-set")

	// The pod came back elsewhere: it left its baseline whatever the
	// timeline says.
	moved := cleanLab()
	moved.podNode, moved.podUID, moved.podIP = "worker2", "u2", "10.244.2.9"
	moved.runtimes = map[evidence.Source]evidence.RuntimePodValue{cri1: runtimeWith("", nil), cri2: runtimeWith("u2", map[string]string{"c2": running})}
	moved.proxyBackends = []string{"10.244.2.9:8080"}
	wantExercised(t, expect(t, Convergence(), convergenceInput(t, moved), verdict.Preserved), true, "u2", "u1")

	// An earlier sample of the input that was not back.
	r := newRun(t)
	cleanLab().record(r.Round(0))
	notReady := cleanLab()
	notReady.ready = readyUnknown
	notReady.record(r.Round(40))
	cleanLab().record(r.Round(60))
	in = r.input(Final)
	wantExercised(t, expect(t, Convergence(), in, verdict.Preserved), true, "says worker1 is not Ready")

	l := cleanLab()
	l.ready = readyUnknown
	wantExercised(t, expect(t, Convergence(), convergenceInput(t, l), verdict.Violated), true)
}

// A replayed event counts by when the cluster recorded it: a Ready change
// from before the fault that a relisting delivered after it did not come
// from the run, and one the relisting delivered late did.
func TestConvergenceReplayedEventsCountByTheirClusterTime(t *testing.T) {
	in := convergenceInput(t, cleanLab())
	before := evidence.Event{At: sec(20), Source: "apiserver/cp1", Subject: "node/worker1", Kind: "ready-unknown", Replayed: true}.
		WithCluster(sec(2), "status.conditions[Ready].lastTransitionTime", evidence.Seconds)
	in.Timeline = evidence.Timeline{{At: sec(5), Source: "faultline", Kind: FaultInjectedEvent}, before}
	wantExercised(t, expect(t, Convergence(), in, verdict.Preserved), false)

	// The same event live (seen as it happened) counts at its seen time.
	live := before
	live.Replayed = false
	in.Timeline = evidence.Timeline{{At: sec(5), Source: "faultline", Kind: FaultInjectedEvent}, live}
	wantExercised(t, expect(t, Convergence(), in, verdict.Preserved), true, "ready-unknown")

	during := evidence.Event{At: sec(20), Source: "apiserver/cp1", Subject: "node/worker1", Kind: "ready-unknown", Replayed: true}.
		WithCluster(sec(8), "status.conditions[Ready].lastTransitionTime", evidence.Seconds)
	in.Timeline = evidence.Timeline{{At: sec(5), Source: "faultline", Kind: FaultInjectedEvent}, during}
	wantExercised(t, expect(t, Convergence(), in, verdict.Preserved), true, "replayed by a relisting; status.conditions[Ready].lastTransitionTime")
}
