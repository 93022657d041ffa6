package controls

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// runtimeContainer is one container a fake host's runtime holds.
type runtimeContainer struct {
	id, sandbox, namespace, pod, uid, state string
}

// fakeHost is a lab.Host that runs nothing: it keeps service states and a
// container runtime in memory, answers the crictl commands the control
// runs, and writes every service operation and crictl stop to its lab's
// log, so tests see the order across hosts.
type fakeHost struct {
	lab   *fakeLab
	name  string
	roles []lab.Role

	services   map[string]string
	containers []runtimeContainer
	// stubborn containers ignore crictl stop.
	stubborn bool
	// failing maps a command prefix to the exit code it fails with.
	failing map[string]int
	// unreachable fails every command as a broken SSH connection would.
	unreachable bool
}

func (h *fakeHost) Name() string                   { return h.name }
func (h *fakeHost) Roles() []lab.Role              { return h.roles }
func (h *fakeHost) HasRole(r lab.Role) bool        { return slices.Contains(h.roles, r) }
func (h *fakeHost) Address() string                { return "10.0.0." + h.name }
func (h *fakeHost) PowerOff(context.Context) error { return errors.New("not in this test") }
func (h *fakeHost) PowerOn(context.Context) error  { return errors.New("not in this test") }
func (h *fakeHost) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("not in this test")
}
func (h *fakeHost) Signal(context.Context, string, syscall.Signal) error {
	return errors.New("not in this test")
}

func (h *fakeHost) StopService(_ context.Context, name string) error {
	h.lab.logf("%s: stop %s", h.name, name)
	h.lab.mu.Lock()
	defer h.lab.mu.Unlock()
	h.services[name] = "stopped"
	return nil
}

func (h *fakeHost) StartService(_ context.Context, name string) error {
	h.lab.logf("%s: start %s", h.name, name)
	h.lab.mu.Lock()
	defer h.lab.mu.Unlock()
	h.services[name] = "running"
	return nil
}

func (h *fakeHost) Services(context.Context) ([]lab.ServiceState, error) {
	h.lab.mu.Lock()
	defer h.lab.mu.Unlock()
	var out []lab.ServiceState
	for name, state := range h.services {
		out = append(out, lab.ServiceState{Name: name, State: state})
	}
	return out, nil
}

func (h *fakeHost) Run(_ context.Context, cmd string) (lab.Result, error) {
	if h.unreachable {
		return lab.Result{}, errors.New("ssh: connection refused")
	}
	for prefix, code := range h.failing {
		if strings.HasPrefix(cmd, prefix) {
			return lab.Result{ExitCode: code, Stderr: "runtime says no"}, nil
		}
	}
	h.lab.mu.Lock()
	defer h.lab.mu.Unlock()
	switch {
	case cmd == "crictl pods -o json":
		return lab.Result{Stdout: h.podsJSON()}, nil
	case cmd == "crictl ps -a -o json":
		return lab.Result{Stdout: h.containersJSON()}, nil
	case strings.HasPrefix(cmd, crictlStop):
		h.lab.log = append(h.lab.log, h.name+": crictl stop "+strings.TrimPrefix(cmd, crictlStop))
		for _, id := range strings.Fields(strings.TrimPrefix(cmd, crictlStop)) {
			for i := range h.containers {
				if h.containers[i].id == id && !h.stubborn {
					h.containers[i].state = "CONTAINER_EXITED"
				}
			}
		}
		return lab.Result{}, nil
	}
	return lab.Result{ExitCode: 127, Stderr: "unexpected command " + cmd}, nil
}

// podsJSON and containersJSON print what crictl prints (protojson).
func (h *fakeHost) podsJSON() string {
	type meta struct {
		Name      string `json:"name"`
		UID       string `json:"uid"`
		Namespace string `json:"namespace"`
	}
	type sandbox struct {
		ID       string `json:"id"`
		Metadata meta   `json:"metadata"`
		State    string `json:"state"`
	}
	var items []sandbox
	seen := map[string]bool{}
	for _, c := range h.containers {
		if !seen[c.sandbox] {
			seen[c.sandbox] = true
			items = append(items, sandbox{ID: c.sandbox, Metadata: meta{Name: c.pod, UID: c.uid, Namespace: c.namespace}, State: "SANDBOX_READY"})
		}
	}
	b, _ := json.Marshal(map[string]any{"items": items})
	return string(b)
}

func (h *fakeHost) containersJSON() string {
	var items []map[string]any
	for _, c := range h.containers {
		items = append(items, map[string]any{
			"id": c.id, "podSandboxId": c.sandbox, "state": c.state, "metadata": map[string]string{"name": "app"},
			"labels": map[string]string{labelPodName: c.pod, labelPodNamespace: c.namespace, labelPodUID: c.uid},
		})
	}
	b, _ := json.Marshal(map[string]any{"containers": items})
	return string(b)
}

// The pod labels the kubelet puts on containers.
const (
	labelPodName      = "io.kubernetes.pod.name"
	labelPodNamespace = "io.kubernetes.pod.namespace"
	labelPodUID       = "io.kubernetes.pod.uid"
)

// fakeLab is three control-plane hosts and two workers, every service
// running; worker1 runs two live containers of faultline/stateful-0, an
// exited one of an earlier sandbox, and a container of another pod.
type fakeLab struct {
	mu    sync.Mutex
	log   []string
	hosts []*fakeHost
}

func newFakeLab() *fakeLab {
	l := &fakeLab{}
	for _, name := range []string{"cp1", "cp2", "cp3"} {
		l.hosts = append(l.hosts, &fakeHost{lab: l, name: name, roles: []lab.Role{lab.RoleControlPlane},
			services: map[string]string{lab.ServiceAPIServer: "running", lab.ServiceControllerManager: "running",
				lab.ServiceScheduler: "running", lab.ServiceKubelet: "running"}})
	}
	for _, name := range []string{"worker1", "worker2"} {
		l.hosts = append(l.hosts, &fakeHost{lab: l, name: name, roles: []lab.Role{lab.RoleWorker},
			services: map[string]string{lab.ServiceKubelet: "running", lab.ServiceContainerd: "running", lab.ServiceKubeProxy: "running"}})
	}
	l.host("worker1").containers = []runtimeContainer{
		{id: "old", sandbox: "s0", namespace: "faultline", pod: "stateful-0", uid: "u0", state: "CONTAINER_EXITED"},
		{id: "app", sandbox: "s1", namespace: "faultline", pod: "stateful-0", uid: "u1", state: containerRunning},
		{id: "sidecar", sandbox: "s1", namespace: "faultline", pod: "stateful-0", uid: "u1", state: containerRunning},
		{id: "web", sandbox: "s9", namespace: "faultline", pod: "web-a", uid: "u9", state: containerRunning},
	}
	return l
}

func (l *fakeLab) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, fmt.Sprintf(format, args...))
}

func (l *fakeLab) takeLog() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.log
	l.log = nil
	return out
}

func (l *fakeLab) host(name string) *fakeHost {
	for _, h := range l.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

func (l *fakeLab) Info() lab.Info      { return lab.Info{Name: "fake", Kind: "fake"} }
func (l *fakeLab) Config() *lab.Config { return nil }
func (l *fakeLab) Hosts() []lab.Host {
	var out []lab.Host
	for _, h := range l.hosts {
		out = append(out, h)
	}
	return out
}
func (l *fakeLab) Host(name string) (lab.Host, error) {
	if h := l.host(name); h != nil {
		return h, nil
	}
	return nil, fmt.Errorf("fake lab has no host %q", name)
}
func (l *fakeLab) Kubeconfig(string) (string, error) {
	return "", errors.New("no kubeconfig in this test")
}
func (l *fakeLab) StateDir() string { return "" }
func (l *fakeLab) Timers() (lab.Timers, error) {
	return lab.Timers{}, lab.Unsupported("fake", "timers", "it runs no cluster")
}
func (l *fakeLab) Reset(context.Context) error                { return errors.New("not in this test") }
func (l *fakeLab) Status(context.Context) (lab.Status, error) { return lab.Status{}, nil }
func (l *fakeLab) Close() error                               { return nil }

// statefulPod is the pod as the API shows it.
func statefulPod(node string, ready bool) *corev1.Pod {
	p := webPod("stateful-0", ready, map[string]string{"app": "stateful"})
	p.Spec.NodeName = node
	p.UID = "u1"
	return p
}

func deadEndpointOnWorker1() fault.Fault {
	return DeadEndpoint("worker1", PodRef{Namespace: "faultline", Name: "stateful-0"})
}

func TestDeadEndpointStopsControllersThenKubeletThenThePodsContainers(t *testing.T) {
	useFake(t, fake.NewClientset(statefulPod("worker1", true)))
	l := newFakeLab()
	ctx := context.Background()
	f := deadEndpointOnWorker1()

	if e, err := f.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("probe before inject: %+v, %v; want not observed", e, err)
	}
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	// Every controller-manager before the kubelet, the kubelet before the
	// containers, and only the live containers of this pod: not the
	// exited one, not another pod's, no other service, no other host.
	want := []string{
		"cp1: stop kube-controller-manager", "cp2: stop kube-controller-manager", "cp3: stop kube-controller-manager",
		"worker1: stop kubelet", "worker1: crictl stop app sidecar",
	}
	if got := l.takeLog(); !slices.Equal(got, want) {
		t.Errorf("inject did\n  %v\nwant\n  %v", got, want)
	}
	if st := l.host("worker1").containers[3].state; st != containerRunning {
		t.Errorf("another pod's container is %s after inject", st)
	}
	e, err := f.Probe(ctx, l)
	if err != nil || !e.Observed {
		t.Errorf("probe after inject: %+v, %v; want observed", e, err)
	}
	for _, part := range []string{"kube-controller-manager down on cp1, cp2, cp3", "kubelet on worker1 stopped", "cri/worker1 runs none of the 3 containers of pod faultline/stateful-0"} {
		if !strings.Contains(e.Detail, part) {
			t.Errorf("probe detail %q lacks %q", e.Detail, part)
		}
	}

	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	// The kubelet first: the node lifecycle controller must find the node
	// renewing its lease when it starts.
	want = []string{
		"worker1: start kubelet",
		"cp1: start kube-controller-manager", "cp2: start kube-controller-manager", "cp3: start kube-controller-manager",
	}
	if got := l.takeLog(); !slices.Equal(got, want) {
		t.Errorf("heal did\n  %v\nwant\n  %v", got, want)
	}
	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := l.takeLog(); len(got) != 0 {
		t.Errorf("a second heal did %v, want nothing", got)
	}
	if e, err := f.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("probe after heal: %+v, %v; want not observed (the controller-managers run)", e, err)
	}
}

func TestDeadEndpointHealsFromItsLedgerEntryInAFreshProcess(t *testing.T) {
	useFake(t, fake.NewClientset(statefulPod("worker1", true)))
	l := newFakeLab()
	ctx := context.Background()
	f := deadEndpointOnWorker1()
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.takeLog()

	got, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind() != KindDeadEndpoint || got.Class() != "crash-stop" || !bytes.Equal(got.Params(), f.Params()) {
		t.Errorf("decoded %s %s %s, want %s crash-stop %s", got.Kind(), got.Class(), got.Params(), KindDeadEndpoint, f.Params())
	}
	if err := got.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, h := range l.hosts {
		for svc, state := range h.services {
			if state != "running" {
				t.Errorf("after the decoded heal %s on %s is %s", svc, h.name, state)
			}
		}
	}
	if log := l.takeLog(); len(log) != 4 {
		t.Errorf("decoded heal did %v, want the kubelet and three controller-managers started", log)
	}
}

func TestDeadEndpointHealOfAFaultNeverInjectedDoesNothing(t *testing.T) {
	l := newFakeLab()
	if err := deadEndpointOnWorker1().Heal(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	if got := l.takeLog(); len(got) != 0 {
		t.Errorf("heal did %v, want nothing", got)
	}
}

func TestDeadEndpointRefusesBeforeStoppingAnything(t *testing.T) {
	deleting := statefulPod("worker1", true)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	for name, tc := range map[string]struct {
		pod    *corev1.Pod
		change func(*fakeLab)
		node   string
		want   string
	}{
		"pod on another node":           {pod: statefulPod("worker2", true), want: `runs on "worker2", not on worker1`},
		"pod not ready":                 {pod: statefulPod("worker1", false), want: "is not Ready"},
		"pod being deleted":             {pod: deleting, want: "is being deleted"},
		"no pod":                        {want: "reading pod faultline/stateful-0"},
		"unknown node":                  {pod: statefulPod("worker9", true), node: "worker9", want: `host "worker9"`},
		"a controller-manager stopped":  {pod: statefulPod("worker1", true), change: func(l *fakeLab) { l.host("cp2").services[lab.ServiceControllerManager] = "stopped" }, want: "kube-controller-manager on cp2 is already stopped"},
		"the kubelet stopped":           {pod: statefulPod("worker1", true), change: func(l *fakeLab) { l.host("worker1").services[lab.ServiceKubelet] = "exited" }, want: "kubelet on worker1 is already exited"},
		"no container running":          {pod: statefulPod("worker1", true), change: func(l *fakeLab) { l.host("worker1").containers = l.host("worker1").containers[:1] }, want: "runs no container of pod faultline/stateful-0"},
		"runtime unreadable":            {pod: statefulPod("worker1", true), change: func(l *fakeLab) { l.host("worker1").failing = map[string]int{"crictl pods": 1} }, want: "crictl pods -o json exited 1"},
		"no control-plane host in labs": {pod: statefulPod("worker1", true), change: func(l *fakeLab) { l.hosts = l.hosts[3:] }, want: "no control-plane host"},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.pod != nil {
				useFake(t, fake.NewClientset(tc.pod))
			} else {
				useFake(t, fake.NewClientset())
			}
			l := newFakeLab()
			if tc.change != nil {
				tc.change(l)
			}
			node := tc.node
			if node == "" {
				node = "worker1"
			}
			err := DeadEndpoint(node, PodRef{Namespace: "faultline", Name: "stateful-0"}).Inject(context.Background(), l)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("inject: %v, want an error saying %q", err, tc.want)
			}
			if got := l.takeLog(); len(got) != 0 {
				t.Errorf("refused inject still did %v", got)
			}
		})
	}
}

func TestDeadEndpointFailsWhenTheContainersKeepRunning(t *testing.T) {
	old := containersStoppedWait
	containersStoppedWait = 1500 * time.Millisecond
	t.Cleanup(func() { containersStoppedWait = old })
	useFake(t, fake.NewClientset(statefulPod("worker1", true)))

	l := newFakeLab()
	l.host("worker1").stubborn = true
	err := deadEndpointOnWorker1().Inject(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), "cri/worker1 to run no container of pod faultline/stateful-0") {
		t.Errorf("inject with containers that ignore crictl stop: %v, want a timeout naming the wait", err)
	}

	l = newFakeLab()
	l.host("worker1").failing = map[string]int{"crictl --timeout=30s stop": 1}
	err = deadEndpointOnWorker1().Inject(context.Background(), l)
	if err == nil || !strings.Contains(err.Error(), "crictl --timeout=30s stop app sidecar on worker1 exited 1: runtime says no") {
		t.Errorf("inject with crictl stop failing: %v, want its exit and stderr", err)
	}
}

func TestDeadEndpointProbe(t *testing.T) {
	useFake(t, fake.NewClientset(statefulPod("worker1", true)))
	ctx := context.Background()
	f := deadEndpointOnWorker1()

	// One controller-manager back is enough to drop the endpoint: not
	// observed, and the detail says which.
	l := newFakeLab()
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.host("cp3").services[lab.ServiceControllerManager] = "running"
	e, err := f.Probe(ctx, l)
	if err != nil || e.Observed || !strings.Contains(e.Detail, "kube-controller-manager running on cp3") {
		t.Errorf("probe with cp3's controller-manager back: %+v, %v; want not observed, naming cp3", e, err)
	}

	// A container of the pod running again: not observed.
	l = newFakeLab()
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.host("worker1").containers[1].state = containerRunning
	e, err = f.Probe(ctx, l)
	if err != nil || e.Observed || !strings.Contains(e.Detail, "cri/worker1 runs 1 of 3 containers") {
		t.Errorf("probe with a container running again: %+v, %v; want not observed", e, err)
	}

	// A runtime that cannot be read is a probe that could not look.
	l.host("worker1").unreachable = true
	if e, err := f.Probe(ctx, l); err == nil {
		t.Errorf("probe with worker1 unreachable: %+v, want an error", e)
	}
}

func TestDeadEndpointRefusesIncompleteParams(t *testing.T) {
	for _, raw := range []string{
		`{"namespace":"faultline","pod":"stateful-0"}`,
		`{"node":"worker1","pod":"stateful-0"}`,
		`{"node":"worker1","namespace":"faultline"}`,
		`{`,
	} {
		_, err := fault.Decode(KindDeadEndpoint, []byte(raw))
		if err == nil {
			t.Errorf("decoded %s", raw)
		} else if !strings.Contains(err.Error(), "decoding "+KindDeadEndpoint) {
			t.Errorf("decoding %s: %v, want it to name the kind", raw, err)
		}
	}
}
