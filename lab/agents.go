package lab

import (
	"fmt"
	"regexp"
)

// How a cluster runs its node agents (kube-proxy, the NetworkPolicy
// agent): the values of the lab file's kubernetes.agents.
const (
	// AgentsAsServices runs each agent as a service of every host it
	// runs on (a systemd unit, the local lab's supervisor): the default.
	AgentsAsServices = "services"
	// AgentsAsPods runs each agent as a DaemonSet's pod on every node it
	// runs on, with the host's network namespace, one service account per
	// agent shared by every node: the layout kubeadm gives kube-proxy and
	// the policy agents' own manifests give them (KubeadmAgentPod).
	AgentsAsPods = "pods"
)

// AgentsLayout is how the cluster runs its node agents: the lab file's
// kubernetes.agents, AgentsAsServices where it says nothing.
func (k KubernetesSettings) AgentsLayout() string {
	if k.Agents == "" {
		return AgentsAsServices
	}
	return k.Agents
}

// AgentPod is where the pods of a node agent run as a DaemonSet are found.
type AgentPod struct {
	Namespace string `json:"namespace"`
	DaemonSet string `json:"daemonSet"`
	// Selector is one label equality (key=value) every pod of the
	// DaemonSet carries and no other pod of the namespace does.
	Selector string `json:"selector"`
	// Container is the agent's container in the pod.
	Container string `json:"container"`
	// ServiceAccount is the account the pods run as, in Namespace: one
	// for every node, so the API servers tell one node's agent from
	// another's only by what its token says of the pod it is bound to.
	ServiceAccount string `json:"serviceAccount"`
}

// ServiceAccountUser is the user name the pods authenticate as
// ("system:serviceaccount:<namespace>:<account>").
func (p AgentPod) ServiceAccountUser() string {
	return "system:serviceaccount:" + p.Namespace + ":" + p.ServiceAccount
}

// AgentRun says how one node agent runs on one node: as a service of the
// host, addressed by its name through the Host's service operations
// (Pod nil), or as a pod of a DaemonSet (Pod set), addressed through the
// cluster and the node's runtime and cgroups.
type AgentRun struct {
	// Agent is the agent's service name (ServiceKubeProxy,
	// ServicePolicyAgent).
	Agent string    `json:"agent"`
	Node  string    `json:"node"`
	Pod   *AgentPod `json:"pod,omitempty"`
}

// AsPod says whether the agent runs as a pod.
func (r AgentRun) AsPod() bool { return r.Pod != nil }

// AgentRuns is a lab that says how each node agent runs on each node.
type AgentRuns interface {
	// AgentRun returns how the agent (a service name: ServiceKubeProxy,
	// ServicePolicyAgent) runs on node; an error wrapping ErrUnsupported
	// when it does not run there.
	AgentRun(node, agent string) (AgentRun, error)
}

// AgentRunOf says how agent runs on node: the lab's own answer
// (AgentRuns), else what its lab file's kubernetes.agents says (pods:
// where kubeadm and the agent's own manifests put it, KubeadmAgentPod,
// the policy agent's as the file's kubernetes.policyAgent names it,
// PolicyAgentPod; services, or nothing said: a service of the host).
func AgentRunOf(l Lab, node, agent string) (AgentRun, error) {
	if r, ok := l.(AgentRuns); ok {
		return r.AgentRun(node, agent)
	}
	var layout, policyAgent string
	if c := l.Config(); c != nil {
		layout, policyAgent = c.Kubernetes.AgentsLayout(), c.Kubernetes.PolicyAgent
	}
	if layout != AgentsAsPods {
		return AgentRun{Agent: agent, Node: node}, nil
	}
	p, ok := KubeadmAgentPod(agent)
	if agent == ServicePolicyAgent && policyAgent != "" {
		p, ok = PolicyAgentPod(policyAgent)
	}
	if !ok {
		return AgentRun{}, Unsupported(l.Info().Kind, "agent "+agent, fmt.Sprintf("kubernetes.agents is %s and no DaemonSet is known for %s", AgentsAsPods, agent))
	}
	return AgentRun{Agent: agent, Node: node, Pod: &p}, nil
}

// KubeadmAgentPod is where a kubeadm cluster runs the agent as a pod:
// kube-proxy as kubeadm deploys it (DaemonSet, service account and
// ConfigMap kube-proxy in kube-system, pods labelled k8s-app=kube-proxy),
// kube-router as its own manifests do (DaemonSet and service account
// kube-router in kube-system, pods labelled k8s-app=kube-router).
func KubeadmAgentPod(agent string) (AgentPod, bool) {
	switch agent {
	case ServiceKubeProxy:
		return AgentPod{Namespace: "kube-system", DaemonSet: "kube-proxy", Selector: "k8s-app=kube-proxy", Container: "kube-proxy", ServiceAccount: "kube-proxy"}, true
	case ServicePolicyAgent:
		return AgentPod{Namespace: "kube-system", DaemonSet: "kube-router", Selector: "k8s-app=kube-router", Container: "kube-router", ServiceAccount: "kube-router"}, true
	}
	return AgentPod{}, false
}

// PolicyAgentPod is where a NetworkPolicy agent (a lab file's
// kubernetes.policyAgent) runs as a pod, as its own manifests deploy it
// in kube-system: Calico's calico.yaml (DaemonSet, service account and
// container calico-node, pods labelled k8s-app=calico-node; the Tigera
// operator's install puts them in calico-system instead, which no lab
// file can name yet), kube-router's (as KubeadmAgentPod) and
// kube-network-policies' install.yaml (DaemonSet, service account and
// container kube-network-policies, pods labelled
// k8s-app=kube-network-policies).
func PolicyAgentPod(policyAgent string) (AgentPod, bool) {
	switch policyAgent {
	case PolicyAgentKubeRouter:
		return KubeadmAgentPod(ServicePolicyAgent)
	case PolicyAgentCalico:
		return AgentPod{Namespace: "kube-system", DaemonSet: "calico-node", Selector: "k8s-app=calico-node", Container: "calico-node", ServiceAccount: "calico-node"}, true
	case PolicyAgentKubeNetworkPolicies:
		return AgentPod{Namespace: "kube-system", DaemonSet: "kube-network-policies", Selector: "k8s-app=kube-network-policies", Container: "kube-network-policies", ServiceAccount: "kube-network-policies"}, true
	}
	return AgentPod{}, false
}

// agentSelectorPattern is one label equality.
var agentSelectorPattern = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9_./]*[a-zA-Z0-9])?=[a-zA-Z0-9]([-a-zA-Z0-9_.]*[a-zA-Z0-9])?$`)

// Check says what is wrong with p, if anything: every field is needed to
// find the pods and to tell the API servers which of them is refused.
func (p AgentPod) Check() error {
	switch {
	case !dnsLabel.MatchString(p.Namespace):
		return fmt.Errorf("agent pod namespace %q is not a DNS label", p.Namespace)
	case p.DaemonSet == "" || p.Container == "" || p.ServiceAccount == "":
		return fmt.Errorf("agent pod %+v: DaemonSet, container and service account are all needed", p)
	case !agentSelectorPattern.MatchString(p.Selector):
		return fmt.Errorf("agent pod selector %q is not key=value", p.Selector)
	}
	return nil
}
