//go:build lab

package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/procs"
	"github.com/faultline/faultline/lab/local/internal/supervise"
	"github.com/faultline/faultline/lab/local/internal/sysctl"
)

// nodeCondition returns a node's Ready status ("True", "False", "Unknown").
func nodeCondition(ctx context.Context, kc kubernetes.Interface, node string) (string, error) {
	n, err := kc.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
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

func waitCondition(ctx context.Context, t *testing.T, kc kubernetes.Interface, node, want string, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	err := lab.WaitFor(ctx, fmt.Sprintf("node %s Ready=%s", node, want), timeout, time.Second, func(ctx context.Context) (bool, error) {
		got, err := nodeCondition(ctx, kc, node)
		return got == want, err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s Ready=%s after %s", node, want, time.Since(start).Round(time.Second))
}

func statefulSet(image, node string) *appsv1.StatefulSet {
	labels := map[string]string{"app": "lab-check"}
	one := int32(1)
	zero := int64(0)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "lab-check", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &one,
			ServiceName: "lab-check",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{"kubernetes.io/hostname": node},
					TerminationGracePeriodSeconds: &zero,
					Containers: []corev1.Container{{
						Name:            "netexec",
						Image:           image,
						ImagePullPolicy: corev1.PullIfNotPresent,
					}},
				},
			},
		},
	}
}

// crictlRunning lists the running containers named name on h, over SSH.
func crictlRunning(ctx context.Context, t *testing.T, h lab.Host, name string) []string {
	t.Helper()
	r, err := h.Run(ctx, "crictl ps --state running --name "+name+" -q")
	if err != nil {
		t.Fatalf("crictl on %s: %v", h.Name(), err)
	}
	if r.ExitCode != 0 {
		t.Fatalf("crictl on %s: exit %d: %s", h.Name(), r.ExitCode, r.Stderr)
	}
	return strings.Fields(r.Stdout)
}

// machineSysctls reads the machine-wide sysctls the lab changes.
func machineSysctls(t *testing.T) map[string]string {
	out := map[string]string{}
	for k := range sysctl.Kubelet {
		v, err := sysctl.Read(k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	for k := range sysctl.Minimum {
		v, err := sysctl.Read(k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// keepLogs copies a failed test's components.Service logs out of the state dir, which
// down removes.
func keepLogs(t *testing.T, c *lab.Config) {
	if !t.Failed() {
		return
	}
	dst := filepath.Join(os.TempDir(), "faultline-logs-"+c.Name)
	_ = os.RemoveAll(dst)
	if err := copyTree(context.Background(), filepath.Join(c.StateDir, "logs"), dst); err != nil {
		t.Logf("keeping logs: %v", err)
		return
	}
	t.Logf("service logs kept in %s", dst)
}

// checkNodesEverywhere asks every API server directly for the nodes: all
// registered, all Ready, control-plane nodes labelled and tainted.
func checkNodesEverywhere(ctx context.Context, t *testing.T, l *Lab) {
	t.Helper()
	for _, cp := range l.controlPlaneHosts() {
		kc, err := l.kubeClient(cp.Name())
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("API server on %s: %v", cp.Name(), err)
		}
		if len(nodes.Items) != len(l.nodeHosts()) {
			t.Errorf("API server on %s lists %d nodes, want %d", cp.Name(), len(nodes.Items), len(l.nodeHosts()))
		}
		for _, n := range nodes.Items {
			if !nodeReady(n) {
				t.Errorf("API server on %s: node %s not Ready", cp.Name(), n.Name)
			}
			_, isCP := n.Labels["node-role.kubernetes.io/control-plane"]
			tainted := false
			for _, tn := range n.Spec.Taints {
				tainted = tainted || (tn.Key == "node-role.kubernetes.io/control-plane" && tn.Effect == corev1.TaintEffectNoSchedule)
			}
			h := l.byName[n.Name]
			if h == nil {
				t.Errorf("unexpected node %s", n.Name)
				continue
			}
			if want := h.HasRole(lab.RoleControlPlane); isCP != want || tainted != want {
				t.Errorf("node %s: control-plane label %v taint %v, want %v", n.Name, isCP, tainted, want)
			}
		}
	}
}

func TestPairCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	c := testConfig(t, "pair")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	l.SetProgress(os.Stderr)
	var inodes []uint64
	sysctlsBefore := machineSysctls(t)
	t.Cleanup(func() {
		keepLogs(t, c)
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
		if after := machineSysctls(t); fmt.Sprint(after) != fmt.Sprint(sysctlsBefore) {
			t.Errorf("machine sysctls not restored: before %v, after %v", sysctlsBefore, after)
		}
		if left := leftovers(t, c, inodes); len(left) > 0 {
			t.Errorf("left after down:\n%s", strings.Join(left, "\n"))
		}
	})
	start := time.Now()
	if err := l.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("up (boot, cold snapshot, boot) took %s", time.Since(start).Round(time.Second))
	for _, h := range c.Hosts {
		ino, _ := procs.NamedNetnsInode(layout.NetnsName(c.Name, h.Name))
		inodes = append(inodes, ino)
	}

	checkNodesEverywhere(ctx, t, l)
	kc, err := l.kubeClient("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		ls, err := kc.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil || ls.Spec.HolderIdentity == nil || *ls.Spec.HolderIdentity == "" {
			t.Errorf("leader lease %s not held: %v", name, err)
		}
	}

	// A StatefulSet pod runs on the worker and its runtime shows it.
	worker, _ := l.Host("pair-worker")
	imgs, err := l.comp.Images()
	if err != nil {
		t.Fatal(err)
	}
	image := ""
	for _, r := range imgs.Refs {
		if strings.Contains(r, "netexec") {
			image = r
		}
	}
	if image == "" {
		t.Fatalf("no netexec image among %v", imgs.Refs)
	}
	if _, err := kc.AppsV1().StatefulSets("default").Create(ctx, statefulSet(image, "pair-worker"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitFor(ctx, "lab-check-0 Running", 2*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		p, err := kc.CoreV1().Pods("default").Get(ctx, "lab-check-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning && p.Spec.NodeName == "pair-worker", fmt.Errorf("phase %s on %q", p.Status.Phase, p.Spec.NodeName)
	}); err != nil {
		t.Fatal(err)
	}
	if got := crictlRunning(ctx, t, worker, "netexec"); len(got) != 1 {
		t.Fatalf("crictl on the worker shows %d running netexec containers", len(got))
	}
	// kube-proxy programs the worker's own namespace.
	if r, err := worker.Run(ctx, "iptables -w -t nat -S KUBE-SERVICES"); err != nil || !strings.Contains(r.Stdout, "default/kubernetes") {
		t.Errorf("kube-proxy rules on the worker lack the kubernetes service: %v %s%s", err, r.Stdout, r.Stderr)
	}

	// A frozen kubelet: the node goes Unknown, the container keeps running.
	if err := worker.Signal(ctx, lab.ServiceKubelet, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, kc, "pair-worker", "Unknown", 2*time.Minute)
	if got := crictlRunning(ctx, t, worker, "netexec"); len(got) != 1 {
		t.Errorf("with kubelet frozen crictl shows %d running netexec containers", len(got))
	}
	if err := worker.Signal(ctx, lab.ServiceKubelet, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, kc, "pair-worker", "True", 2*time.Minute)

	// Power off: the node goes Unknown and nothing of the worker runs.
	if err := worker.PowerOff(ctx); err != nil {
		t.Fatal(err)
	}
	if p := procs.OfHost(c.Name, "pair-worker"); len(p) != 0 {
		t.Errorf("processes of the powered-off worker: %v", p)
	}
	waitCondition(ctx, t, kc, "pair-worker", "Unknown", 2*time.Minute)

	// Power on: the node comes back and its pod runs again.
	if err := worker.PowerOn(ctx); err != nil {
		t.Fatal(err)
	}
	waitCondition(ctx, t, kc, "pair-worker", "True", 2*time.Minute)
	if err := lab.WaitFor(ctx, "the netexec container running again", 2*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		r, err := worker.Run(ctx, "crictl ps --state running --name netexec -q")
		if err != nil {
			return false, err
		}
		return strings.TrimSpace(r.Stdout) != "", nil
	}); err != nil {
		t.Error(err)
	}
	if err := worker.PowerOff(ctx); err != nil {
		t.Fatal(err)
	}

	// Reset: back to the cold snapshot, which holds no StatefulSet.
	start = time.Now()
	if err := l.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("reset took %s", time.Since(start).Round(time.Second))
	for _, h := range l.nodeHosts() {
		if got, err := nodeCondition(ctx, kc, h.Name()); err != nil || got != "True" {
			t.Errorf("after reset node %s Ready=%s (%v)", h.Name(), got, err)
		}
	}
	if _, err := kc.AppsV1().StatefulSets("default").Get(ctx, "lab-check", metav1.GetOptions{}); err == nil {
		t.Errorf("the StatefulSet survived the reset")
	}
	if got := crictlRunning(ctx, t, worker, "netexec"); len(got) != 0 {
		t.Errorf("after reset the worker runs %d netexec containers", len(got))
	}
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, hs := range st.Hosts {
		for _, s := range hs.Services {
			if s.State != supervise.StateRunning {
				t.Errorf("after reset %s on %s is %s", s.Name, hs.Name, s.State)
			}
		}
	}
}

func TestLab11Cluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	c := testConfig(t, "lab11")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	l.SetProgress(os.Stderr)
	var inodes []uint64
	sysctlsBefore := machineSysctls(t)
	t.Cleanup(func() {
		keepLogs(t, c)
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
		if after := machineSysctls(t); fmt.Sprint(after) != fmt.Sprint(sysctlsBefore) {
			t.Errorf("machine sysctls not restored: before %v, after %v", sysctlsBefore, after)
		}
		if left := leftovers(t, c, inodes); len(left) > 0 {
			t.Errorf("left after down:\n%s", strings.Join(left, "\n"))
		}
	})
	start := time.Now()
	if err := l.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("up took %s (cold boot to all Ready %s)", time.Since(start).Round(time.Second), l.LastUp().ColdBoot.Round(100*time.Millisecond))
	for _, h := range c.Hosts {
		ino, _ := procs.NamedNetnsInode(layout.NetnsName(c.Name, h.Name))
		inodes = append(inodes, ino)
	}
	checkNodesEverywhere(ctx, t, l)
	// The user's kubeconfig goes through the virtual address.
	kc, err := l.kubeClient("")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("through the virtual address: %v", err)
	}
	if len(nodes.Items) != 6 {
		t.Errorf("through the virtual address: %d nodes, want 6", len(nodes.Items))
	}
	start = time.Now()
	if err := l.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("reset took %s", time.Since(start).Round(100*time.Millisecond))
	checkNodesEverywhere(ctx, t, l)
}
