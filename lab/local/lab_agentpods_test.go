//go:build lab

package local

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/procs"
)

// agentPodsOn lists the running pods of the agent's DaemonSet on node.
func agentPodsOn(ctx context.Context, t *testing.T, l *Lab, agent, node string) []corev1.Pod {
	t.Helper()
	kc, err := l.kubeClient("")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := lab.KubeadmAgentPod(agent)
	list, err := kc.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: p.Selector, FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, pod := range list.Items {
		if pod.Status.Phase == corev1.PodRunning {
			out = append(out, pod)
		}
	}
	return out
}

// agentSyncWait bounds how long a node agent's pod takes, once running,
// to program its node: kube-proxy's and kube-router's first full sync,
// each a few seconds, on a loaded machine.
const agentSyncWait = 60 * time.Second

// untilAgentSynced runs cmd on h until ok says its result shows the
// agent's rules or agentSyncWait has passed, and returns the last result.
func untilAgentSynced(ctx context.Context, h lab.Host, cmd string, ok func(lab.Result) bool) (lab.Result, error) {
	deadline := time.Now().Add(agentSyncWait)
	for {
		r, err := h.Run(ctx, cmd)
		if (err == nil && ok(r)) || time.Now().After(deadline) || ctx.Err() != nil {
			return r, err
		}
		time.Sleep(time.Second)
	}
}

// checkAgentPods checks every node runs its agents as pods, and no host
// as a service, and the agents programmed the nodes' own namespaces.
func checkAgentPods(ctx context.Context, t *testing.T, l *Lab) {
	t.Helper()
	for _, h := range l.nodeHosts() {
		for _, a := range []string{lab.ServiceKubeProxy, lab.ServicePolicyAgent} {
			want := 0
			if a == lab.ServiceKubeProxy || h.HasRole(lab.RoleWorker) {
				want = 1
			}
			if got := agentPodsOn(ctx, t, l, a, h.Name()); len(got) != want {
				t.Errorf("%s runs %d %s pods, want %d", h.Name(), len(got), a, want)
			}
		}
		svcs, err := h.Services(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range svcs {
			if s.Name == lab.ServiceKubeProxy || s.Name == lab.ServicePolicyAgent {
				t.Errorf("%s runs %s as a service where the agents are pods", h.Name(), s.Name)
			}
		}
		// The pods program the node after they start: after a reset that
		// is a sync away, so each is asked until agentSyncWait has passed.
		if r, err := untilAgentSynced(ctx, h, "iptables -w -t nat -S KUBE-SERVICES", func(r lab.Result) bool { return strings.Contains(r.Stdout, "default/kubernetes") }); err != nil || !strings.Contains(r.Stdout, "default/kubernetes") {
			t.Errorf("kube-proxy's pod's rules on %s lack the kubernetes service: %v %s%s", h.Name(), err, r.Stdout, r.Stderr)
		}
		if h.HasRole(lab.RoleWorker) {
			if r, err := untilAgentSynced(ctx, h, "iptables -w -t filter -S KUBE-ROUTER-FORWARD", func(r lab.Result) bool { return r.ExitCode == 0 }); err != nil || r.ExitCode != 0 {
				t.Errorf("kube-router's pod made no KUBE-ROUTER-FORWARD chain on %s: %v %s", h.Name(), err, r.Stderr)
			}
		}
	}
}

// The pods layout on pair: kube-proxy on both nodes and kube-router on
// the worker as DaemonSet pods of kubeadm's layout, programming the nodes'
// namespaces, back after a reset; the lab says how each agent runs and
// that the pods share their identity; down leaves nothing, the iptables
// lock the DaemonSets mount from the host included.
func TestPairAgentPods(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	c := testConfig(t, "pair")
	c.Kubernetes.Agents = lab.AgentsAsPods
	_, lockErr := os.Stat("/run/xtables.lock")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	l.SetProgress(os.Stderr)
	var inodes []uint64
	t.Cleanup(func() {
		keepLogs(t, c)
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
		if left := leftovers(t, c, inodes); len(left) > 0 {
			t.Errorf("left after down:\n%s", strings.Join(left, "\n"))
		}
		if _, err := os.Stat("/run/xtables.lock"); errors.Is(lockErr, os.ErrNotExist) && err == nil {
			t.Error("/run/xtables.lock, which the lab's pods made, is left after down")
		}
	})
	start := time.Now()
	if err := l.Up(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("up took %s", time.Since(start).Round(time.Second))
	for _, h := range c.Hosts {
		ino, _ := procs.NamedNetnsInode(layout.NetnsName(c.Name, h.Name))
		inodes = append(inodes, ino)
	}
	checkAgentPods(ctx, t, l)

	for _, tc := range []struct {
		node, agent string
		pod         bool
		err         bool
	}{
		{"pair-worker", lab.ServiceKubeProxy, true, false},
		{"pair-worker", lab.ServicePolicyAgent, true, false},
		{"pair-cp", lab.ServiceKubeProxy, true, false},
		{"pair-cp", lab.ServicePolicyAgent, false, true},
	} {
		r, err := lab.AgentRunOf(l, tc.node, tc.agent)
		if (err != nil) != tc.err || r.AsPod() != tc.pod {
			t.Errorf("AgentRunOf(%s, %s) = %+v, %v", tc.node, tc.agent, r, err)
		}
	}
	if _, err := l.AgentIdentity("pair-worker", lab.ServiceKubeProxy); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("AgentIdentity of a pod: %v, want unsupported (the service account is shared)", err)
	}
	if _, err := l.AgentKubeconfig("pair-worker", lab.ServicePolicyAgent); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("AgentKubeconfig of a pod: %v, want unsupported", err)
	}

	start = time.Now()
	if err := l.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("reset took %s", time.Since(start).Round(time.Second))
	checkAgentPods(ctx, t, l)
}
