//go:build lab

package faults_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/lab"
)

// podsTopology runs its node agents as pods (kubernetes.agents: pods):
// two API servers behind a virtual address, for pinning, and two
// workers, one to fault and one to compare with.
var podsTopology = labTopology{name: "faults-pods", net: "10.231.23", pods: "10.245.0.0/16", services: "10.250.23.0/24", virtualIP: "10", agents: lab.AgentsAsPods, hosts: `
  - {name: cp1, roles: [etcd, control-plane], address: {{.Net}}.21}
  - {name: cp2, roles: [control-plane], address: {{.Net}}.22}
  - {name: w1, roles: [worker], address: {{.Net}}.31}
  - {name: w2, roles: [worker], address: {{.Net}}.32}
`}

// The faults that name an agent, on a lab whose agents are DaemonSet
// pods under one service account each: freeze through the pod's cgroup,
// kill of its container restarted by the kubelet, restart as a pod
// delete, stop refused, pinning through the node's rules, and one node's
// agent refused its watch by the node its token is bound to; each
// through a cycle (probe, heal twice, hosts as before), each with what
// the cluster shows of it; and a killed injector's freeze and pin healed
// from the ledger.
func TestAgentPodFaultsOnLocalLab(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	e := upLab(t, ctx, podsTopology)
	if r, err := lab.AgentRunOf(e.l, "w1", lab.ServiceKubeProxy); err != nil || !r.AsPod() {
		t.Fatalf("the lab does not run kube-proxy as a pod on w1: %+v %v", r, err)
	}

	t.Run("freeze kube-proxy's pod", func(t *testing.T) {
		e.cycle(t, ctx, faults.Freeze("w1", lab.ServiceKubeProxy), true, func() error {
			if code, err := e.agentHealth(ctx, "w1", 10256); err == nil {
				return fmt.Errorf("the frozen kube-proxy answered its health check: %d", code)
			}
			return nil
		})
		if err := e.waitAgentHealthy(ctx, "w1", 10256); err != nil {
			t.Error(err)
		}
	})
	t.Run("kill kube-proxy's container", func(t *testing.T) {
		before := e.agentPod(t, ctx, lab.ServiceKubeProxy, "w1")
		// A restarted agent rebuilds its jumps from the built-in chains
		// in its own order: compared as sets.
		e.cycle(t, ctx, faults.Kill("w1", lab.ServiceKubeProxy), false, func() error {
			return lab.WaitFor(ctx, "the kubelet to start kube-proxy again", 90*time.Second, time.Second, func(ctx context.Context) (bool, error) {
				p := e.agentPod(t, ctx, lab.ServiceKubeProxy, "w1")
				c := p.Status.ContainerStatuses[0]
				return p.UID == before.UID && c.RestartCount > before.Status.ContainerStatuses[0].RestartCount && c.State.Running != nil, nil
			})
		})
		if err := e.waitAgentHealthy(ctx, "w1", 10256); err != nil {
			t.Error(err)
		}
	})
	t.Run("restart kube-router's pod", func(t *testing.T) {
		before := e.agentPod(t, ctx, lab.ServicePolicyAgent, "w1")
		e.cycle(t, ctx, faults.Restart("w1", lab.ServicePolicyAgent), false, func() error {
			return lab.WaitFor(ctx, "the DaemonSet's new kube-router pod on w1 to run", 2*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
				p := e.agentPod(t, ctx, lab.ServicePolicyAgent, "w1")
				return p.UID != before.UID && p.Status.Phase == corev1.PodRunning, nil
			})
		})
		if err := e.waitAgentHealthy(ctx, "w1", 20244); err != nil {
			t.Error(err)
		}
	})
	t.Run("stopping a pod agent is refused", func(t *testing.T) {
		before := e.agentPod(t, ctx, lab.ServicePolicyAgent, "w1")
		f := faults.StopService("w1", lab.ServicePolicyAgent)
		if err := f.Inject(ctx, e.l); !errors.Is(err, lab.ErrUnsupported) {
			t.Errorf("Inject = %v, want unsupported", err)
		} else {
			t.Logf("%v", err)
		}
		if err := f.Heal(ctx, e.l); err != nil {
			t.Errorf("heal: %v", err)
		}
		if after := e.agentPod(t, ctx, lab.ServicePolicyAgent, "w1"); after.UID != before.UID || after.Status.ContainerStatuses[0].RestartCount != before.Status.ContainerStatuses[0].RestartCount {
			t.Errorf("the refused stop changed the pod")
		}
	})
	t.Run("pin w1's agents to cp2", func(t *testing.T) {
		e.cycle(t, ctx, faults.PinAgents("w1", "cp2", lab.ServiceKubeProxy, lab.ServicePolicyAgent), true, nil)
	})
	t.Run("refuse w1's kube-proxy its EndpointSlices", func(t *testing.T) {
		e.cycle(t, ctx, faults.BlackholeAgentWatch("w1", lab.ServiceKubeProxy, faults.WatchedResource{Group: "discovery.k8s.io", Resource: "endpointslices"}), true, func() error {
			return e.sliceSeenOnlyBy(ctx, "w2", "w1")
		})
	})
	t.Run("a killed injector's pin and freeze are healed from the ledger", func(t *testing.T) {
		e.killedInjector(t, ctx, "agent-pods")
	})
}

// agentPod is the agent's one live pod on node.
func (e *env) agentPod(t *testing.T, ctx context.Context, agent, node string) corev1.Pod {
	t.Helper()
	p, _ := lab.KubeadmAgentPod(agent)
	list, err := e.kc.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: p.Selector, FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil && len(pod.Status.ContainerStatuses) == 1 {
			live = append(live, pod)
		}
	}
	if len(live) != 1 {
		t.Fatalf("%d live %s pods on %s", len(live), agent, node)
	}
	return live[0]
}

// agentHealth asks the agent's health port on node from the node.
func (e *env) agentHealth(ctx context.Context, node string, port int) (int, error) {
	h := e.hostByName(node)
	r, err := h.Run(ctx, fmt.Sprintf("curl -s -o /dev/null -w '%%{http_code}' --max-time 2 http://%s/healthz", net.JoinHostPort(h.Address(), fmt.Sprint(port))))
	if err != nil {
		return 0, err
	}
	if r.ExitCode != 0 {
		return 0, fmt.Errorf("curl exited %d", r.ExitCode)
	}
	var code int
	_, err = fmt.Sscan(strings.TrimSpace(r.Stdout), &code)
	return code, err
}

func (e *env) waitAgentHealthy(ctx context.Context, node string, port int) error {
	return lab.WaitFor(ctx, fmt.Sprintf("the agent on %s:%d healthy", node, port), 90*time.Second, time.Second, func(ctx context.Context) (bool, error) {
		code, err := e.agentHealth(ctx, node, port)
		return code == 200, err
	})
}

// sliceSeenOnlyBy creates a service without a selector and its
// EndpointSlice: the node whose kube-proxy hears of EndpointSlices
// programs its endpoint, the refused one does not, for 15 s.
func (e *env) sliceSeenOnlyBy(ctx context.Context, hears, refused string) error {
	name := fmt.Sprintf("pinned-%d", time.Now().UnixNano()%100000)
	svc, err := e.kc.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	defer e.kc.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
	_, err = e.kc.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.245.77.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	defer e.kc.DiscoveryV1().EndpointSlices("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	programmed := func(node string) (bool, error) {
		r, err := e.hostByName(node).Run(ctx, "iptables-save -t nat")
		if err != nil {
			return false, err
		}
		return strings.Contains(r.Stdout, "10.245.77.7:8080"), nil
	}
	if err := lab.WaitFor(ctx, hears+"'s kube-proxy to program "+name, 30*time.Second, time.Second, func(context.Context) (bool, error) { return programmed(hears) }); err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if ok, err := programmed(refused); err != nil || ok {
			return fmt.Errorf("%s's kube-proxy, refused its EndpointSlices, programmed %s (%v)", refused, name, err)
		}
		time.Sleep(time.Second)
	}
	return nil
}
