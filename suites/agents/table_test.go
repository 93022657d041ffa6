package agents_test

import (
	"context"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/suites/agents"
)

// changeAfter is how far into the window every change is made: the rounds
// before it show the node agreeing with the API under the fault.
const changeAfter = 5 * time.Second

// window and settle are every scenario's: the window leaves 35 s after the
// change, seven times the bounds; settle lets the healed agent catch up.
const (
	window = 40 * time.Second
	settle = 30 * time.Second
)

// change is a Change made through the admin client.
func change(name string, make func(context.Context, kubernetes.Interface) error) *scenario.Change {
	return &scenario.Change{Name: name, After: changeAfter, Make: func(ctx context.Context, l lab.Lab) error {
		cs, err := adminClient(l)
		if err != nil {
			return err
		}
		return make(ctx, cs)
	}}
}

var (
	replaceBackend = change("replace the only backend of "+agents.Namespace+"/"+agents.Service, agents.ReplaceBackend)
	createDeny     = change("create "+agents.DenyTarget+", isolating the target for ingress", func(ctx context.Context, cs kubernetes.Interface) error {
		return agents.CreatePolicy(ctx, cs, agents.DenyIngress())
	})
	deleteAllow = change("delete "+agents.AllowClient+", the target's only allowing policy", func(ctx context.Context, cs kubernetes.Interface) error {
		return agents.DeletePolicy(ctx, cs, agents.AllowClient)
	})
	replaceAndDeny = change("replace the backend and create "+agents.DenyTarget, func(ctx context.Context, cs kubernetes.Interface) error {
		if err := agents.CreatePolicy(ctx, cs, agents.DenyIngress()); err != nil {
			return err
		}
		return agents.ReplaceBackend(ctx, cs)
	})
)

// startPolicies are the policies a scenario's fixtures start with.
var startPolicies = map[string][]func() *networkingv1.NetworkPolicy{
	"policy-agent-watch-refused-allow-deleted": {agents.DenyIngress, agents.AllowClients},
}

// table is the paper in the order it runs: the feasibility check first.
func table() []scenario.Scenario {
	base := func(s scenario.Scenario) scenario.Scenario {
		s.Shape = disagreeShape
		s.Labels = append([]string{"paper:agents"}, s.Labels...)
		s.Window, s.Settle = window, settle
		s.Invariants = agents.Invariants()
		return s
	}
	return scenario.WithNullArms(
		base(scenario.Scenario{
			ID:     "feasibility-kube-proxy-frozen",
			Title:  "kube-proxy frozen on worker1 while the service's only backend is replaced: worker1 keeps the old backend",
			Labels: []string{"component:kube-proxy", "feasibility"},
			CI:     true,
			Fault:  faults.Freeze("worker1", lab.ServiceKubeProxy),
			Change: replaceBackend,
			// The check tests the detector: with kube-proxy frozen the
			// node must be seen keeping the old backend, or the paper
			// cannot tell a node that applies from one that does not.
			ControlOf: []string{invariant.ServiceRoutesTruthfulName},
		}),
		base(scenario.Scenario{
			ID:     "policy-agent-frozen-deny-created",
			Title:  "the policy agent frozen on worker1 while a deny-ingress policy is created for a target there",
			Labels: []string{"component:policy-agent"},
			CI:     true,
			Fault:  faults.Freeze(agents.TargetNode, lab.ServicePolicyAgent),
			Change: createDeny,
		}),
		base(scenario.Scenario{
			ID:     "policy-agent-watch-refused-allow-deleted",
			Title:  "the policy agent's watch of NetworkPolicies refused on worker1 while the target's allowing policy is deleted",
			Labels: []string{"component:policy-agent"},
			Fault: faults.BlackholeAgentWatch(agents.TargetNode, lab.ServicePolicyAgent,
				faults.WatchedResource{Group: "networking.k8s.io", Resource: "networkpolicies"}),
			Change: deleteAllow,
		}),
		base(scenario.Scenario{
			ID:     "policy-agent-killed-policy-flips",
			Title:  "the policy agent stopped on worker1 and kept down while a deny-ingress policy is created",
			Labels: []string{"component:policy-agent"},
			Fault:  faults.StopService(agents.TargetNode, lab.ServicePolicyAgent),
			Change: createDeny,
		}),
		base(scenario.Scenario{
			ID:     "worker1-cut-from-api",
			Title:  "worker1 cut from every API server and the virtual address while the backend is replaced and a deny policy created",
			Labels: []string{"component:kube-proxy", "component:policy-agent", "component:network"},
			Fault:  faults.HostFromControlPlane("worker1"),
			Change: replaceAndDeny,
		}),
		base(scenario.Scenario{
			ID:     "kube-proxy-watch-refused-backend-replaced",
			Title:  "kube-proxy's EndpointSlice watch refused on worker1 while the backend is replaced; its healthz stays 200",
			Labels: []string{"component:kube-proxy"},
			CI:     true,
			Fault: faults.BlackholeAgentWatch("worker1", lab.ServiceKubeProxy,
				faults.WatchedResource{Group: "discovery.k8s.io", Resource: "endpointslices"}),
			Change: replaceBackend,
		}),
	)
}
