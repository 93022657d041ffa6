package agents

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/kits/dataplane"
	"github.com/faultline/faultline/kits/dataplane/readers"
	"github.com/faultline/faultline/lab"
)

// fixtures are this suite's fixtures as the data plane's kit reads them.
var fixtures = readers.Fixtures{
	Namespace:    Namespace,
	Service:      Service,
	ClientNodes:  ClientNodes,
	ClientPod:    ClientPod,
	Target:       Target,
	TargetPort:   TargetPort,
	RoleLabel:    RoleLabel,
	ClientRoles:  []string{"client", newcomerRoleValue},
	Newcomer:     Newcomer,
	NewcomerNode: NewcomerNode,
	DNSService:   DNSService,
	DNSName:      DNSName,
	DNSNamespace: DNSNamespace,
	DNSSelector:  DNSSelector,
	DNSAskFrom:   DNSAskFrom,
	ProbeTimeout: time.Second,
}

// The node agents' health endpoints on each node's address: kube-proxy's
// and kube-router's (readers.AgentEndpoints).
var AgentEndpoints = readers.AgentEndpoints

// AgentEndpointsOf are the health endpoints asked on l's nodes
// (readers.AgentEndpointsOf: the policy agent's only where the lab file
// names kube-router).
func AgentEndpointsOf(l lab.Lab) []readers.AgentEndpoint { return readers.AgentEndpointsOf(l) }

// Extras are the suite's evidence beside the framework's, asked of the
// data plane's kit for this suite's fixtures (readers.Fixtures.Extras):
// the service's endpoints on every API server, each client node's
// kube-proxy rules for the service ("kube-proxy/<node>"), a new
// connection from its client pod to the service ("pod/<node>"), and its
// agents' health ("agents/<node>").
func Extras() []sampler.Extra { return fixtures.Extras() }

// ReadDNSExpected is the DNS fixture's records as cs has them: its
// cluster address, none while the service does not exist.
func ReadDNSExpected(ctx context.Context, cs kubernetes.Interface) (dataplane.DNSExpectedValue, string, error) {
	return fixtures.ReadDNSExpected(ctx, cs)
}

// ReadServiceEndpoints reads the test service's endpoints through cs.
func ReadServiceEndpoints(ctx context.Context, cs kubernetes.Interface) (evidence.EndpointsValue, string, error) {
	return fixtures.ReadServiceEndpoints(ctx, cs)
}

// ReadPolicyExpectation is what the policies cs records allow: for each
// client pod, a connection to the target's port.
func ReadPolicyExpectation(ctx context.Context, cs kubernetes.Interface) (dataplane.PolicyExpectationValue, string, error) {
	return fixtures.ReadPolicyExpectation(ctx, cs)
}
