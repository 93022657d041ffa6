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
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/local"
)

// The lab these tests build: its own name and subnets, so it never meets
// another lab on the machine.
const topology = `name: faults
kind: local
lab: true
stateDir: %s
kubernetes:
  version: v1.36.3
  etcdVersion: v3.6.8
  timerProfile: fast
network:
  management: 10.231.21.0/24
  pods: 10.243.0.0/16
  services: 10.250.21.0/24
hosts:
  - {name: cp1, roles: [etcd, control-plane], address: 10.231.21.11}
  - {name: w1, roles: [worker], address: 10.231.21.31}
  - {name: w2, roles: [worker], address: 10.231.21.32}
`

const childEnv = "FAULTLINE_FAULTS_CHILD_LAB"

// leadersTopology has several etcd members and control-plane hosts, for
// the faults that pick a leader or split etcd.
const leadersTopology = `name: faults-leaders
kind: local
lab: true
stateDir: %s
kubernetes:
  version: v1.36.3
  etcdVersion: v3.6.8
  timerProfile: fast
network:
  management: 10.231.22.0/24
  pods: 10.244.0.0/16
  services: 10.250.22.0/24
  virtualIP: 10.231.22.10
hosts:
  - {name: etcd1, roles: [etcd], address: 10.231.22.11}
  - {name: etcd2, roles: [etcd], address: 10.231.22.12}
  - {name: etcd3, roles: [etcd], address: 10.231.22.13}
  - {name: cp1, roles: [control-plane], address: 10.231.22.21, rack: r1}
  - {name: cp2, roles: [control-plane], address: 10.231.22.22, rack: r2}
  - {name: w1, roles: [worker], address: 10.231.22.31, rack: r1}
`

func writeTopology(t *testing.T, text string) string {
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
	if err := os.WriteFile(path, []byte(fmt.Sprintf(text, filepath.Join(dir, "state"))), 0o644); err != nil {
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
	t.Run("unsupported here", func(t *testing.T) {
		for _, f := range []fault.Fault{faults.ClockSkew("w1", time.Minute), faults.Delay("w1", []string{"cp1"}, 100*time.Millisecond, 0)} {
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
		e.killedInjector(t, ctx)
	})
}

func upLab(t *testing.T, ctx context.Context, text string) *env {
	t.Helper()
	cfgPath := writeTopology(t, text)
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
	path, err := e.l.Kubeconfig(host)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	kc, err := kubernetes.NewForConfig(cfg)
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
			// The CNI bridge appears with a node's first pod.
			if !strings.Contains(line, " dev cni0 ") {
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
	path, err := l.Kubeconfig("")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// restartExited starts the scheduler and controller-manager where they
// exited by themselves (they exit when they lose their leader lease, and
// on VMs systemd or the kubelet restarts them; the local lab's supervisor
// does not). Each restart is logged: it is the cluster's reaction to the
// fault, not something the fault left behind.
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
	path, err := e.l.Kubeconfig(apiServer)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	kc, err := kubernetes.NewForConfig(cfg)
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
func (e *env) killedInjector(t *testing.T, ctx context.Context) {
	e.waitSettled(t, ctx)
	before := e.hostState(ctx, true)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildInjects$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+e.cfg)
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
	f := faults.Freeze("w2", lab.ServiceContainerd)
	if eff, err := f.Probe(ctx, e.l); err != nil || !eff.Observed {
		t.Errorf("after the kill the freeze should still hold: %+v %v", eff, err)
	}
	rep, err := ledger.HealAll(ctx, e.l)
	t.Logf("%s", rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Healed) != 2 {
		t.Errorf("healed %d entries, want 2", len(rep.Healed))
	}
	led, err := ledger.Open(e.l.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	if left, err := led.Entries(); err != nil || len(left) != 0 {
		t.Errorf("ledger still holds %v (%v)", left, err)
	}
	e.waitSettled(t, ctx)
	e.same(t, before, e.hostState(ctx, true))
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
	for _, f := range []fault.Fault{faults.Isolate("w1"), faults.Freeze("w2", lab.ServiceContainerd)} {
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
