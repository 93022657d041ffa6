//go:build lab

// Integration tests of the sources, the sampler and the timeline on a real
// local lab of their own (named evt, with subnets no other test uses). The
// lab backend is linked only into this external test package: the framework
// itself never imports a backend.
//
//	sudo go test -count=1 -tags lab -run TestEvidenceOnLocalLab -v -timeout 60m ./framework/evidence/sampler/
//
// With FAULTLINE_CAPTURE=1 it also writes what worker1's crictl,
// iptables-save and kubelet /pods really said to the source package's
// testdata.
package sampler_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/fixtures"
	// The images the local lab loads into its nodes.
	_ "github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/evidence/watch"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
)

// The lab11 shape made smaller for a shared machine: three hosts each
// running an etcd member and an API server behind a virtual address, and
// three workers.
const topology = `name: evt
kind: local
lab: true
stateDir: %s
kubernetes:
  version: v1.36.3
  etcdVersion: v3.6.8
  timerProfile: kubernetes-defaults
network:
  management: 10.231.51.0/24
  pods: 10.51.0.0/16
  services: 10.250.51.0/24
  virtualIP: 10.231.51.10
hosts:
  - {name: cp1, roles: [etcd, control-plane], address: 10.231.51.21}
  - {name: cp2, roles: [etcd, control-plane], address: 10.231.51.22}
  - {name: cp3, roles: [etcd, control-plane], address: 10.231.51.23}
  - {name: worker1, roles: [worker], address: 10.231.51.31}
  - {name: worker2, roles: [worker], address: 10.231.51.32}
  - {name: worker3, roles: [worker], address: 10.231.51.33}
`

func openLab(t *testing.T) lab.Provisioner {
	base := os.Getenv("FAULTLINE_STATE_DIR")
	if base == "" {
		base = "/var/tmp"
	}
	dir, err := os.MkdirTemp(base, "faultline-evt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "evt.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(topology, filepath.Join(dir, "state"))), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := lab.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := l.(lab.Provisioner)
	if !ok {
		t.Fatal("the local lab is not a Provisioner")
	}
	return p
}

// installFixtures installs the fixtures as the suites do (the stateful
// pod required on worker1, the informer fixture off it) and returns the
// stateful pod once it is ready with its endpoint.
func installFixtures(ctx context.Context, tb testing.TB, l lab.Lab) *corev1.Pod {
	tb.Helper()
	s := evidence.DefaultSubjects
	path, err := l.Kubeconfig("")
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		tb.Fatal(err)
	}
	o := fixtures.Options{StatefulNode: s.Node, StatefulNodeRequired: true, OrphanNode: "worker2", WriterNode: "worker3", Timeout: 5 * time.Minute}
	if c := l.Config(); c != nil && c.Network.VirtualIP != "" {
		port := c.Network.APIServerPort
		if port == 0 {
			port = 6443
		}
		o.APIServer = net.JoinHostPort(c.Network.VirtualIP, strconv.Itoa(port))
	}
	// As the suites do: Install is idempotent, and right after a lab comes
	// up it can fail for a moment (a namespace whose default service
	// account the controller-manager has not made yet).
	if err := lab.WaitFor(ctx, "the fixtures installed", 6*time.Minute, 2*time.Second, func(ctx context.Context) (bool, error) {
		err := fixtures.Install(ctx, cfg, o)
		return err == nil, err
	}); err != nil {
		tb.Fatal(err)
	}
	kc, _, err := source.ClientFromKubeconfig(path, 10*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	var pod *corev1.Pod
	err = lab.WaitFor(ctx, "the stateful pod ready with its endpoint", 3*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		p, err := kc.CoreV1().Pods(s.PodNamespace).Get(ctx, s.PodName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if v := source.PodOf(p); !v.Ready {
			return false, fmt.Errorf("pod %s on %q phase %s not ready", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
		pod = p
		eps, err := kc.DiscoveryV1().EndpointSlices(s.ServiceNamespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + s.ServiceName})
		if err != nil {
			return false, err
		}
		if v := source.EndpointsOf(eps.Items); len(v.Ready) != 1 {
			return false, fmt.Errorf("endpoints %+v", v)
		}
		return true, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return pod
}

func decode[T any](t *testing.T, snap evidence.Snapshot, src evidence.Source, q evidence.Question) T {
	t.Helper()
	var v T
	a := snap.Get(src, q)
	if err := a.Decode(&v); err != nil {
		t.Fatalf("%s %s: %v", src, q, err)
	}
	return v
}

// capture writes a command's real output on a host to the source
// package's testdata, when FAULTLINE_CAPTURE=1.
func capture(ctx context.Context, t *testing.T, h lab.Host, cmd, file string) {
	if os.Getenv("FAULTLINE_CAPTURE") != "1" {
		return
	}
	res, err := h.Run(ctx, cmd)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("capturing %q on %s: %v %s", cmd, h.Name(), err, res.Stderr)
	}
	if err := os.WriteFile(filepath.Join("..", "source", "testdata", file), []byte(res.Stdout), 0o644); err != nil {
		t.Fatal(err)
	}
}

// captureKubeletPods writes what the kubelet's /pods really said, when
// FAULTLINE_CAPTURE=1.
func captureKubeletPods(ctx context.Context, t *testing.T, l lab.Lab, host string) {
	if os.Getenv("FAULTLINE_CAPTURE") != "1" {
		return
	}
	url, tlsConfig, err := l.(lab.KubeletAccess).KubeletClientConfig(host)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 10 * time.Second}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/pods", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("kubelet /pods: %s %v", resp.Status, err)
	}
	if err := os.WriteFile(filepath.Join("..", "source", "testdata", "kubelet", "pods-"+host+".json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEvidenceOnLocalLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	// With -v an error is printed where it happens, amid minutes of log
	// and client-go's own lines, and the FAIL line at the end stands
	// alone; the recap, registered first so that it runs last, repeats
	// every error right above it.
	var failures []string
	errorf := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		failures = append(failures, msg)
		t.Error(msg)
	}
	t.Cleanup(func() {
		if len(failures) > 0 {
			t.Logf("recap of the %d errors above:\n  %s", len(failures), strings.Join(failures, "\n  "))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	l := openLab(t)
	t.Cleanup(func() {
		if err := l.Down(context.Background()); err != nil {
			errorf("down: %v", err)
		}
		out, _ := exec.Command("ip", "netns", "list").Output()
		if strings.Contains(string(out), "fl-evt-") {
			errorf("network namespaces of lab evt left after down:\n%s", out)
		}
	})
	start := time.Now()
	if err := l.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("lab up in %s", time.Since(start).Round(time.Second))

	s := evidence.DefaultSubjects
	vipConfig, err := l.Kubeconfig("")
	if err != nil {
		t.Fatal(err)
	}
	kc, _, err := source.ClientFromKubeconfig(vipConfig, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pod := installFixtures(ctx, t, l)
	informers, err := kc.CoreV1().Pods(source.InformerNamespace).List(ctx, metav1.ListOptions{LabelSelector: source.InformerSelector})
	if err != nil || len(informers.Items) != 1 {
		t.Fatalf("informer fixture pods: %v %v", informers, err)
	}
	if n := informers.Items[0].Spec.NodeName; n == s.Node {
		errorf("the informer fixture runs on %s, the node scenarios fault", n)
	} else {
		t.Logf("informer fixture on %s", n)
	}

	smp := sampler.New(sampler.Options{Watch: watch.Options{PollEvery: 500 * time.Millisecond}})
	defer smp.Close()
	snap, events, err := smp.Sample(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[0].Kind != "timeline-started" {
		errorf("first sample's events: %+v", events)
	}
	t.Logf("sources: %v", smp.Sources())

	// Every deployable source answers every question it can (twelve, the
	// informer fixture among them); DNS is not deployed, and says so. The
	// first round also dials every SSH connection, and on a loaded machine
	// one round may run into a timeout: the claim is that a round comes
	// in which all answer, within a few, and what missed before is logged.
	deployable := []evidence.Source{"apiserver/cp1", "apiserver/cp2", "apiserver/cp3", "apiserver/vip",
		"etcd/cp1/serializable", "etcd/cp1/linearizable", "kubelet/worker1",
		"cri/worker1", "cri/worker2", "cri/worker3", "proxy/worker1", "informer"}
	missing := func(snap evidence.Snapshot) []string {
		var out []string
		for _, src := range deployable {
			qs := snap.Answers[src]
			if len(qs) == 0 {
				out = append(out, fmt.Sprintf("source %s missing", src))
			}
			for q, a := range qs {
				if a.State == evidence.Unreadable {
					out = append(out, fmt.Sprintf("%s %s unreadable: %s", src, q, a.Reason))
				}
			}
		}
		return out
	}
	for _, src := range []evidence.Source{"dns"} {
		for q, a := range snap.Answers[src] {
			if a.State != evidence.NotAsked && (a.State != evidence.Unreadable || !strings.HasPrefix(a.Reason, "not deployed")) {
				errorf("%s %s = %+v, want unreadable not deployed", src, q, a)
			}
		}
	}

	// They agree on a clean lab, once it has settled: kube-proxy on a
	// loaded machine may program the new service a few seconds after its
	// endpoints exist, and that lag is evidence, not a fault of the test.
	objectSources := []evidence.Source{"apiserver/cp1", "apiserver/cp2", "apiserver/cp3", "apiserver/vip", "etcd/cp1/serializable", "etcd/cp1/linearizable", "informer"}
	disagreements := func(snap evidence.Snapshot) []string {
		var out []string
		check := func(src evidence.Source, q evidence.Question, v any, ok func() bool) {
			if err := snap.Get(src, q).Decode(v); err != nil {
				out = append(out, fmt.Sprintf("%s %s: %v", src, q, err))
			} else if !ok() {
				out = append(out, fmt.Sprintf("%s %s: %+v", src, q, v))
			}
		}
		for _, src := range objectSources {
			var r evidence.NodeReadyValue
			check(src, evidence.NodeReady, &r, func() bool { return r.Status == "True" })
			var p evidence.PodValue
			check(src, evidence.PodObject, &p, func() bool { return p.UID == string(pod.UID) && p.NodeName == s.Node && p.Ready })
			var e evidence.EndpointsValue
			check(src, evidence.ServiceEndpoints, &e, func() bool { return fmt.Sprint(e.Ready) == "["+pod.Status.PodIP+"]" })
			var le evidence.LeaseValue
			check(src, evidence.NodeLease, &le, func() bool { return le.HolderIdentity == s.Node })
		}
		var kp evidence.PodValue
		check("kubelet/worker1", evidence.PodObject, &kp, func() bool { return kp.UID == string(pod.UID) })
		var h evidence.KubeletHealthValue
		check("kubelet/worker1", evidence.KubeletHealth, &h, func() bool { return h.StatusCode == 200 && h.Body == "ok" })
		for _, w := range []string{"worker1", "worker2", "worker3"} {
			var rp evidence.RuntimePodValue
			check(evidence.Source("cri/"+w), evidence.PodRunningHere, &rp, func() bool {
				if w != s.Node {
					return !rp.Running
				}
				return rp.Running && len(rp.Sandboxes) == 1 && rp.Sandboxes[0].UID == string(pod.UID)
			})
		}
		var pb evidence.ProxyBackendsValue
		check("proxy/worker1", evidence.ServiceProxyBackends, &pb, func() bool {
			return len(pb.Ports) == 1 && fmt.Sprint(pb.Ports[0].Backends) == "["+pod.Status.PodIP+":8080]"
		})
		return out
	}
	const tries = 30
	for round := 1; ; round++ {
		problems := append(missing(snap), disagreements(snap)...)
		if len(problems) == 0 {
			t.Logf("all twelve deployable sources answered and agreed in round %d", round)
			break
		}
		if round == tries {
			t.Fatalf("no round of %d in which every deployable source answered and all agreed; the last:\n  %s", tries, strings.Join(problems, "\n  "))
		}
		t.Logf("round %d: %d problems, first: %s", round, len(problems), problems[0])
		time.Sleep(time.Second)
		if snap, _, err = smp.Sample(ctx, l); err != nil {
			t.Fatal(err)
		}
	}

	worker1, err := l.Host(s.Node)
	if err != nil {
		t.Fatal(err)
	}
	capture(ctx, t, worker1, "crictl pods -o json", "crictl/pods-worker1.json")
	capture(ctx, t, worker1, "crictl ps -a -o json", "crictl/ps-worker1.json")
	capture(ctx, t, worker1, "iptables-save -t nat && iptables-save -t filter", "iptables/worker1-iptables-save.txt")
	captureKubeletPods(ctx, t, l, s.Node)

	// One snapshot round with every source answering: a benchmark, whose
	// figure is logged, not asserted.
	roundTimes := func(n int) (p50, p95 time.Duration) {
		var d []time.Duration
		perSource := map[evidence.Source][]time.Duration{}
		for range n {
			t0 := time.Now()
			snap, _, err := smp.Sample(ctx, l)
			if err != nil {
				t.Fatal(err)
			}
			d = append(d, time.Since(t0))
			for src, latest := range lastReads(snap) {
				perSource[src] = append(perSource[src], latest)
			}
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		var parts []string
		for src, ds := range perSource {
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			parts = append(parts, fmt.Sprintf("%s p50 %s p95 %s", src, ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)*95/100].Round(time.Millisecond)))
		}
		sort.Strings(parts)
		t.Logf("per source:\n  %s", strings.Join(parts, "\n  "))
		return d[n/2], d[n*95/100]
	}
	p50, p95 := roundTimes(40)
	t.Logf("BENCHMARK one snapshot round, all sources answering: p50 %s p95 %s (40 rounds)", p50, p95)

	// One API server stops: its source is unreadable within its timeout
	// while every other source answers in the same round.
	// Not the holder of the virtual address, whose source must keep
	// answering.
	var cp2 lab.Host
	for _, name := range []string{"cp2", "cp3", "cp1"} {
		h, _ := l.Host(name)
		res, err := h.Run(ctx, "ip -o addr show")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Stdout, " "+l.Config().Network.VirtualIP+"/") {
			cp2 = h
			break
		}
	}
	stoppedSource := evidence.Source("apiserver/" + cp2.Name())
	if err := cp2.StopService(ctx, lab.ServiceAPIServer); err != nil {
		t.Fatal(err)
	}
	// Every round: the stopped server never answers, and is unreadable
	// within its timeout. Within a few rounds (a loaded machine may time
	// out a healthy source in any one round) comes one in which every
	// other source answers.
	for round := 1; ; round++ {
		snap, _, err = smp.Sample(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		for q, a := range snap.Answers[stoppedSource] {
			if a.State == evidence.Answered {
				errorf("a stopped API server answered %s", q)
			} else if a.State == evidence.Unreadable {
				if a.ReadAt.Sub(snap.Taken) > evidence.DefaultReadTimeout+time.Second {
					errorf("%s %s unreadable only after %s", stoppedSource, q, a.ReadAt.Sub(snap.Taken))
				}
				if round == 1 {
					t.Logf("%s %s: %s", stoppedSource, q, a.Reason)
				}
			}
		}
		var others []string
		for _, src := range deployable {
			if src == stoppedSource {
				continue
			}
			for q, a := range snap.Answers[src] {
				if a.State == evidence.Unreadable {
					others = append(others, fmt.Sprintf("%s %s unreadable: %s", src, q, a.Reason))
				}
			}
		}
		if len(others) == 0 {
			t.Logf("with %s stopped, every other source answered in round %d", stoppedSource, round)
			break
		}
		if round == 5 {
			errorf("with %s stopped, no round of 5 in which every other source answered; the last:\n  %s", stoppedSource, strings.Join(others, "\n  "))
			break
		}
		t.Logf("with %s stopped, round %d: %d other answers unreadable, first: %s", stoppedSource, round, len(others), others[0])
	}
	p50, p95 = roundTimes(20)
	t.Logf("BENCHMARK one snapshot round, one API server stopped: p50 %s p95 %s (20 rounds)", p50, p95)
	if err := cp2.StartService(ctx, lab.ServiceAPIServer); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	if err := lab.WaitFor(ctx, string(stoppedSource)+" answering again", 3*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		snap, _, err := smp.Sample(ctx, l)
		if err != nil {
			return false, err
		}
		a := snap.Get(stoppedSource, evidence.NodeReady)
		return a.Readable(), fmt.Errorf("%s", a.Reason)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s answered again %s after its start", stoppedSource, time.Since(restarted).Round(time.Second))

	// The kubelet of worker1 freezes: the timeline shows lease renewals
	// stopping, Ready=Unknown, then the unreachable taints, in that order.
	smp.Sample(ctx, l) // drain what came before
	if err := worker1.Signal(ctx, lab.ServiceKubelet, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	defer worker1.Signal(context.Background(), lab.ServiceKubelet, syscall.SIGCONT)
	var tl evidence.Timeline
	var window []evidence.Snapshot
	seen := func(src evidence.Source, subject, kind, detailPrefix string) (evidence.Event, bool) {
		for _, e := range tl {
			if e.Source == src && e.Subject == subject && e.Kind == kind && strings.HasPrefix(e.Detail, detailPrefix) {
				return e, true
			}
		}
		return evidence.Event{}, false
	}
	watched := evidence.Source("apiserver/cp1")
	for time.Since(frozen) < 3*time.Minute {
		snap, events, err := smp.Sample(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		window = append(window, snap)
		tl = append(tl, events...)
		_, a := seen(watched, "node/worker1", watch.KindTaintAdded, "node.kubernetes.io/unreachable:NoExecute")
		_, b := seen(watched, "node/worker1", watch.KindTaintAdded, "node.kubernetes.io/unreachable:NoSchedule")
		// The polled servers see the change up to a poll (and a slow
		// request) later than the watched one: wait for them too.
		polled := true
		for _, src := range []evidence.Source{"apiserver/cp2", "apiserver/cp3", "apiserver/vip"} {
			if _, ok := seen(src, "node/worker1", watch.KindReadyUnknown, ""); !ok {
				polled = false
			}
		}
		if a && b && polled {
			break
		}
		time.Sleep(time.Second)
	}
	stopped, ok1 := seen(watched, "lease/kube-node-lease/worker1", watch.KindLeaseStopped, "")
	unknown, ok2 := seen(watched, "node/worker1", watch.KindReadyUnknown, "")
	noSched, ok3 := seen(watched, "node/worker1", watch.KindTaintAdded, "node.kubernetes.io/unreachable:NoSchedule")
	noExec, ok4 := seen(watched, "node/worker1", watch.KindTaintAdded, "node.kubernetes.io/unreachable:NoExecute")
	if !(ok1 && ok2 && ok3 && ok4) {
		t.Fatalf("timeline lacks an expected event (stopped %v, unknown %v, NoSchedule %v, NoExecute %v):\n%s", ok1, ok2, ok3, ok4, dump(tl))
	}
	if !(stopped.At.Before(unknown.At) && !unknown.At.After(noSched.At) && !unknown.At.After(noExec.At)) {
		errorf("out of order:\n%s", dump(tl))
	}
	t.Logf("after SIGSTOP: renewals stopped +%s, Ready=Unknown +%s, unreachable NoSchedule +%s, NoExecute +%s",
		stopped.At.Sub(frozen).Round(time.Millisecond), unknown.At.Sub(frozen).Round(time.Millisecond),
		noSched.At.Sub(frozen).Round(time.Millisecond), noExec.At.Sub(frozen).Round(time.Millisecond))
	for _, src := range []evidence.Source{"apiserver/cp2", "apiserver/cp3", "apiserver/vip"} {
		if _, ok := seen(src, "node/worker1", watch.KindReadyUnknown, ""); !ok {
			errorf("polled source %s did not see Ready=Unknown", src)
		}
	}
	last := window[len(window)-1]
	if a := last.Get("kubelet/worker1", evidence.PodObject); a.State != evidence.Unreadable || !strings.HasPrefix(a.Reason, "timeout") {
		errorf("a frozen kubelet's /pods: %+v", a)
	}
	if rp := decode[evidence.RuntimePodValue](t, last, "cri/worker1", evidence.PodRunningHere); !rp.Running {
		errorf("with its kubelet frozen the pod should still run on worker1: %+v", rp)
	}

	if err := worker1.Signal(ctx, lab.ServiceKubelet, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for time.Since(frozen) < 6*time.Minute {
		_, events, err := smp.Sample(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		tl = append(tl, events...)
		if _, ok := seen(watched, "node/worker1", watch.KindReadyTrue, ""); ok {
			break
		}
		time.Sleep(time.Second)
	}
	if _, ok := seen(watched, "lease/kube-node-lease/worker1", watch.KindLeaseResumed, ""); !ok {
		errorf("no renewals resumed after SIGCONT:\n%s", dump(tl))
	}
	if _, ok := seen(watched, "node/worker1", watch.KindReadyTrue, ""); !ok {
		errorf("no Ready=True after SIGCONT:\n%s", dump(tl))
	}

	// The run's evidence, as the scenario engine writes it, reads back.
	rec := evidence.Record{Baseline: &window[0], Window: window, Timeline: evidence.Timeline(tl).Sorted()}
	path := filepath.Join(t.TempDir(), "evidence.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.WriteJSONL(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rf, _ := os.Open(path)
	back, err := evidence.ReadJSONL(rf)
	rf.Close()
	if err != nil || len(back.Window) != len(window) || len(back.Timeline) != len(tl) {
		errorf("evidence read back: %d snapshots, %d events, %v", len(back.Window), len(back.Timeline), err)
	}
	t.Logf("timeline:\n%s", dump(rec.Timeline))
}

func dump(tl evidence.Timeline) string {
	var b strings.Builder
	for _, e := range evidence.Timeline(tl).Sorted() {
		fmt.Fprintf(&b, "%s %-22s %-34s %-24s %s\n", e.At.Format("15:04:05.000"), e.Source, e.Subject, e.Kind, e.Detail)
	}
	return b.String()
}
