package lab

import (
	"errors"
	"strings"
	"testing"
)

// layoutLab is a Lab that says only its config and its kind.
type layoutLab struct{ endpointLab }

func (layoutLab) Info() Info { return Info{Kind: "beta"} }

// runsLab says itself how its agents run.
type runsLab struct{ layoutLab }

func (runsLab) AgentRun(node, agent string) (AgentRun, error) {
	return AgentRun{Agent: agent, Node: node, Pod: &AgentPod{Namespace: "own"}}, nil
}

func TestAgentsAreServicesOrPods(t *testing.T) {
	for _, v := range []string{"services", "pods"} {
		c, err := ParseConfig([]byte("kind: beta\nkubernetes: {agents: " + v + "}\n" + commonFile))
		if err != nil || c.Kubernetes.AgentsLayout() != v {
			t.Errorf("agents %s: %v, %+v", v, err, c)
		}
	}
	c, err := ParseConfig([]byte("kind: beta\n" + commonFile))
	if err != nil || c.Kubernetes.AgentsLayout() != AgentsAsServices {
		t.Errorf("no agents given: %v, layout %q, want services", err, c.Kubernetes.AgentsLayout())
	}
	_, err = ParseConfig([]byte("kind: beta\nkubernetes: {agents: static-pods}\n" + commonFile))
	if err == nil || !strings.Contains(err.Error(), `kubernetes.agents: "static-pods" is not how node agents run`) {
		t.Errorf("agents static-pods: %v, want it refused by name", err)
	}
}

func TestAgentRunIsTheLabsOwnElseTheFiles(t *testing.T) {
	pods := &Config{Kubernetes: KubernetesSettings{Agents: AgentsAsPods}}
	r, err := AgentRunOf(layoutLab{endpointLab{cfg: pods}}, "worker1", ServiceKubeProxy)
	if err != nil || !r.AsPod() || *r.Pod != (AgentPod{Namespace: "kube-system", DaemonSet: "kube-proxy", Selector: "k8s-app=kube-proxy", Container: "kube-proxy", ServiceAccount: "kube-proxy"}) {
		t.Errorf("kube-proxy from a file of pods: %+v %v", r, err)
	}
	if r.Pod.ServiceAccountUser() != "system:serviceaccount:kube-system:kube-proxy" || r.Pod.Check() != nil {
		t.Errorf("kube-proxy's pod: user %q, check %v", r.Pod.ServiceAccountUser(), r.Pod.Check())
	}
	r, err = AgentRunOf(layoutLab{endpointLab{cfg: pods}}, "worker1", ServicePolicyAgent)
	if err != nil || !r.AsPod() || r.Pod.DaemonSet != "kube-router" || r.Pod.Selector != "k8s-app=kube-router" {
		t.Errorf("the policy agent from a file of pods: %+v %v", r, err)
	}
	if _, err := AgentRunOf(layoutLab{endpointLab{cfg: pods}}, "worker1", "calico-node"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("an agent with no known DaemonSet: %v, want ErrUnsupported", err)
	}
	r, err = AgentRunOf(layoutLab{endpointLab{cfg: &Config{}}}, "worker1", ServiceKubeProxy)
	if err != nil || r.AsPod() || r.Agent != ServiceKubeProxy || r.Node != "worker1" {
		t.Errorf("kube-proxy from a file that says nothing: %+v %v, want a service", r, err)
	}
	r, err = AgentRunOf(runsLab{layoutLab{endpointLab{cfg: &Config{}}}}, "worker1", ServiceKubeProxy)
	if err != nil || !r.AsPod() || r.Pod.Namespace != "own" {
		t.Errorf("a lab that says: %+v %v, want its own answer", r, err)
	}
}

func TestAgentPodCheckNamesWhatIsMissing(t *testing.T) {
	good, _ := KubeadmAgentPod(ServicePolicyAgent)
	for _, bad := range []AgentPod{
		{Namespace: "Kube System", DaemonSet: "d", Selector: "a=b", Container: "c", ServiceAccount: "s"},
		{Namespace: "kube-system", DaemonSet: "d", Selector: "a", Container: "c", ServiceAccount: "s"},
		{Namespace: "kube-system", DaemonSet: "d", Selector: "a=b", Container: "c"},
	} {
		if bad.Check() == nil {
			t.Errorf("%+v passed its check", bad)
		}
	}
	if err := good.Check(); err != nil {
		t.Errorf("kube-router's pod: %v", err)
	}
}

// On a cluster of pods, the policy agent's pod is the one the lab file
// names: its DaemonSet as the agent's own manifests deploy it.
func TestPolicyAgentPodFollowsTheFilesPolicyAgent(t *testing.T) {
	for _, tc := range []struct {
		policyAgent string
		want        AgentPod
	}{
		{"", AgentPod{Namespace: "kube-system", DaemonSet: "kube-router", Selector: "k8s-app=kube-router", Container: "kube-router", ServiceAccount: "kube-router"}},
		{PolicyAgentKubeRouter, AgentPod{Namespace: "kube-system", DaemonSet: "kube-router", Selector: "k8s-app=kube-router", Container: "kube-router", ServiceAccount: "kube-router"}},
		{PolicyAgentCalico, AgentPod{Namespace: "kube-system", DaemonSet: "calico-node", Selector: "k8s-app=calico-node", Container: "calico-node", ServiceAccount: "calico-node"}},
		{PolicyAgentKubeNetworkPolicies, AgentPod{Namespace: "kube-system", DaemonSet: "kube-network-policies", Selector: "k8s-app=kube-network-policies", Container: "kube-network-policies", ServiceAccount: "kube-network-policies"}},
	} {
		cfg := &Config{Kubernetes: KubernetesSettings{Agents: AgentsAsPods, PolicyAgent: tc.policyAgent}}
		r, err := AgentRunOf(layoutLab{endpointLab{cfg: cfg}}, "worker1", ServicePolicyAgent)
		if err != nil || !r.AsPod() || *r.Pod != tc.want {
			t.Errorf("policyAgent %q: %+v %v, want the pod %+v", tc.policyAgent, r.Pod, err, tc.want)
			continue
		}
		if err := r.Pod.Check(); err != nil {
			t.Errorf("policyAgent %q: %v", tc.policyAgent, err)
		}
		r, err = AgentRunOf(layoutLab{endpointLab{cfg: cfg}}, "worker1", ServiceKubeProxy)
		if err != nil || r.Pod == nil || r.Pod.DaemonSet != "kube-proxy" {
			t.Errorf("policyAgent %q: kube-proxy %+v %v", tc.policyAgent, r.Pod, err)
		}
	}
}
