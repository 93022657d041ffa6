//go:build lab

// Integration tests of the fault library on a real local lab. The lab
// backend is linked only into this external test package: the framework
// itself never imports a backend.
package faults_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
)

// The lab these tests build: its own name and subnets, so it never meets
// another lab on the machine.
//
// Where several people run these tests on one machine, each picks their own
// with FAULTLINE_FAULTS_LAB_PREFIX (prepended to the lab names) and
// FAULTLINE_FAULTS_NET, FAULTLINE_FAULTS_PODS, FAULTLINE_FAULTS_SERVICES
// ("10.231.52", "10.231.152.0/22", "10.231.156.0/24"): both labs then use
// these subnets, one after the other.
var topology = labTopology{name: "faults", net: "10.231.21", pods: "10.243.0.0/16", services: "10.250.21.0/24", hosts: `
  - {name: cp1, roles: [etcd, control-plane], address: {{.Net}}.11}
  - {name: w1, roles: [worker], address: {{.Net}}.31}
  - {name: w2, roles: [worker], address: {{.Net}}.32}
`}

// labTopology is one of the labs these tests build.
type labTopology struct {
	name, net, pods, services string
	virtualIP                 string // last octet, if any
	hosts                     string // a template of the hosts list
	agents                    string // kubernetes.agents, if any
}

// render writes the topology with the overrides of the environment.
func (tp labTopology) render(t *testing.T, stateDir string) string {
	t.Helper()
	v := struct{ Name, Net, Pods, Services, StateDir, Agents string }{os.Getenv("FAULTLINE_FAULTS_LAB_PREFIX") + tp.name, tp.net, tp.pods, tp.services, stateDir, tp.agents}
	for env, field := range map[string]*string{"FAULTLINE_FAULTS_NET": &v.Net, "FAULTLINE_FAULTS_PODS": &v.Pods, "FAULTLINE_FAULTS_SERVICES": &v.Services} {
		if s := os.Getenv(env); s != "" {
			*field = s
		}
	}
	text := `name: {{.Name}}
kind: local
lab: true
stateDir: {{.StateDir}}
kubernetes:
  version: v1.36.3
  etcdVersion: v3.6.8
  timerProfile: fast
{{- if .Agents}}
  agents: {{.Agents}}
{{- end}}
network:
  management: {{.Net}}.0/24
  pods: {{.Pods}}
  services: {{.Services}}
`
	if tp.virtualIP != "" {
		text += "  virtualIP: {{.Net}}." + tp.virtualIP + "\n"
	}
	text += "hosts:" + tp.hosts
	var b strings.Builder
	if err := template.Must(template.New(tp.name).Parse(text)).Execute(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const (
	childEnv    = "FAULTLINE_FAULTS_CHILD_LAB"
	childSetEnv = "FAULTLINE_FAULTS_CHILD_SET"
)

// childFaults are the faults the killed injector injects, by set name.
func childFaults(set string) []fault.Fault {
	switch set {
	case "blackhole-watch":
		return []fault.Fault{faults.BlackholeWatch("w1")}
	case "clock-skew":
		return []fault.Fault{faults.ClockSkew("w1", 90*time.Second)}
	case "agent-pods":
		return []fault.Fault{faults.PinAgents("w1", "cp2", lab.ServicePolicyAgent), faults.Freeze("w1", lab.ServiceKubeProxy)}
	default:
		return []fault.Fault{faults.Isolate("w1"), faults.Freeze("w2", lab.ServiceContainerd)}
	}
}

// leadersTopology has several etcd members and control-plane hosts, for
// the faults that pick a leader or split etcd.
var leadersTopology = labTopology{name: "faults-leaders", net: "10.231.22", pods: "10.244.0.0/16", services: "10.250.22.0/24", virtualIP: "10", hosts: `
  - {name: etcd1, roles: [etcd], address: {{.Net}}.11}
  - {name: etcd2, roles: [etcd], address: {{.Net}}.12}
  - {name: etcd3, roles: [etcd], address: {{.Net}}.13}
  - {name: cp1, roles: [control-plane], address: {{.Net}}.21, rack: r1}
  - {name: cp2, roles: [control-plane], address: {{.Net}}.22, rack: r2}
  - {name: w1, roles: [worker], address: {{.Net}}.31, rack: r1}
`}

func writeTopology(t *testing.T, tp labTopology) string {
	t.Helper()
	base := os.Getenv("FAULTLINE_STATE_DIR")
	if base == "" {
		base = "/var/tmp"
	}
	dir, err := os.MkdirTemp(base, "faultline-faults-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "faults.yaml")
	if err := os.WriteFile(path, []byte(tp.render(t, filepath.Join(dir, "state"))), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type env struct {
	t   *testing.T
	l   lab.Lab
	kc  kubernetes.Interface
	cfg string
}

func TestFaultsOnLocalLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	e := upLab(t, ctx, topology)
	l := e.l

	t.Run("freeze kubelet", func(t *testing.T) {
		e.cycle(t, ctx, faults.Freeze("w1", lab.ServiceKubelet), true, func() error { return e.nodeNotReady(ctx, "w1") })
	})
	t.Run("isolate a worker", func(t *testing.T) {
		e.cycle(t, ctx, faults.Isolate("w1"), true, func() error { return e.leaseStopped(ctx, "w1") })
	})
	t.Run("worker from control plane one way", func(t *testing.T) {
		e.cycle(t, ctx, faults.OneWayPartition([]string{"w2"}, []string{"role:control-plane"}), true, func() error { return e.leaseStopped(ctx, "w2") })
	})
	t.Run("loss", func(t *testing.T) {
		e.cycle(t, ctx, faults.Loss("w1", []string{"role:control-plane"}, 50), true, nil)
	})
	t.Run("pod network cut keeps the node ready", func(t *testing.T) {
		e.cycle(t, ctx, faults.PodNetworkCut("w1"), true, func() error {
			time.Sleep(15 * time.Second) // past the fast profile's grace period
			return e.nodeReady(ctx, "w1")
		})
	})
	t.Run("freeze a pod", func(t *testing.T) {
		e.podFreeze(t, ctx)
	})
	t.Run("stop kube-proxy", func(t *testing.T) {
		e.cycle(t, ctx, faults.StopService("w2", lab.ServiceKubeProxy), false, nil)
	})
	t.Run("kill the controller-manager leader", func(t *testing.T) {
		e.cycle(t, ctx, faults.KillLeader(lab.ServiceControllerManager), false, func() error { return e.leaderLeaseStale(ctx, "kube-controller-manager") })
	})
	t.Run("etcd no space", func(t *testing.T) {
		e.cycle(t, ctx, faults.EtcdNoSpace(), true, func() error { return e.writeRefused(ctx) })
	})
	t.Run("etcd compact", func(t *testing.T) {
		e.cycle(t, ctx, faults.EtcdCompact(true), true, nil)
	})
	t.Run("power off a worker", func(t *testing.T) {
		e.cycle(t, ctx, faults.PowerOff("w2"), false, func() error { return e.nodeNotReady(ctx, "w2") })
	})
	t.Run("clock skew, emulated per process", func(t *testing.T) {
		f := faults.ClockSkew("w1", 90*time.Second)
		if em := fault.EmulationOf(f, l); !strings.Contains(em, "emulated") {
			t.Errorf("the local lab's clock skew is not labelled emulated: %q", em)
		}
		e.cycle(t, ctx, f, true, nil)
	})
	t.Run("unsupported here", func(t *testing.T) {
		for _, f := range []fault.Fault{faults.Delay("w1", []string{"cp1"}, 100*time.Millisecond, 0)} {
			before := e.hostState(ctx, true)
			err := f.Inject(ctx, l)
			if !errors.Is(err, lab.ErrUnsupported) {
				t.Errorf("%s: Inject = %v, want unsupported", fault.Describe(f), err)
			} else {
				t.Logf("%s: %v", f.Kind(), err)
			}
			if err := f.Heal(ctx, l); err != nil {
				t.Errorf("%s: heal: %v", f.Kind(), err)
			}
			e.same(t, before, e.hostState(ctx, true))
		}
	})
	t.Run("a killed injector is healed from the ledger", func(t *testing.T) {
		e.killedInjector(t, ctx, "partition-and-freeze")
	})
	t.Run("a killed injector's clock skew is healed from the ledger", func(t *testing.T) {
		e.killedInjector(t, ctx, "clock-skew")
	})
}

func upLab(t *testing.T, ctx context.Context, tp labTopology) *env {
	t.Helper()
	cfgPath := writeTopology(t, tp)
	l, err := lab.OpenFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := l.(lab.Provisioner)
	if !ok {
		t.Fatal("the local lab is not a Provisioner")
	}
	t.Cleanup(func() {
		if err := p.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	start := time.Now()
	if err := p.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("lab up in %s", time.Since(start).Round(time.Second))
	return &env{t: t, l: l, kc: kubeClient(t, l), cfg: cfgPath}
}

func TestLeaderAndEtcdFaultsOnLocalLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	e := upLab(t, ctx, leadersTopology)

	t.Run("freeze the scheduler leader", func(t *testing.T) {
		holder := e.leaseHolder(ctx, "kube-scheduler")
		e.cycle(t, ctx, faults.FreezeLeader(lab.ServiceScheduler), true, func() error { return e.leaseMoves(ctx, "kube-scheduler", holder) })
	})
	t.Run("etcd leader from its peers", func(t *testing.T) {
		before := e.etcdLeader(ctx)
		e.cycle(t, ctx, faults.EtcdLeaderFromPeers(), true, func() error { return e.etcdLeaderMoves(ctx, before) })
	})
	t.Run("throttle the etcd leader", func(t *testing.T) {
		e.cycle(t, ctx, faults.EtcdLeaderThrottle(16), true, nil)
	})
	t.Run("etcd 2|1", func(t *testing.T) {
		e.cycle(t, ctx, faults.EtcdSplit(2), true, nil)
	})
	t.Run("api server from etcd", func(t *testing.T) {
		e.cycle(t, ctx, faults.APIServerFromEtcd("cp1"), true, func() error { return e.apiServerUnready(ctx, "cp1") })
	})
	t.Run("rack from the rest", func(t *testing.T) {
		// Asked of cp2's API server: r1's cp1 is cut from etcd, and the
		// virtual address may be held on both sides of the cut.
		e.cycle(t, ctx, faults.RackFromRest("r1"), true, func() error { return e.leaseStaleVia(ctx, "cp2", "kube-node-lease", "w1", 8*time.Second) })
	})
	t.Run("kill the etcd leader", func(t *testing.T) {
		before := e.etcdLeader(ctx)
		e.cycle(t, ctx, faults.KillLeader(lab.ServiceEtcd), false, func() error { return e.etcdLeaderMoves(ctx, before) })
	})
	t.Run("blackhole watch", func(t *testing.T) {
		e.blackholeWatch(t, ctx)
	})
	t.Run("api server on an etcd fork", func(t *testing.T) {
		e.etcdFork(t, ctx, "cp2", "cp1")
	})
	t.Run("a killed injector of a blackhole watch is healed from the ledger", func(t *testing.T) {
		e.killedInjector(t, ctx, "blackhole-watch")
	})
}

// blackholeWatch runs the fault through a cycle on w1 (two API servers):
// during it a pod bound to w1 must not start while w1 stays Ready and its
// kubelet logs that its list of pods failed; after heal the pod starts, and
// every API server's authorization configuration is as it was, byte for
// byte, with nothing of the fault left beside it.
func (e *env) blackholeWatch(t *testing.T, ctx context.Context) {
	filesBefore := e.authzFiles(ctx)
	logPath := filepath.Join(e.l.StateDir(), "logs", "w1", "kubelet.log")
	logStart := fileSize(t, logPath)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "blackhole-", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      "w1",
			TerminationGracePeriodSeconds: new(int64),
			Containers:                    []corev1.Container{{Name: "main", Image: images.SandboxImage, ImagePullPolicy: corev1.PullNever}},
		},
	}
	e.cycle(t, ctx, faults.BlackholeWatch("w1"), true, func() error {
		created, err := e.kc.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating a pod bound to w1: %w", err)
		}
		pod = created
		// Past the fast profile's grace period: long enough for a kubelet
		// that hears of the pod to start it many times over.
		time.Sleep(20 * time.Second)
		if err := e.nodeReady(ctx, "w1"); err != nil {
			return fmt.Errorf("w1 should stay Ready: %w", err)
		}
		got, err := e.kc.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Phase != corev1.PodPending || len(got.Status.ContainerStatuses) > 0 || got.Status.HostIP != "" {
			return fmt.Errorf("pod %s bound to w1 was seen by its kubelet: phase %s, host IP %q, %d container statuses", got.Name, got.Status.Phase, got.Status.HostIP, len(got.Status.ContainerStatuses))
		}
		t.Logf("pod %s bound to w1 20s ago: phase %s, no status from the kubelet; w1 Ready", got.Name, got.Status.Phase)
		line, err := grepFrom(logPath, logStart, "Failed to watch", "failed to list *v1.Pod")
		if err != nil {
			if r, rerr := e.hostByName("w1").Run(ctx, "ss -Htnp state established '( dport = :6443 )'"); rerr == nil {
				t.Logf("w1's connections to the API servers now:\n%s", r.Stdout)
			}
			if b, rerr := os.ReadFile(logPath); rerr == nil && int64(len(b)) > logStart {
				tail := strings.Split(string(b[logStart:]), "\n")
				if len(tail) > 40 {
					tail = tail[len(tail)-40:]
				}
				t.Logf("w1's kubelet log since the fault (last lines):\n%s", strings.Join(tail, "\n"))
			}
			return fmt.Errorf("w1's kubelet log: %w", err)
		}
		t.Logf("w1's kubelet: %s", line)
		return nil
	})
	if pod.Name != "" {
		err := lab.WaitFor(ctx, "pod "+pod.Name+" running on w1 after heal", 120*time.Second, 2*time.Second, func(ctx context.Context) (bool, error) {
			got, err := e.kc.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == corev1.PodRunning, err
		})
		if err != nil {
			t.Errorf("after heal the kubelet should hear of its pod: %v", err)
		}
		if err := e.kc.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Errorf("deleting %s: %v", pod.Name, err)
		}
	}
	e.same(t, filesBefore, e.authzFiles(ctx))
}

// podFreeze runs a pod freeze through a cycle on a netexec pod on w1:
// while frozen its HTTP server, asked from w1, accepts (the kernel
// completes the handshake) and never answers; after heal it answers.
func (e *env) podFreeze(t *testing.T, ctx context.Context) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "frozen-", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      "w1",
			TerminationGracePeriodSeconds: new(int64),
			Containers:                    []corev1.Container{{Name: "main", Image: images.Ref("netexec"), ImagePullPolicy: corev1.PullNever}},
		},
	}
	created, err := e.kc.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a pod on w1: %v", err)
	}
	defer func() {
		if err := e.kc.CoreV1().Pods("default").Delete(context.Background(), created.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Errorf("deleting %s: %v", created.Name, err)
		}
	}()
	var ip string
	err = lab.WaitFor(ctx, "pod "+created.Name+" running on w1", 120*time.Second, time.Second, func(ctx context.Context) (bool, error) {
		got, err := e.kc.CoreV1().Pods("default").Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ip = got.Status.PodIP
		return got.Status.Phase == corev1.PodRunning && ip != "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w1 := e.hostByName("w1")
	get := func() (string, error) {
		r, err := w1.Run(ctx, "timeout 3 bash -c 'exec 3<>/dev/tcp/"+ip+"/8080 && printf \"GET /healthz HTTP/1.0\\r\\n\\r\\n\" >&3 && cat <&3'")
		if err != nil {
			return "", err
		}
		if r.ExitCode != 0 {
			return "", fmt.Errorf("exit %d: %s", r.ExitCode, r.Stderr)
		}
		return r.Stdout, nil
	}
	if out, err := get(); err != nil || !strings.Contains(out, "200") {
		t.Fatalf("the pod does not answer before the freeze: %q, %v", out, err)
	}
	e.cycle(t, ctx, faults.FreezePod("default", created.Name), true, func() error {
		if out, err := get(); err == nil {
			return fmt.Errorf("the frozen pod answered: %q", out)
		}
		return nil
	})
	if out, err := get(); err != nil || !strings.Contains(out, "200") {
		t.Errorf("the thawed pod does not answer: %q, %v", out, err)
	}
}

// etcdFork runs the fork through a cycle on forked, with other an API
// server left on the cluster's etcd: during it a ConfigMap created
// through other is not there through forked, and the two servers come to
// name different holders of the controller-manager's lease (each side's
// controller-manager leads its own history); after heal no fork process
// or file is left.
func (e *env) etcdFork(t *testing.T, ctx context.Context, forked, other string) {
	viaForked, err := clientOf(e.l, forked, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	viaOther, err := clientOf(e.l, other, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	e.cycle(t, ctx, faults.APIServerEtcdFork(forked), false, func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "fork-", Namespace: "default"}}
		created, err := viaOther.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating a ConfigMap through %s: %w", other, err)
		}
		defer func() {
			_ = viaOther.CoreV1().ConfigMaps("default").Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		}()
		if _, err := viaForked.CoreV1().ConfigMaps("default").Get(ctx, created.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ConfigMap %s created through %s, read through %s: %v; want NotFound", created.Name, other, forked, err)
		}
		t.Logf("ConfigMap %s created through %s at resourceVersion %s is not found through %s", created.Name, other, created.ResourceVersion, forked)
		var a, b string
		err = lab.WaitFor(ctx, "the two servers to name different controller-manager leaders", 60*time.Second, time.Second, func(ctx context.Context) (bool, error) {
			la, err := viaOther.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			lb, err := viaForked.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			a, b = *la.Spec.HolderIdentity, *lb.Spec.HolderIdentity
			return hostOfHolder(a) != hostOfHolder(b), nil
		})
		if err != nil {
			return fmt.Errorf("%w (through %s: %s; through %s: %s)", err, other, a, forked, b)
		}
		t.Logf("controller-manager lease holder through %s: %s; through %s: %s", other, a, forked, b)
		return nil
	})
	ef, err := e.l.(lab.EtcdForks).EtcdFork(forked)
	if err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(ef.Dir); err == nil && len(ents) > 0 {
		t.Errorf("left in %s after heal: %d entries", ef.Dir, len(ents))
	}
	if r, err := e.hostByName(forked).Run(ctx, "pgrep -f -- '--name=faultline-[f]ork' || true"); err != nil || strings.TrimSpace(r.Stdout) != "" {
		t.Errorf("a fork process is left after heal: %q (%v)", r.Stdout, err)
	}
}

// hostOfHolder is the host part of a leader lease holder identity
// ("cp1_6f0c…").
func hostOfHolder(id string) string {
	h, _, _ := strings.Cut(id, "_")
	return h
}

// authzFiles is every API server's authorization configuration (its hash,
// mode, owner and modification time) and the listing of its directory.
func (e *env) authzFiles(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, h := range lab.HostsWithRole(e.l, lab.RoleControlPlane) {
		path, err := e.l.(lab.AuthorizationConfigFiles).AuthorizationConfigFile(h.Name())
		if err != nil {
			e.t.Fatal(err)
		}
		// The directory's own modification time is not compared: the
		// fault's files come and go in it.
		r, err := h.Run(ctx, fmt.Sprintf("sha256sum %[1]s && stat -c '%%n %%a %%U %%Y' %[1]s && ls -A %[2]s", path, filepath.Dir(path)))
		if err != nil || r.ExitCode != 0 {
			e.t.Fatalf("%s: reading %s: %v %s", h.Name(), path, err, r.Stderr)
		}
		out[h.Name()+" authorization configuration"] = r.Stdout
	}
	return out
}

func (e *env) hostByName(name string) lab.Host {
	h, err := e.l.Host(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// grepFrom returns the first line after offset in the file that holds
// every one of want.
func grepFrom(path string, offset int64, want ...string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		all := true
		for _, w := range want {
			all = all && strings.Contains(sc.Text(), w)
		}
		if all {
			return sc.Text(), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no line holding all of %q since the fault", want)
}

func (e *env) leaseHolder(ctx context.Context, name string) string {
	ls, err := e.kc.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil || ls.Spec.HolderIdentity == nil {
		e.t.Fatalf("lease %s: %v", name, err)
	}
	e.t.Logf("lease %s held by %s", name, *ls.Spec.HolderIdentity)
	return *ls.Spec.HolderIdentity
}

func (e *env) leaseMoves(ctx context.Context, name, from string) error {
	return lab.WaitFor(ctx, "lease "+name+" to move from "+from, 60*time.Second, time.Second, func(ctx context.Context) (bool, error) {
		ls, err := e.kc.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ls.Spec.HolderIdentity != nil && *ls.Spec.HolderIdentity != from, nil
	})
}

func (e *env) etcdClient() *clientv3.Client {
	eps, tlsc, err := e.l.(lab.EtcdAccess).EtcdClientConfig()
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: tlsc, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// etcdLeader is the leader's member id as the reachable members see it.
func (e *env) etcdLeader(ctx context.Context) uint64 {
	c := e.etcdClient()
	defer c.Close()
	for _, ep := range c.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := c.Status(sctx, ep)
		cancel()
		if err == nil && st.Leader != 0 {
			return st.Leader
		}
	}
	e.t.Fatal("no etcd member reports a leader")
	return 0
}

// etcdLeaderMoves waits until a member other than the old leader reports
// a new leader.
func (e *env) etcdLeaderMoves(ctx context.Context, old uint64) error {
	c := e.etcdClient()
	defer c.Close()
	return lab.WaitFor(ctx, fmt.Sprintf("etcd leader other than %x", old), 60*time.Second, time.Second, func(ctx context.Context) (bool, error) {
		for _, ep := range c.Endpoints() {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			st, err := c.Status(sctx, ep)
			cancel()
			if err == nil && st.Header.MemberId != old && st.Leader != 0 && st.Leader != old {
				e.t.Logf("member %x reports leader %x", st.Header.MemberId, st.Leader)
				return true, nil
			}
		}
		return false, nil
	})
}

// apiServerUnready waits until the API server on host reports its etcd
// check failing in /readyz.
func (e *env) apiServerUnready(ctx context.Context, host string) error {
	kc, err := clientOf(e.l, host, 5*time.Second)
	if err != nil {
		return err
	}
	return lab.WaitFor(ctx, "the API server on "+host+" to fail /readyz", 90*time.Second, 2*time.Second, func(ctx context.Context) (bool, error) {
		_, err := kc.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			e.t.Logf("/readyz on %s: %v", host, err)
		}
		return err != nil, nil
	})
}

// cycle injects f, waits for its probe and for the component to notice,
// heals it, and checks the hosts are as before. samePIDs is false for
// faults that restart processes.
func (e *env) cycle(t *testing.T, ctx context.Context, f fault.Fault, samePIDs bool, notices func() error) {
	e.restartExited(t, ctx)
	e.waitSettled(t, ctx)
	before := e.hostState(ctx, samePIDs)
	if eff, err := f.Probe(ctx, e.l); err != nil || eff.Observed {
		t.Fatalf("probe before inject: %+v %v", eff, err)
	}
	if err := f.Inject(ctx, e.l); err != nil {
		t.Errorf("inject %s: %v", fault.Describe(f), err)
	} else {
		var last fault.Effect
		err := lab.WaitFor(ctx, "the probe to see "+f.Kind(), 60*time.Second, time.Second, func(ctx context.Context) (bool, error) {
			var err error
			last, err = f.Probe(ctx, e.l)
			return last.Observed, err
		})
		if err != nil {
			t.Errorf("%v (last: %s)", err, last.Detail)
		} else {
			t.Logf("probe: %s", last.Detail)
		}
		if notices != nil {
			if err := notices(); err != nil {
				t.Errorf("component did not notice %s: %v", f.Kind(), err)
			}
		}
	}
	if err := f.Heal(ctx, e.l); err != nil {
		t.Errorf("heal: %v", err)
	}
	if err := f.Heal(ctx, e.l); err != nil {
		t.Errorf("second heal: %v", err)
	}
	if eff, err := f.Probe(ctx, e.l); err != nil || eff.Observed {
		t.Errorf("probe after heal: %+v %v", eff, err)
	}
	restarted := e.restartExited(t, ctx)
	e.waitSettled(t, ctx)
	after := e.hostState(ctx, samePIDs)
	// A scheduler or controller-manager whose lease renewal failed during
	// the fault can exit after the settle; restart it as its restart
	// policy would, and look again (a few times at most).
	for i := 0; i < 3 && exitedLeaderElector(after); i++ {
		for host, names := range e.restartExited(t, ctx) {
			restarted[host] = append(restarted[host], names...)
		}
		e.waitSettled(t, ctx)
		after = e.hostState(ctx, samePIDs)
	}
	for host, names := range restarted {
		for _, n := range names {
			pid := regexp.MustCompile(`(?m)^(` + regexp.QuoteMeta(n) + ` \S+) pid \d+`)
			before[host] = pid.ReplaceAllString(before[host], "$1")
			after[host] = pid.ReplaceAllString(after[host], "$1")
		}
	}
	e.same(t, before, after)
}

// hostState is what a fault may change on every host: the built-in
// chains' rules and faultline's own chains (kube-proxy's chains change by
// themselves), every qdisc, every service's state and /proc state letter
// (and pid when samePIDs), and etcd's alarms.
func (e *env) hostState(ctx context.Context, samePIDs bool) map[string]string {
	out := map[string]string{}
	counters := regexp.MustCompile(`\[\d+:\d+\]`)
	for _, h := range e.l.Hosts() {
		var b strings.Builder
		r, err := h.Run(ctx, "iptables-save")
		if err != nil {
			e.t.Fatalf("%s: iptables-save: %v", h.Name(), err)
		}
		for _, line := range strings.Split(r.Stdout, "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			if strings.Contains(line, "FAULTLINE") || regexp.MustCompile(`^-A (INPUT|OUTPUT|FORWARD) `).MatchString(line) || strings.HasPrefix(line, ":INPUT") || strings.HasPrefix(line, ":OUTPUT") || strings.HasPrefix(line, ":FORWARD") {
				b.WriteString(counters.ReplaceAllString(line, "") + "\n")
			}
		}
		if !samePIDs {
			// A restart (power on) rebuilds kube-proxy's and kubelet's
			// jumps in its own order; what must match is the set, and
			// that no faultline rule is left.
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			sort.Strings(lines)
			b.Reset()
			b.WriteString(strings.Join(lines, "\n") + "\n")
		}
		r, err = h.Run(ctx, "tc qdisc show")
		if err != nil {
			e.t.Fatalf("%s: tc: %v", h.Name(), err)
		}
		for _, line := range strings.Split(r.Stdout, "\n") {
			// The CNI bridge appears with a node's first pod, a veth
			// with each pod.
			if !strings.Contains(line, " dev cni0 ") && !strings.Contains(line, " dev veth") {
				b.WriteString(line + "\n")
			}
		}
		svcs, err := h.Services(ctx)
		if err != nil {
			e.t.Fatalf("%s: services: %v", h.Name(), err)
		}
		for _, s := range svcs {
			proc := "-"
			if s.PID != 0 {
				if r, err := h.Run(ctx, fmt.Sprintf("awk '{print $3}' /proc/%d/stat", s.PID)); err == nil {
					proc = procClass(strings.TrimSpace(r.Stdout))
				}
			}
			if samePIDs {
				fmt.Fprintf(&b, "%s %s pid %d proc %s\n", s.Name, s.State, s.PID, proc)
			} else {
				fmt.Fprintf(&b, "%s %s proc %s\n", s.Name, s.State, proc)
			}
		}
		out[h.Name()] = b.String()
	}
	out["etcd alarms"] = e.alarms(ctx)
	return out
}

// exitedLeaderElector tells whether a host state shows a scheduler or
// controller-manager that exited by itself.
func exitedLeaderElector(state map[string]string) bool {
	for _, st := range state {
		for _, n := range []string{lab.ServiceScheduler, lab.ServiceControllerManager} {
			if strings.Contains(st, "\n"+n+" exited ") || strings.HasPrefix(st, n+" exited ") {
				return true
			}
		}
	}
	return false
}

// procClass keeps what a fault changes in a /proc state letter: stopped
// (T, t) or a zombie, not whether the process was on a CPU just then.
func procClass(state string) string {
	switch state {
	case "R", "S", "D", "I":
		return "live"
	}
	return state
}

func (e *env) same(t *testing.T, before, after map[string]string) {
	t.Helper()
	var names []string
	for n := range before {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if before[n] != after[n] {
			t.Errorf("%s differs after heal:\nbefore:\n%s\nafter:\n%s", n, before[n], after[n])
		}
	}
}

func (e *env) alarms(ctx context.Context) string {
	acc := e.l.(lab.EtcdAccess)
	eps, tlsc, err := acc.EtcdClientConfig()
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: tlsc, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		e.t.Fatal(err)
	}
	defer c.Close()
	a, err := c.AlarmList(ctx)
	if err != nil {
		e.t.Fatalf("etcd alarms: %v", err)
	}
	return fmt.Sprint(a.Alarms)
}

func kubeClient(t *testing.T, l lab.Lab) kubernetes.Interface {
	kc, err := clientOf(l, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// clientOf is a client of host's API server ("" for the lab's default
// address), each request bounded by timeout (0: none).
func clientOf(l lab.Lab, host string, timeout time.Duration) (kubernetes.Interface, error) {
	path, err := l.Kubeconfig(host)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = timeout
	return kubernetes.NewForConfig(cfg)
}

// restartExited starts the scheduler and controller-manager where they
// exited by themselves, before a fault and after it. They exit when they
// lose their leader lease (a loaded machine can make that happen at any
// time); on VMs systemd or the kubelet restarts them, on the local lab its
// keeper does after 2 s, and a start while that restart is pending waits
// for it, so hosts are compared only once both run again. Each restart is logged: it is the cluster's
// reaction to load or to the fault, not something the fault left behind.
func (e *env) restartExited(t *testing.T, ctx context.Context) map[string][]string {
	t.Helper()
	restarted := map[string][]string{}
	time.Sleep(5 * time.Second) // let a component that lost its lease exit
	for _, h := range lab.HostsWithRole(e.l, lab.RoleControlPlane) {
		svcs, err := h.Services(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range svcs {
			if s.State != "exited" || (s.Name != lab.ServiceScheduler && s.Name != lab.ServiceControllerManager) {
				continue
			}
			t.Logf("%s on %s exited after the fault (lost its lease?); starting it as a restart policy would", s.Name, h.Name())
			if err := h.StartService(ctx, s.Name); err != nil {
				t.Fatal(err)
			}
			restarted[h.Name()] = append(restarted[h.Name()], s.Name)
		}
	}
	return restarted
}

// waitSettled waits until every node is Ready and every service runs.
func (e *env) waitSettled(t *testing.T, ctx context.Context) {
	t.Helper()
	err := lab.WaitFor(ctx, "every node Ready and every service running", 3*time.Minute, 2*time.Second, func(ctx context.Context) (bool, error) {
		for _, h := range e.l.Hosts() {
			svcs, err := h.Services(ctx)
			if err != nil {
				return false, err
			}
			for _, s := range svcs {
				if s.State != "running" {
					return false, fmt.Errorf("%s on %s is %s", s.Name, h.Name(), s.State)
				}
			}
			if !h.HasRole(lab.RoleWorker) && !h.HasRole(lab.RoleControlPlane) {
				continue // no kubelet, no node
			}
			if err := e.nodeReady(ctx, h.Name()); err != nil {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) readyStatus(ctx context.Context, node string) (string, error) {
	n, err := e.kc.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status), nil
		}
	}
	return "", fmt.Errorf("node %s has no Ready condition", node)
}

func (e *env) nodeReady(ctx context.Context, node string) error {
	s, err := e.readyStatus(ctx, node)
	if err != nil {
		return err
	}
	if s != "True" {
		return fmt.Errorf("node %s Ready=%s", node, s)
	}
	return nil
}

func (e *env) nodeNotReady(ctx context.Context, node string) error {
	return lab.WaitFor(ctx, "node "+node+" not Ready", 90*time.Second, time.Second, func(ctx context.Context) (bool, error) {
		s, err := e.readyStatus(ctx, node)
		return err == nil && s != "True", err
	})
}

// leaseStopped sees the node's lease not renewed for three renew periods.
func (e *env) leaseStopped(ctx context.Context, node string) error {
	return e.leaseStale(ctx, "kube-node-lease", node, 8*time.Second)
}

func (e *env) leaderLeaseStale(ctx context.Context, name string) error {
	return e.leaseStale(ctx, "kube-system", name, 8*time.Second)
}

func (e *env) leaseStaleVia(ctx context.Context, apiServer, ns, name string, stale time.Duration) error {
	kc, err := clientOf(e.l, apiServer, 5*time.Second)
	if err != nil {
		return err
	}
	return (&env{t: e.t, l: e.l, kc: kc}).leaseStale(ctx, ns, name, stale)
}

func (e *env) leaseStale(ctx context.Context, ns, name string, stale time.Duration) error {
	return lab.WaitFor(ctx, "lease "+ns+"/"+name+" not renewed for "+stale.String(), 60*time.Second, time.Second, func(ctx context.Context) (bool, error) {
		ls, err := e.kc.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if ls.Spec.RenewTime == nil {
			return false, errors.New("no renew time")
		}
		return time.Since(ls.Spec.RenewTime.Time) > stale, nil
	})
}

func (e *env) writeRefused(ctx context.Context) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "faults-nospace-", Namespace: "default"}}
	_, err := e.kc.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	if err == nil {
		return errors.New("a ConfigMap was created while etcd had NOSPACE raised")
	}
	if !strings.Contains(err.Error(), "space exceeded") {
		return fmt.Errorf("the write failed, but not for space: %v", err)
	}
	e.t.Logf("write refused: %v", err)
	return nil
}

// killedInjector runs this test binary as a child that records a partition
// and a freeze in the ledger, injects them and waits; the child is killed
// with SIGKILL, and this process heals both from the ledger alone.
func (e *env) killedInjector(t *testing.T, ctx context.Context, set string) {
	e.restartExited(t, ctx)
	e.waitSettled(t, ctx)
	before := e.hostState(ctx, true)
	blackhole := set == "blackhole-watch"
	if blackhole {
		for k, v := range e.authzFiles(ctx) {
			before[k] = v
		}
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildInjects$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+e.cfg, childSetEnv+"="+set)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	injected := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		t.Logf("child: %s", sc.Text())
		if strings.Contains(sc.Text(), "INJECTED") {
			injected = true
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !injected {
		t.Fatal("the child never injected")
	}
	held := childFaults(set)
	f := held[len(held)-1]
	if eff, err := f.Probe(ctx, e.l); err != nil || !eff.Observed {
		t.Errorf("after the kill %s should still hold: %+v %v", f.Kind(), eff, err)
	}
	rep, err := ledger.HealAll(ctx, e.l)
	t.Logf("%s", rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Healed) != len(held) {
		t.Errorf("healed %d entries, want %d", len(rep.Healed), len(held))
	}
	if eff, err := f.Probe(ctx, e.l); err != nil || eff.Observed {
		t.Errorf("after heal from the ledger %s still holds: %+v %v", f.Kind(), eff, err)
	}
	led, err := ledger.Open(e.l.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	if left, err := led.Entries(); err != nil || len(left) != 0 {
		t.Errorf("ledger still holds %v (%v)", left, err)
	}
	e.waitSettled(t, ctx)
	after := e.hostState(ctx, true)
	if blackhole {
		for k, v := range e.authzFiles(ctx) {
			after[k] = v
		}
	}
	e.same(t, before, after)
}

// TestChildInjects is the child of killedInjector; it does nothing unless
// run by it.
func TestChildInjects(t *testing.T) {
	path := os.Getenv(childEnv)
	if path == "" {
		t.Skip("run only as the killed injector's child")
	}
	ctx := context.Background()
	l, err := lab.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(l.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range childFaults(os.Getenv(childSetEnv)) {
		if _, err := led.Record(f, l.Info().Name, "killed injector"); err != nil {
			t.Fatal(err)
		}
		if err := f.Inject(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("INJECTED")
	time.Sleep(10 * time.Minute)
}
