package agents

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/kits/dataplane/readers"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/lab"
)

// The node agents' health endpoints on each node's address: kube-proxy's
// and kube-router's.
var AgentEndpoints = []readers.AgentEndpoint{
	{Agent: lab.ServiceKubeProxy, Port: 10256, Path: "/healthz"},
	{Agent: lab.ServicePolicyAgent, Port: 20244, Path: "/healthz"},
}

// AgentEndpointsOf are the health endpoints asked on l's nodes: the policy
// agent's only where the lab file names kube-router (lab.PolicyAgentOf;
// the local lab's). Another agent's node refuses kube-router's port, and
// a refusal is an agent admitting it is unhealthy; Calico's Felix serves
// its health on localhost by default and kube-network-policies none, so
// on those labs the policy agent's health is not read and
// agent-health-truthful has no answer for it (unknown, never admitted).
func AgentEndpointsOf(l lab.Lab) []readers.AgentEndpoint {
	var out []readers.AgentEndpoint
	for _, e := range AgentEndpoints {
		if e.Agent == lab.ServicePolicyAgent && lab.PolicyAgentOf(l) != lab.PolicyAgentKubeRouter {
			continue
		}
		out = append(out, e)
	}
	return out
}

// probeTimeout is how long a client pod waits for one connection: a
// dropped connection shows as a timeout this long, inside the read's own
// bound.
const probeTimeout = time.Second

// Extras are the suite's evidence beside the framework's: the service's
// endpoints on every API server, each client node's kube-proxy rules for
// the service ("kube-proxy/<node>"), a new connection from its client pod
// to the service ("pod/<node>"), and its agents' health ("agents/<node>").
func Extras() []sampler.Extra {
	return []sampler.Extra{
		sampler.OnAPIServers(dataplane.AgentServiceEndpoints, func(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
			return ReadServiceEndpoints(ctx, cs)
		}),
		sampler.OnAPIServers(dataplane.AgentPolicyExpected, func(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
			return ReadPolicyExpectation(ctx, cs)
		}),
		sampler.OnAPIServers(dataplane.AgentDNSExpected, func(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
			return ReadDNSExpected(ctx, cs)
		}),
		{Name: "agents/nodes", Open: openNodes},
		{Name: "agents/dns", Open: openDNS},
	}
}

// ReadDNSExpected is the DNS fixture's records as cs has them: its
// cluster address, none while the service does not exist.
func ReadDNSExpected(ctx context.Context, cs kubernetes.Interface) (dataplane.DNSExpectedValue, string, error) {
	v := dataplane.DNSExpectedValue{Name: DNSName, IPs: []string{}}
	svc, err := cs.CoreV1().Services(Namespace).Get(ctx, DNSService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return v, "", nil
	}
	if err != nil {
		return v, "", err
	}
	if svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		v.IPs = append(v.IPs, svc.Spec.ClusterIP)
	}
	return v, svc.ResourceVersion, nil
}

// openDNS makes a reader per CoreDNS instance ("coredns/<node>"), asked
// from DNSAskFrom's client pod: the instances are found when the readers
// are made, after each reset.
func openDNS(env sampler.Env) (sampler.Parts, error) {
	api, ok := env.FirstAPIServer()
	if !ok {
		return sampler.Parts{}, fmt.Errorf("no API server client to find the DNS instances with")
	}
	h, err := env.Lab.Host(DNSAskFrom)
	if err != nil {
		return sampler.Parts{}, fmt.Errorf("the DNS evidence: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := api.Client.CoreV1().Pods(DNSNamespace).List(ctx, metav1.ListOptions{LabelSelector: DNSSelector})
	if err != nil {
		return sampler.Parts{}, fmt.Errorf("finding the DNS instances: %w", err)
	}
	var p sampler.Parts
	seen := map[string]bool{}
	for _, pod := range pods.Items {
		n := pod.Spec.NodeName
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		p.Readers = append(p.Readers, readers.NewPodDNS(h, api.Client, Namespace, ClientPod(DNSAskFrom), DNSNamespace, DNSSelector, n, DNSName, probeTimeout))
	}
	if len(p.Readers) == 0 {
		return sampler.Parts{}, fmt.Errorf("no DNS instance (%s in %s) is placed on a node", DNSSelector, DNSNamespace)
	}
	return p, nil
}

// ReadServiceEndpoints reads the test service's endpoints through cs.
func ReadServiceEndpoints(ctx context.Context, cs kubernetes.Interface) (evidence.EndpointsValue, string, error) {
	list, err := cs.DiscoveryV1().EndpointSlices(Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + Service})
	if err != nil {
		return evidence.EndpointsValue{}, "", err
	}
	return source.EndpointsOf(list.Items), list.ResourceVersion, nil
}

func openNodes(env sampler.Env) (sampler.Parts, error) {
	api, ok := env.FirstAPIServer()
	if !ok {
		return sampler.Parts{}, fmt.Errorf("no API server client to find the client pods with")
	}
	var p sampler.Parts
	for _, name := range ClientNodes {
		h, err := env.Lab.Host(name)
		if err != nil {
			return sampler.Parts{}, fmt.Errorf("the agents' evidence: %w", err)
		}
		p.Readers = append(p.Readers,
			source.ProxyFor(env.Lab, source.NewServiceProxy(evidence.Source("kube-proxy/"+name), h, dataplane.AgentServiceTranslation, Namespace, Service)),
			readers.NewPodDialer(h, api.Client, dataplane.AgentServiceProbe, Namespace, ClientPod(name),
				func(ctx context.Context) (string, error) { return ServiceAddress(ctx, api.Client) }, "/hostname", probeTimeout),
			readers.NewPodDialer(h, api.Client, dataplane.AgentPolicyProbe, Namespace, ClientPod(name),
				func(ctx context.Context) (string, error) { return PodAddress(ctx, api.Client, Target) }, "/hostname", probeTimeout),
			readers.NewAgentHealth(h, AgentEndpointsOf(env.Lab), probeTimeout),
			readers.PolicyRulesFor(env.Lab, h),
		)
		if name == NewcomerNode {
			// Unreadable (no such pod) until a scenario starts it.
			p.Readers = append(p.Readers, readers.NewPodDialer(h, api.Client, dataplane.AgentPolicyProbe, Namespace, Newcomer,
				func(ctx context.Context) (string, error) { return PodAddress(ctx, api.Client, Target) }, "/hostname", probeTimeout).
				As(evidence.Source("newpod/"+name)))
		}
	}
	return p, nil
}

// ReadPolicyExpectation is what the policies cs records allow: for each
// client pod, a connection to the target's port.
func ReadPolicyExpectation(ctx context.Context, cs kubernetes.Interface) (dataplane.PolicyExpectationValue, string, error) {
	v := dataplane.PolicyExpectationValue{Pairs: []dataplane.PolicyPair{}}
	nps, err := cs.NetworkingV1().NetworkPolicies(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return v, "", err
	}
	pods, err := cs.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{LabelSelector: RoleLabel})
	if err != nil {
		return v, "", err
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, Namespace, metav1.GetOptions{})
	if err != nil {
		return v, "", err
	}
	nsLabels := map[string]map[string]string{Namespace: ns.Labels}
	var target *readers.PolicyPod
	var clients []readers.PolicyPod
	nodeOf := map[string]string{}
	for i := range pods.Items {
		p := readers.PolicyPodOf(&pods.Items[i])
		nodeOf[p.Name] = pods.Items[i].Spec.NodeName
		switch {
		case p.Name == Target:
			target = &p
		case p.Labels[RoleLabel] == "client" || p.Labels[RoleLabel] == newcomerRoleValue:
			clients = append(clients, p)
		}
	}
	if target == nil || target.IP == "" {
		return v, "", fmt.Errorf("error: the target pod %s/%s has no address", Namespace, Target)
	}
	for _, c := range clients {
		d, err := readers.PolicyAllows(nps.Items, nsLabels, c, *target, TargetPort, "TCP")
		if err != nil {
			return v, "", fmt.Errorf("error: %w", err)
		}
		v.Pairs = append(v.Pairs, dataplane.PolicyPair{
			From: Namespace + "/" + c.Name, To: Namespace + "/" + Target, Target: fmt.Sprintf("%s:%d", target.IP, TargetPort),
			Allowed: d.Allowed, Isolating: d.Isolating, Why: d.Why,
			EgressDenying: d.EgressDenying, IngressDenying: d.IngressDenying,
			FromNode: nodeOf[c.Name], TargetNode: nodeOf[Target], FromIP: c.IP,
		})
	}
	return v, nps.ResourceVersion, nil
}
