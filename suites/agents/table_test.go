package agents_test

import (
	"context"
	"time"

	"github.com/faultline/faultline/kits/dataplane/invariants"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/suites/agents"
)

// changeAfter is how far into the window every change is made: the rounds
// before it show the node agreeing with the API under the fault.
const changeAfter = 5 * time.Second

// window is every scenario's: it leaves 35 s after the change, five times
// the longest applying bound. Each scenario's settle is derived from how
// its fault leaves the agents' list and watch at heal (agents.Settle).
const window = 40 * time.Second

// change is a Change made through the admin client.
func change(name string, make func(context.Context, kubernetes.Interface) error) *scenario.Change {
	return changeVia("", name, make)
}

// changeVia is a Change made through the API server on target alone ("":
// the lab's usual address), for a scenario whose fault leaves one server
// unable to write.
func changeVia(target, name string, make func(context.Context, kubernetes.Interface) error) *scenario.Change {
	return &scenario.Change{Name: name, After: changeAfter, Make: func(ctx context.Context, l lab.Lab) error {
		cs, err := adminClientOf(l, target)
		if err != nil {
			return err
		}
		return make(ctx, cs)
	}}
}

var (
	replaceBackend = change("replace the only backend of "+agents.Namespace+"/"+agents.Service, agents.ReplaceBackend)
	addBackend     = change("add a second backend to "+agents.Namespace+"/"+agents.Service, agents.AddBackend)
	createDeny     = change("create "+agents.DenyTarget+", isolating the target for ingress", func(ctx context.Context, cs kubernetes.Interface) error {
		return agents.CreatePolicy(ctx, cs, agents.DenyIngress())
	})
	deleteAllow = change("delete "+agents.AllowClient+", the target's only allowing policy", func(ctx context.Context, cs kubernetes.Interface) error {
		return agents.DeletePolicy(ctx, cs, agents.AllowClient)
	})
	replaceAndDeny = change("replace the backend and create "+agents.DenyTarget, replaceBackendAndDeny)
	// replaceAndDenyViaCP1 is the same change written through cp1, while
	// cp2 cannot reach etcd.
	replaceAndDenyViaCP1 = changeVia("cp1", "replace the backend and create "+agents.DenyTarget+", through cp1", replaceBackendAndDeny)
	// deleteAndCompact deletes what the agents applied and then compacts
	// etcd to its current revision, so a watch resumed from a revision
	// before the deletions cannot be served and must list again.
	deleteAndCompact = &scenario.Change{
		Name: "replace the backend, delete " + agents.AllowClient + ", then compact etcd", After: changeAfter,
		Make: func(ctx context.Context, l lab.Lab) error {
			cs, err := adminClient(l)
			if err != nil {
				return err
			}
			if err := agents.DeletePolicy(ctx, cs, agents.AllowClient); err != nil {
				return err
			}
			if err := agents.ReplaceBackend(ctx, cs); err != nil {
				return err
			}
			return faults.CompactEtcd(ctx, l)
		},
	}
)

func replaceBackendAndDeny(ctx context.Context, cs kubernetes.Interface) error {
	if err := agents.CreatePolicy(ctx, cs, agents.DenyIngress()); err != nil {
		return err
	}
	return agents.ReplaceBackend(ctx, cs)
}

// worker1Agents restarts (or pins) both of worker1's agents.
var worker1Agents = []string{lab.ServiceKubeProxy, lab.ServicePolicyAgent}

// restartAgents restarts worker1's agents.
func restartAgents() fault.Fault {
	return faults.Compound(faults.Restart("worker1", lab.ServiceKubeProxy), faults.Restart("worker1", lab.ServicePolicyAgent))
}

// refuseAgentsWatches refuses both of worker1's agents the watch of what
// they apply.
func refuseAgentsWatches() fault.Fault {
	return faults.Compound(
		faults.BlackholeAgentWatch("worker1", lab.ServiceKubeProxy, faults.WatchedResource{Group: "discovery.k8s.io", Resource: "endpointslices"}),
		faults.BlackholeAgentWatch("worker1", lab.ServicePolicyAgent, faults.WatchedResource{Group: "networking.k8s.io", Resource: "networkpolicies"}))
}

// startPolicies are the policies a scenario's fixtures start with.
var startPolicies = map[string][]func() *networkingv1.NetworkPolicy{
	"policy-agent-watch-refused-allow-deleted": {agents.DenyIngress, agents.AllowClients},
	"watches-refused-compacted-then-heal":      {agents.DenyIngress, agents.AllowClients},
	"policy-agent-frozen-newcomer-starts":      {agents.DenyNewcomerEgress},
	"control-isolated-from-start":              {agents.DenyNewcomerEgress},
}

// recreateDNS gives the DNS fixture's service another cluster address;
// deleteDNS deletes it.
var (
	recreateDNS = change("recreate "+agents.Namespace+"/"+agents.DNSService+", which gives it a new cluster address", agents.RecreateDNSService)
	deleteDNS   = change("delete "+agents.Namespace+"/"+agents.DNSService+", so its name no longer exists", agents.DeleteDNSService)
)

// refuseCoreDNSWatch refuses CoreDNS's account the list and watch of
// Services and EndpointSlices, and closes its connections.
func refuseCoreDNSWatch() fault.Fault {
	return faults.BlackholeServiceAccountWatch(agents.DNSNamespace+"/coredns", agents.DNSSelector,
		faults.WatchedResource{Resource: "services"}, faults.WatchedResource{Group: "discovery.k8s.io", Resource: "endpointslices"})
}

// control makes s a positive control of invs (labels selfcheck and
// control:<invariant>): its fault arm must judge each VIOLATED.
func control(s scenario.Scenario, invs ...string) scenario.Scenario {
	s.Labels = append([]string{"selfcheck"}, s.Labels...)
	s.ControlOf = invs
	return s
}

// startNewcomer starts a pod selected by a policy that denies its egress.
var startNewcomer = change("start "+agents.Newcomer+" on "+agents.NewcomerNode+", isolated for egress by "+agents.DenyNewcomer, agents.StartNewcomer)

// table is the paper in the order it runs: the feasibility check first,
// then the findings (among them the two frozen-agent controls, beside the
// findings that share their agent), then the other positive controls.
func table() []scenario.Scenario {
	base := func(s scenario.Scenario) scenario.Scenario {
		s.Shape = lab11Shape
		s.Labels = append([]string{"paper:agents"}, s.Labels...)
		s.Window = window
		// The paper's invariants, then the scenario's own.
		s.Invariants = append(agents.Invariants(), s.Invariants...)
		return s
	}
	return scenario.WithNullArms(
		base(control(scenario.Scenario{
			ID:     "feasibility-kube-proxy-frozen",
			Title:  "kube-proxy frozen on worker1 while the service's only backend is replaced: worker1 keeps the old backend",
			Labels: []string{"component:kube-proxy", "feasibility"},
			CI:     true,
			Fault:  faults.Freeze("worker1", lab.ServiceKubeProxy),
			Change: replaceBackend,
			Settle: agents.Settle(agents.AgentsResumed),
			// The check tests the detector: with kube-proxy frozen the
			// node must be seen keeping the old backend, or the paper
			// cannot tell a node that applies from one that does not.
		}, invariants.ServiceRoutesTruthfulName)),
		// A control of policy-enforced, not a finding: a frozen process
		// programs nothing, so a deny created while the agent is frozen
		// is the textbook way to break the invariant; its VIOLATED shows
		// the detector working.
		base(control(scenario.Scenario{
			ID:     "policy-agent-frozen-deny-created",
			Title:  "the policy agent frozen on worker1 while a deny-ingress policy is created for a target there",
			Labels: []string{"component:policy-agent"},
			CI:     true,
			Fault:  faults.Freeze(agents.TargetNode, lab.ServicePolicyAgent),
			Change: createDeny,
			Settle: agents.Settle(agents.AgentsResumed),
		}, invariants.PolicyEnforcedName)),
		base(scenario.Scenario{
			ID:     "policy-agent-watch-refused-allow-deleted",
			Title:  "the policy agent's watch of NetworkPolicies refused on worker1 while the target's allowing policy is deleted",
			Labels: []string{"component:policy-agent"},
			Fault: faults.BlackholeAgentWatch(agents.TargetNode, lab.ServicePolicyAgent,
				faults.WatchedResource{Group: "networking.k8s.io", Resource: "networkpolicies"}),
			Change: deleteAllow,
			Settle: agents.Settle(agents.ListsRefused),
		}),
		// A control of isolated-from-start, not a finding: a frozen
		// agent makes no chain for a pod that starts, so the new pod's
		// first connections pass; its VIOLATED shows the detector
		// working.
		base(control(scenario.Scenario{
			ID:     "policy-agent-frozen-newcomer-starts",
			Title:  "the policy agent frozen on worker1 while a new pod starts there under a policy that denies its egress; the new pod dials the target",
			Labels: []string{"component:policy-agent"},
			Fault:  faults.Freeze(agents.NewcomerNode, lab.ServicePolicyAgent),
			Change: startNewcomer,
			Settle: agents.Settle(agents.AgentsResumed),
			// Judged only where a pod starts during the window.
			Invariants: []invariant.Invariant{invariants.IsolatedFromStart()},
		}, invariants.IsolatedFromStartName)),
		base(scenario.Scenario{
			ID:     "worker1-cut-from-api",
			Title:  "worker1 cut from every API server and the virtual address while the backend is replaced and a deny policy created",
			Labels: []string{"component:kube-proxy", "component:policy-agent", "component:network"},
			Fault:  faults.HostFromControlPlane("worker1"),
			Change: replaceAndDeny,
			Settle: agents.Settle(agents.ConnectionsCut),
		}),
		base(scenario.Scenario{
			ID:     "kube-proxy-watch-refused-backend-replaced",
			Title:  "kube-proxy's EndpointSlice watch refused on worker1 while the backend is replaced; its healthz stays 200",
			Labels: []string{"component:kube-proxy"},
			CI:     true,
			Fault: faults.BlackholeAgentWatch("worker1", lab.ServiceKubeProxy,
				faults.WatchedResource{Group: "discovery.k8s.io", Resource: "endpointslices"}),
			Change: replaceBackend,
			Settle: agents.Settle(agents.ListsRefused),
		}),
		base(scenario.Scenario{
			ID:     "coredns-watch-refused-service-recreated",
			Title:  "CoreDNS refused its watch of Services and EndpointSlices while a service is recreated with a new cluster address",
			Labels: []string{"component:coredns"},
			Fault:  refuseCoreDNSWatch(),
			Change: recreateDNS,
			Settle: agents.Settle(agents.ListsRefused),
			// Judged only where the name's records change.
			Invariants: []invariant.Invariant{invariants.DNSTruthful(agents.DNSBound, agents.DNSCacheTTL)},
		}),
		base(scenario.Scenario{
			ID:     "agents-restarted-while-cut-from-api",
			Title:  "worker1's agents restarted while worker1 cannot reach the API, then the backend replaced and a deny policy created: old rules kept or dropped?",
			Labels: []string{"component:kube-proxy", "component:policy-agent", "component:network"},
			// Partition first: the agents start again without the API.
			Fault: faults.Compound(faults.HostFromControlPlane("worker1"), restartAgents()),
			// The null arm restarts them with the API in reach: they
			// list, and apply the change within the bounds.
			Decoy:  restartAgents(),
			Change: replaceAndDeny,
			Settle: agents.Settle(agents.ConnectionsCut),
		}),
		base(scenario.Scenario{
			ID:     "watches-refused-compacted-then-heal",
			Title:  "worker1's agents refused their watches while the backend is replaced, a policy deleted and etcd compacted; after heal they must list again and converge",
			Labels: []string{"component:kube-proxy", "component:policy-agent", "component:etcd"},
			Fault:  refuseAgentsWatches(),
			Change: deleteAndCompact,
			Settle: agents.Settle(agents.ListsRefused),
		}),
		base(scenario.Scenario{
			ID:     "pinned-apiserver-cut-from-etcd",
			Title:  "worker1's agents pinned to cp2's API server, cp2 cut from etcd but still serving, while the backend is replaced and a deny policy created through cp1",
			Labels: []string{"component:kube-proxy", "component:policy-agent", "component:apiserver"},
			Fault:  faults.Compound(faults.PinAgents("worker1", "cp2", worker1Agents...), faults.APIServerFromEtcd("cp2")),
			// The null arm pins them to cp2 and leaves cp2 connected.
			Decoy:  faults.PinAgents("worker1", "cp2", worker1Agents...),
			Change: replaceAndDenyViaCP1,
			Settle: agents.Settle(agents.ServerRelisted),
		}),
		// The positive controls. Each breaks the invariant it controls by
		// a mechanism stated beside it, so its fault arm must judge it
		// VIOLATED, and its null arm, the same change with nothing
		// injected, PRESERVED.
		//
		// policy-enforced: the policy agent stopped, and kept down, while
		// a deny-ingress policy is created. kube-router leaves the rules
		// it programmed in the kernel when it stops, and nothing else
		// programs a node's filter, so the target keeps admitting the
		// clients it no longer may.
		base(control(scenario.Scenario{
			ID:     "control-policy-enforced",
			Title:  "positive control: the policy agent stopped on worker1 and kept down while a deny-ingress policy is created",
			Labels: []string{"component:policy-agent"},
			Fault:  faults.StopService(agents.TargetNode, lab.ServicePolicyAgent),
			Change: createDeny,
			Settle: agents.Settle(agents.AgentsResumed),
		}, invariants.PolicyEnforcedName)),
		// isolated-from-start: the policy agent stopped after it handled
		// deny-newcomer-egress (its rules for the witness show it), then
		// the newcomer started under that policy. kube-router isolates a
		// pod in a chain of the pod's own, made when it hears of the pod;
		// stopped, it makes none, and traffic of a pod it has no chain for
		// passes its forward chain: the newcomer's first connection is
		// answered.
		base(control(scenario.Scenario{
			ID:         "control-isolated-from-start",
			Title:      "positive control: the policy agent stopped on worker1 after it isolated the witness, then a new pod started under the same policy dials the target",
			Labels:     []string{"component:policy-agent"},
			Fault:      faults.StopService(agents.NewcomerNode, lab.ServicePolicyAgent),
			Change:     startNewcomer,
			Settle:     agents.Settle(agents.AgentsResumed),
			Invariants: []invariant.Invariant{invariants.IsolatedFromStart()},
		}, invariants.IsolatedFromStartName)),
		// agent-health-truthful: kube-proxy's list and watch of
		// EndpointSlices refused on worker1 while a second backend is
		// added. kube-proxy's /healthz turns unhealthy only for an update
		// it queued and did not apply within 2 × its sync period
		// (pkg/proxy/healthcheck); refused, it hears of no update and
		// queues none, so it answers 200 while worker1 does not forward
		// to the new backend: service-routes-truthful breaks with it, on
		// a node that misses a ready endpoint.
		base(control(scenario.Scenario{
			ID:     "control-agent-health-truthful",
			Title:  "positive control: kube-proxy's EndpointSlice list and watch refused on worker1 while a second backend is added; its healthz has nothing queued to fail on",
			Labels: []string{"component:kube-proxy"},
			Fault: faults.BlackholeAgentWatch("worker1", lab.ServiceKubeProxy,
				faults.WatchedResource{Group: "discovery.k8s.io", Resource: "endpointslices"}),
			Change: addBackend,
			Settle: agents.Settle(agents.ListsRefused),
		}, invariants.AgentHealthTruthfulName, invariants.ServiceRoutesTruthfulName)),
		// dns-truthful: CoreDNS refused its list and watch of Services
		// and EndpointSlices while the DNS fixture's service is deleted.
		// client-go replaces an informer's store only from a successful
		// list, and the kubernetes plugin answers from that store, so the
		// instances keep answering the deleted service's address, a fresh
		// entry each time their cache refills, while the API holds no
		// such name.
		base(control(scenario.Scenario{
			ID:         "control-dns-truthful",
			Title:      "positive control: CoreDNS refused its list and watch of Services and EndpointSlices while a service is deleted",
			Labels:     []string{"component:coredns"},
			Fault:      refuseCoreDNSWatch(),
			Change:     deleteDNS,
			Settle:     agents.Settle(agents.ListsRefused),
			Invariants: []invariant.Invariant{invariants.DNSTruthful(agents.DNSBound, agents.DNSCacheTTL)},
		}, invariants.DNSTruthfulName)),
		// agents-converged: kube-proxy stopped on worker1, and kept
		// stopped through heal and settle, while the backend is replaced.
		// kube-proxy leaves its rules in the kernel when it stops and
		// nothing else writes them: after heal worker1 still forwards to
		// the deleted backend (service-routes-truthful breaks with it, in
		// the window). Released (started again) once the verdicts are in.
		base(control(scenario.Scenario{
			ID:     "control-agents-converged",
			Title:  "positive control: kube-proxy stopped on worker1 through heal while the backend is replaced",
			Labels: []string{"component:kube-proxy"},
			Fault:  controls.StoppedThroughHeal("worker1", lab.ServiceKubeProxy),
			Change: replaceBackend,
			Settle: agents.Settle(agents.AgentsResumed),
		}, invariants.AgentsConvergedName, invariants.ServiceRoutesTruthfulName)),
	)
}
