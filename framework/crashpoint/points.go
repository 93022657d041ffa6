package crashpoint

// Point is one declared crash point: its name, the package that reaches
// it, and what has happened (and what has not) when it is reached.
type Point struct {
	Name string
	// Where is the package (below framework/) that reaches it.
	Where string
	// State is what the lab and the heal ledger hold at that moment.
	State string
	// Repeats: reached once per host, part or agent; "#<n>" picks one.
	Repeats bool
}

// Points are every crash point, in the order a run reaches them. A test
// (points_test.go) checks that every point reached in the code is here and
// every point here is reached, and README.md lists them.
var Points = []Point{
	// The engine's phases (framework/scenario).
	{Name: "run/inject/before-record", Where: "scenario", State: "the run is about to write its fault to the heal ledger: nothing is written, nothing injected"},
	{Name: "run/inject/recorded", Where: "scenario", State: "the ledger entry is written and synced; Inject has not been called"},
	{Name: "run/inject/injected", Where: "scenario", State: "Inject returned without error: the fault is in place, the window has not begun"},
	{Name: "run/window/probed", Where: "scenario", State: "a probe of the window returned: the fault is in place and being watched", Repeats: true},
	{Name: "run/heal/started", Where: "scenario", State: "heal began (its sampling started); the fault's Heal has not been called"},
	{Name: "run/heal/healed", Where: "scenario", State: "Heal returned without error; the ledger entry is still there"},
	{Name: "run/release/released", Where: "scenario", State: "a lingering fault's Release returned without error; its ledger entry is still there"},

	// The heal ledger (framework/ledger): writing an entry, and HealAll
	// (`faultline heal`, and every suite's start).
	{Name: "ledger/record/written", Where: "ledger", State: "the entry is written and synced under its temporary name, not renamed into the ledger: Record has not returned, nothing is injected"},
	{Name: "ledger/heal/locked", Where: "ledger", State: "HealAll holds an entry's lock and has decoded its fault; nothing of it is healed yet", Repeats: true},
	{Name: "ledger/heal/healed", Where: "ledger", State: "HealAll healed (and released) an entry's fault; the entry is not removed yet", Repeats: true},

	// Faults that change the lab in several steps (framework/fault/...).
	{Name: "compound/inject/part", Where: "fault/faults", State: "the n-th part of a compound fault is injected, the next is not", Repeats: true},
	{Name: "compound/heal/part", Where: "fault/faults", State: "the n-th part healed (from the last part back), the earlier parts not", Repeats: true},
	{Name: "partition/inject/host", Where: "fault/faults", State: "the partition's chain is installed on the n-th host of those involved, not on the next", Repeats: true},
	{Name: "partition/heal/host", Where: "fault/faults", State: "the partition's chain is removed from the n-th host of the lab (in config order), not from the next", Repeats: true},
	{Name: "throttle/inject/host", Where: "fault/faults", State: "the throttle's qdisc is installed on the n-th host it names, not on the next", Repeats: true},
	{Name: "throttle/heal/host", Where: "fault/faults", State: "the throttle's qdisc is removed from the n-th host, not from the next", Repeats: true},
	{Name: "restart-service/inject/stopped", Where: "fault/faults", State: "the service is stopped and not started again"},
	{Name: "freeze/inject/pod-marked", Where: "fault/faults", State: "the agent's pod's cgroup is named in the marker of the fault's tag on its node (an agent the lab runs as a pod); the cgroup is not frozen yet"},
	{Name: "freeze/heal/host", Where: "fault/faults", State: "SIGCONT sent on the n-th host that may run the service (the leader variants look at every one), not on the next", Repeats: true},
	{Name: "freeze/heal/pod-thawed", Where: "fault/faults", State: "the agent's pod's cgroup is thawed; the marker is not removed yet"},
	{Name: "power-off/heal/powered-on", Where: "fault/faults", State: "the host is powered on; its services not yet checked and started"},
	{Name: "blackhole-watch/inject/host", Where: "fault/faults", State: "the n-th API server's authorization configuration is replaced (its original kept), the next not", Repeats: true},
	{Name: "blackhole-watch/inject/applied", Where: "fault/faults", State: "every API server applied the denying configuration; the refused component's connections are not closed yet"},
	{Name: "blackhole-watch/heal/host", Where: "fault/faults", State: "the n-th API server's original configuration is back (and applied), the next not", Repeats: true},
	{Name: "apiserver-etcd-fork/inject/started", Where: "fault/faults", State: "the fork's etcd runs on the host, empty; nothing redirected"},
	{Name: "apiserver-etcd-fork/inject/copied", Where: "fault/faults", State: "the cluster's keys are copied into the fork; nothing redirected"},
	{Name: "apiserver-etcd-fork/inject/redirected", Where: "fault/faults", State: "the first member's address is DNATed to the fork; the other members are not refused yet"},
	{Name: "apiserver-etcd-fork/inject/refused", Where: "fault/faults", State: "the other members are refused; the API server's connections to etcd are not closed yet"},
	{Name: "apiserver-etcd-fork/heal/unredirected", Where: "fault/faults", State: "the DNAT chain is removed; the refusing chain and the fork are still there"},
	{Name: "apiserver-etcd-fork/heal/unrefused", Where: "fault/faults", State: "both chains are removed; the fork still runs"},
	{Name: "pin-agents/inject/pod-chain", Where: "fault/faults", State: "the node's nat chain DNATing the API addresses to the server is in place, first in OUTPUT (agents run as pods); the agents' connections made before it are not closed yet, and no agent's kubeconfig is pinned"},
	{Name: "pin-agents/inject/agent", Where: "fault/faults", State: "the n-th agent's kubeconfig is pinned (its original kept) and the agent restarted, the next not", Repeats: true},
	{Name: "pin-agents/heal/pod-chain-removed", Where: "fault/faults", State: "the node's nat chain is removed (agents run as pods); the connections made through it, whose DNAT holds in conntrack, are not closed on the server yet, and no agent's kubeconfig is restored"},
	{Name: "pin-agents/heal/restored", Where: "fault/faults", State: "the n-th agent's original kubeconfig is back in place; the agent, still running on the pinned one, is not restarted yet", Repeats: true},
	{Name: "pod-freeze/inject/marked", Where: "fault/faults", State: "the marker naming the pod's cgroup is written; the cgroup is not frozen yet"},
	{Name: "pod-freeze/heal/thawed", Where: "fault/faults", State: "the pod's cgroup is thawed; its marker is not removed yet"},
	{Name: "etcd-no-space/inject/member", Where: "fault/faults", State: "the NOSPACE alarm is raised for the n-th member, not for the next", Repeats: true},
	{Name: "etcd-no-space/heal/disarmed", Where: "fault/faults", State: "the n-th NOSPACE alarm is disarmed, the next not", Repeats: true},
	{Name: "cut-then-force-delete/inject/cut", Where: "fault/controls", State: "the cut is in place; the node is not tainted yet, the pod not deleted"},
	{Name: "cut-then-delete-node/inject/cut", Where: "fault/controls", State: "the cut is in place; the Node object is not deleted yet"},
	{Name: "cut-then-delete-node/heal/uncut", Where: "fault/controls", State: "the cut is removed; the kubelet is not restarted yet, so a deleted Node is not registered again"},
	{Name: "cut-then-delete-node/heal/kubelet-stopped", Where: "fault/controls", State: "the node's kubelet is stopped for its restart, not started"},
	{Name: "dead-endpoint/inject/controller-manager", Where: "fault/controls", State: "the controller-manager is stopped on the n-th control-plane host, not on the next", Repeats: true},
	{Name: "dead-endpoint/inject/kubelet", Where: "fault/controls", State: "every controller-manager and the node's kubelet are stopped; the pod's containers still run"},
	{Name: "dead-endpoint/heal/kubelet", Where: "fault/controls", State: "the node's kubelet runs again; the controller-managers are not started yet"},
	{Name: "stop-then-out-of-service/inject/stopped", Where: "fault/controls", State: "the stop is in place; the node is not tainted out-of-service yet"},
	{Name: "stop-then-out-of-service/heal/started", Where: "fault/controls", State: "the stopped service runs again; the out-of-service taint is still on the node"},
	{Name: "quota-then-delete/inject/quota", Where: "fault/controls", State: "the zero-pod quota exists; no pod is deleted yet"},
	{Name: "finalizer-then-delete/inject/finalizer", Where: "fault/controls", State: "the pod carries the hold finalizer; it is not deleted yet"},
}

// Lookup returns the declared point of that name.
func Lookup(name string) (Point, bool) {
	for _, p := range Points {
		if p.Name == name {
			return p, true
		}
	}
	return Point{}, false
}
