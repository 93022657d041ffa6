package readers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/kits/dataplane"
	"github.com/faultline/faultline/lab"
)

// Fixtures name what the kit's sources read: the objects a suite
// installs for the data plane's questions.
type Fixtures struct {
	// Namespace holds every object below but the DNS instances.
	Namespace string
	// Service is the test service the nodes translate.
	Service string
	// ClientNodes are the nodes with a client pod, ClientPod its name.
	ClientNodes []string
	ClientPod   func(node string) string
	// Target is the pod the clients connect to, on TargetPort (the
	// netexec port every pod answers on).
	Target     string
	TargetPort int
	// RoleLabel is the label whose value says a pod's part; pods whose
	// value is one of ClientRoles connect to the target.
	RoleLabel   string
	ClientRoles []string
	// Newcomer is a pod a scenario starts on NewcomerNode during the
	// window ("newpod/<node>"); empty when none does.
	Newcomer, NewcomerNode string
	// DNSService is the DNS fixture's service, asked for as DNSName;
	// DNSNamespace and DNSSelector find the CoreDNS instances, asked
	// from DNSAskFrom's client pod.
	DNSService, DNSName, DNSNamespace, DNSSelector, DNSAskFrom string
	// ProbeTimeout is how long a client pod waits for one connection: a
	// dropped connection shows as a timeout this long, inside the read's
	// own bound.
	ProbeTimeout time.Duration
}

// AgentEndpoints are the node agents' health endpoints on each node's
// address: kube-proxy's and kube-router's.
var AgentEndpoints = []AgentEndpoint{
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
func AgentEndpointsOf(l lab.Lab) []AgentEndpoint {
	var out []AgentEndpoint
	for _, e := range AgentEndpoints {
		if e.Agent == lab.ServicePolicyAgent && lab.PolicyAgentOf(l) != lab.PolicyAgentKubeRouter {
			continue
		}
		out = append(out, e)
	}
	return out
}

// Extras are the kit's evidence beside the framework's, for a suite's
// sampler (sampler.Options.Extras): the service's endpoints, the
// policies' expectation and the DNS name's records on every API server;
// each client node's kube-proxy rules for the service
// ("kube-proxy/<node>"), a new connection from its client pod to the
// service and to the target ("pod/<node>"), its agents' health
// ("agents/<node>") and its policy agent's rules ("policy-agent/<node>");
// the newcomer's connection ("newpod/<node>"); and each CoreDNS
// instance's answer ("coredns/<node>").
func (f Fixtures) Extras() []sampler.Extra {
	return []sampler.Extra{
		sampler.OnAPIServers(dataplane.AgentServiceEndpoints, func(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
			return f.ReadServiceEndpoints(ctx, cs)
		}),
		sampler.OnAPIServers(dataplane.AgentPolicyExpected, func(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
			return f.ReadPolicyExpectation(ctx, cs)
		}),
		sampler.OnAPIServers(dataplane.AgentDNSExpected, func(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
			return f.ReadDNSExpected(ctx, cs)
		}),
		{Name: "agents/nodes", Open: f.openNodes},
		{Name: "agents/dns", Open: f.openDNS},
	}
}

// ReadDNSExpected is the DNS fixture's records as cs has them: its
// cluster address, none while the service does not exist.
func (f Fixtures) ReadDNSExpected(ctx context.Context, cs kubernetes.Interface) (dataplane.DNSExpectedValue, string, error) {
	v := dataplane.DNSExpectedValue{Name: f.DNSName, IPs: []string{}}
	svc, err := cs.CoreV1().Services(f.Namespace).Get(ctx, f.DNSService, metav1.GetOptions{})
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
func (f Fixtures) openDNS(env sampler.Env) (sampler.Parts, error) {
	api, ok := env.FirstAPIServer()
	if !ok {
		return sampler.Parts{}, fmt.Errorf("no API server client to find the DNS instances with")
	}
	h, err := env.Lab.Host(f.DNSAskFrom)
	if err != nil {
		return sampler.Parts{}, fmt.Errorf("the DNS evidence: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods, err := api.Client.CoreV1().Pods(f.DNSNamespace).List(ctx, metav1.ListOptions{LabelSelector: f.DNSSelector})
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
		p.Readers = append(p.Readers, NewPodDNS(h, api.Client, f.Namespace, f.ClientPod(f.DNSAskFrom), f.DNSNamespace, f.DNSSelector, n, f.DNSName, f.ProbeTimeout))
	}
	if len(p.Readers) == 0 {
		return sampler.Parts{}, fmt.Errorf("no DNS instance (%s in %s) is placed on a node", f.DNSSelector, f.DNSNamespace)
	}
	return p, nil
}

// ReadServiceEndpoints reads the test service's endpoints through cs.
func (f Fixtures) ReadServiceEndpoints(ctx context.Context, cs kubernetes.Interface) (evidence.EndpointsValue, string, error) {
	list, err := cs.DiscoveryV1().EndpointSlices(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + f.Service})
	if err != nil {
		return evidence.EndpointsValue{}, "", err
	}
	return source.EndpointsOf(list.Items), list.ResourceVersion, nil
}

func (f Fixtures) openNodes(env sampler.Env) (sampler.Parts, error) {
	api, ok := env.FirstAPIServer()
	if !ok {
		return sampler.Parts{}, fmt.Errorf("no API server client to find the client pods with")
	}
	var p sampler.Parts
	for _, name := range f.ClientNodes {
		h, err := env.Lab.Host(name)
		if err != nil {
			return sampler.Parts{}, fmt.Errorf("the agents' evidence: %w", err)
		}
		p.Readers = append(p.Readers,
			source.ProxyFor(env.Lab, source.NewServiceProxy(evidence.Source("kube-proxy/"+name), h, dataplane.AgentServiceTranslation, f.Namespace, f.Service)),
			NewPodDialer(h, api.Client, dataplane.AgentServiceProbe, f.Namespace, f.ClientPod(name),
				func(ctx context.Context) (string, error) { return f.ServiceAddress(ctx, api.Client) }, "/hostname", f.ProbeTimeout),
			NewPodDialer(h, api.Client, dataplane.AgentPolicyProbe, f.Namespace, f.ClientPod(name),
				func(ctx context.Context) (string, error) { return f.PodAddress(ctx, api.Client, f.Target) }, "/hostname", f.ProbeTimeout),
			NewAgentHealth(h, AgentEndpointsOf(env.Lab), f.ProbeTimeout),
			PolicyRulesFor(env.Lab, h),
		)
		if f.Newcomer != "" && name == f.NewcomerNode {
			// Unreadable (no such pod) until a scenario starts it.
			p.Readers = append(p.Readers, NewPodDialer(h, api.Client, dataplane.AgentPolicyProbe, f.Namespace, f.Newcomer,
				func(ctx context.Context) (string, error) { return f.PodAddress(ctx, api.Client, f.Target) }, "/hostname", f.ProbeTimeout).
				As(evidence.Source("newpod/"+name)))
		}
	}
	return p, nil
}

// ReadPolicyExpectation is what the policies cs records allow: for each
// client pod, a connection to the target's port.
func (f Fixtures) ReadPolicyExpectation(ctx context.Context, cs kubernetes.Interface) (dataplane.PolicyExpectationValue, string, error) {
	v := dataplane.PolicyExpectationValue{Pairs: []dataplane.PolicyPair{}}
	nps, err := cs.NetworkingV1().NetworkPolicies(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return v, "", err
	}
	pods, err := cs.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{LabelSelector: f.RoleLabel})
	if err != nil {
		return v, "", err
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, f.Namespace, metav1.GetOptions{})
	if err != nil {
		return v, "", err
	}
	nsLabels := map[string]map[string]string{f.Namespace: ns.Labels}
	var target *PolicyPod
	var clients []PolicyPod
	nodeOf := map[string]string{}
	for i := range pods.Items {
		p := PolicyPodOf(&pods.Items[i])
		nodeOf[p.Name] = pods.Items[i].Spec.NodeName
		switch {
		case p.Name == f.Target:
			target = &p
		case slices.Contains(f.ClientRoles, p.Labels[f.RoleLabel]):
			clients = append(clients, p)
		}
	}
	if target == nil || target.IP == "" {
		return v, "", fmt.Errorf("error: the target pod %s/%s has no address", f.Namespace, f.Target)
	}
	for _, c := range clients {
		d, err := PolicyAllows(nps.Items, nsLabels, c, *target, int32(f.TargetPort), "TCP")
		if err != nil {
			return v, "", fmt.Errorf("error: %w", err)
		}
		v.Pairs = append(v.Pairs, dataplane.PolicyPair{
			From: f.Namespace + "/" + c.Name, To: f.Namespace + "/" + f.Target, Target: fmt.Sprintf("%s:%d", target.IP, f.TargetPort),
			Allowed: d.Allowed, Isolating: d.Isolating, Why: d.Why,
			EgressDenying: d.EgressDenying, IngressDenying: d.IngressDenying,
			FromNode: nodeOf[c.Name], TargetNode: nodeOf[f.Target], FromIP: c.IP,
		})
	}
	return v, nps.ResourceVersion, nil
}

// ErrNoClusterIP is returned while the service has no cluster address.
var ErrNoClusterIP = errors.New("the agents' service has no cluster IP")

// ServiceAddress is the service's cluster address and port (host:port).
func (f Fixtures) ServiceAddress(ctx context.Context, cs kubernetes.Interface) (string, error) {
	svc, err := cs.CoreV1().Services(f.Namespace).Get(ctx, f.Service, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", ErrNoClusterIP
	}
	return fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port), nil
}

// PodAddress is pod's address and the netexec port (ip:port).
func (f Fixtures) PodAddress(ctx context.Context, cs kubernetes.Interface, pod string) (string, error) {
	p, err := cs.CoreV1().Pods(f.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if p.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s/%s has no address yet", f.Namespace, pod)
	}
	return fmt.Sprintf("%s:%d", p.Status.PodIP, f.TargetPort), nil
}
