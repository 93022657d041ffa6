package agents

import (
	"context"
	"fmt"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/lab"
)

// The node agents' health endpoints on each node's address.
var AgentEndpoints = []source.AgentEndpoint{
	{Agent: lab.ServiceKubeProxy, Port: 10256, Path: "/healthz"},
	{Agent: lab.ServicePolicyAgent, Port: 20244, Path: "/healthz"},
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
		sampler.OnAPIServers(evidence.AgentServiceEndpoints, func(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
			return ReadServiceEndpoints(ctx, cs)
		}),
		{Name: "agents/nodes", Open: openNodes},
	}
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
			source.NewServiceProxy(evidence.Source("kube-proxy/"+name), h, evidence.AgentServiceTranslation, Namespace, Service),
			source.NewPodDialer(h, api.Client, evidence.AgentServiceProbe, Namespace, ClientPod(name),
				func(ctx context.Context) (string, error) { return ServiceAddress(ctx, api.Client) }, "/hostname", probeTimeout),
			source.NewAgentHealth(h, AgentEndpoints, probeTimeout),
		)
	}
	return p, nil
}
