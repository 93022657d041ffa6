package disagree_test

import (
	"slices"
	"time"

	"github.com/faultline/faultline/fixtures"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
)

// paper labels every scenario of paper 1 carries besides its own.
func paper(class string, components ...string) []string {
	ls := []string{"paper:disagree", "class:" + class}
	for _, c := range components {
		ls = append(ls, "component:"+c)
	}
	return ls
}

// node and controlPlane are the two window lengths of the paper: a node
// fault needs time for the controllers to notice, evict and replace; a
// control-plane fault needs time for leases to lapse and a failover. Every
// scenario needs lab11's shape.
func node(id, title string, f fault.Fault, labels []string) scenario.Scenario {
	return scenario.Scenario{ID: id, Title: title, Fault: f, Labels: labels, Shape: lab11Shape,
		Window: profile.NodeWindow, Settle: profile.Settle, Invariants: invariant.All(profile.Invariants)}
}

func controlPlane(id, title string, f fault.Fault, labels []string) scenario.Scenario {
	return scenario.Scenario{ID: id, Title: title, Fault: f, Labels: labels, Shape: lab11Shape,
		Window: profile.ControlPlaneWindow, Settle: profile.Settle, Invariants: invariant.All(profile.Invariants)}
}

// control makes s a positive control of invs (labels selfcheck and
// control:<invariant>).
func control(s scenario.Scenario, invs ...string) scenario.Scenario {
	s.Labels = append([]string{"selfcheck"}, s.Labels...)
	s.ControlOf = invs
	return s
}

// crashStop are the fourteen crash-stop and timing scenarios. Each carries
// its true paper class: crash-stop where a host, a process or a link stops;
// timing where everything runs but late or on another clock (slow etcd
// writes, clock skew); history where etcd's history is cut under live
// watches (compaction).
var crashStop = []scenario.Scenario{
	// A powered-off node stops heartbeating; after node-monitor-grace-period
	// the node controller marks it Ready=Unknown and taints it unreachable,
	// after the toleration its pods are marked for deletion. Kubernetes
	// promises the StatefulSet pod is not started elsewhere until the old
	// one is known gone (at most one), and that endpoints drop the dead
	// pod once the node is NotReady.
	node("worker-power-off", "a worker powered off: its stateful pod is never run twice and endpoints drop it",
		faults.PowerOff("worker1"), paper("crash-stop", "node")),
	// The kubelet stopped while containerd and the containers keep running:
	// the control plane sees the node as dead though its pods still serve.
	// The promise is the same as for a power-off; here the old copy is
	// really still running, so single-copy and graceful deletion are
	// tested for real.
	node("kubelet-stopped", "the kubelet stopped while its containers keep running",
		faults.StopService("worker1", "kubelet"), paper("crash-stop", "kubelet")),
	// worker1 cut from every host: the control plane cannot tell this from
	// a power-off, while the node keeps running its pods. At most one copy
	// of the stateful pod must run at any moment, in spite of the eviction.
	node("worker-partitioned", "a worker cut from every other host",
		faults.Isolate("worker1"), paper("crash-stop", "network")),
	// worker1 cut from the control plane (and its virtual address) but
	// still reaching the other workers: its pods keep serving peers while
	// the API calls the node unreachable. Endpoints must still drop it
	// after the bound; at most one stateful copy.
	node("worker-from-control-plane", "a worker cut from the control plane only",
		faults.HostFromControlPlane("worker1"), paper("crash-stop", "network")),
	// cp2's API server loses etcd. Its consistent reads fail rather than
	// serve stale data: Kubernetes promises an API server without etcd
	// refuses, it does not lie; the others go on.
	controlPlane("apiserver-from-etcd", "one API server cut from etcd",
		faults.APIServerFromEtcd("cp2"), paper("crash-stop", "apiserver", "network")),
	// cp2's API server killed: clients of the virtual address are served
	// by the others (cp1 holds the address), and nothing acknowledged is
	// lost.
	controlPlane("apiserver-killed", "one API server killed",
		faults.Kill("cp2", "kube-apiserver"), paper("crash-stop", "apiserver")),
	// The controller-manager holding the lease killed: another takes over
	// after the lease duration. At most one leader acts at any moment.
	controlPlane("controller-manager-leader-killed", "the leading controller-manager killed",
		faults.KillLeader("kube-controller-manager"), paper("crash-stop", "controller-manager")),
	// etcd split 3|2: the majority side keeps a leader and serves; the
	// minority refuses linearizable requests. No acknowledged write is
	// lost and no client reads an older revision after a newer one.
	controlPlane("etcd-split-3-2", "etcd split three to two",
		faults.EtcdSplit(3), paper("crash-stop", "etcd", "network")),
	// etcd's raft leader cut from its peers: the other four elect a new
	// leader within the election timeout; the old one steps down.
	controlPlane("etcd-leader-isolated", "etcd's leader cut from its peers",
		faults.EtcdLeaderFromPeers(), paper("crash-stop", "etcd", "network")),
	// etcd split 2|2|1: no side has a majority, so no write is accepted
	// anywhere. Kubernetes promises it stops rather than diverges: reads
	// fail, nothing acknowledged is lost, and the cluster comes back when
	// the quorum does.
	controlPlane("etcd-quorum-lost", "etcd split two, two and one: no quorum anywhere",
		faults.Partition([]string{"role:etcd[0:2]"}, []string{"role:etcd[2:4]"}, []string{"role:etcd[4:]"}),
		paper("crash-stop", "etcd", "network")),
	// What etcd's leader, found at inject time, sends its peers held to
	// 512 kbit/s in all: every commit waits for a majority to acknowledge
	// the leader's append, and every append and heartbeat queues behind
	// the others, so writes slow down (on lab11 a write through the
	// virtual address went from a median of 20ms to 190ms) while every
	// member stays up; a heartbeat held past the election timeout moves
	// the leadership to a member that is not throttled. Kubernetes
	// promises slowness, not disagreement: leases may lapse, nothing
	// acknowledged is lost, no read goes back. Refined from "etcd1's peer
	// traffic delayed 200ms": the local lab's kernel has no netem, so the
	// delay could not run there, and a delay from etcd1 slowed commits
	// only while etcd1 happened to lead.
	controlPlane("etcd-slow-writes", "etcd's leader's traffic to its peers held to 512 kbit/s",
		faults.EtcdLeaderThrottle(512),
		paper("timing", "etcd", "network")),
	// etcd compacted to its current revision while the API servers and the
	// kubelets watch: watchers get "too old resource version" and must
	// relist. The promise: a relist never lets a client go back in time,
	// and no watcher misses a change for good.
	controlPlane("etcd-compaction", "etcd compacted under live watches",
		faults.EtcdCompact(false), paper("history", "etcd")),
	// worker1's wall clock stepped 90s ahead: Kubernetes promises that node
	// health rests on the control plane's clock (lease renewals are judged
	// by when the controller sees them change), so a skewed kubelet is not
	// marked dead. On the local lab (one kernel, one CLOCK_REALTIME) the
	// skew is emulated per process and the run says so.
	node("clock-skew-worker", "a worker's clock 90s ahead",
		faults.ClockSkew("worker1", 90*time.Second), paper("timing", "clock")),
	// cp2's clock stepped 90s ahead: its controllers and certificates see
	// another time. Leader election is by renew observation, not absolute
	// time, so at most one leader still acts. Emulated per process on the
	// local lab.
	controlPlane("clock-skew-control-plane", "a control-plane host's clock 90s ahead",
		faults.ClockSkew("cp2", 90*time.Second), paper("timing", "clock")),
}

// gray are the nine gray-failure scenarios: every node stays Ready while
// something underneath has stopped.
var gray = []scenario.Scenario{
	// worker1's pod network cut while its management network, and so its
	// kubelet's heartbeat, stays up. The node stays Ready and readiness
	// probes (run by the kubelet on the node itself) still pass, so
	// Kubernetes keeps the pod in the Service's endpoints though no peer
	// can reach it. That is by design (no component checks pod-to-pod
	// reachability), so it is no violation of endpoints-truthful, which
	// judges what Kubernetes promises; the endpoint probes in the
	// evidence show the unreachable endpoint beside the verdicts. The
	// promises tested: at most one stateful copy, and no endpoint left
	// pointing at a dead pod.
	node("pod-network-cut", "worker1's pod network cut, its management network up",
		faults.PodNetworkCut("worker1"), paper("gray", "network")),
	// containerd frozen with SIGSTOP: the kubelet's runtime calls hang, the
	// PLEG turns unhealthy, but running containers and their shims go on.
	// Kubernetes promises the node is reported NotReady (PLEG not healthy)
	// and no second copy starts while the first still runs.
	node("containerd-frozen", "containerd frozen on worker1",
		faults.Freeze("worker1", "containerd"), paper("gray", "containerd")),
	// kube-proxy frozen: existing iptables rules stay, new endpoints are
	// not programmed. Kubernetes makes no promise to notice; the question
	// is whether endpoints and what a node forwards to disagree.
	node("kube-proxy-frozen", "kube-proxy frozen on worker1",
		faults.Freeze("worker1", "kube-proxy"), paper("gray", "kube-proxy")),
	// etcd's NOSPACE alarm raised: every write is refused with "database
	// space exceeded" while reads go on and every node stays Ready. The
	// promise: writes fail loudly, none is acknowledged and lost.
	controlPlane("etcd-nospace", "etcd refusing writes after a NOSPACE alarm",
		faults.EtcdNoSpace(), paper("gray", "etcd")),
	// What every etcd member sends to cp2 held to 64 kbit/s each, so
	// cp2's API server gets its watch events and read answers late and its
	// watch cache falls behind etcd while it still answers (on lab11 a
	// resourceVersion=0 list from cp2 trailed cp1's by up to 5 revisions,
	// and a consistent list from cp2 took 80-230ms instead of 10ms).
	// Refined from "slowed by a delay": the local lab's kernel has no
	// netem; and from 30% loss on what cp2 sends to etcd, which left the
	// watch cache level with cp1's (the events flow the other way, and a
	// lost segment is resent within milliseconds). The promise: consistent
	// reads stay fresh (they wait for the cache to reach etcd's revision),
	// and api-agreement holds within the bound.
	controlPlane("apiserver-watch-cache-lag", "what etcd sends cp2's API server held to 64 kbit/s per member",
		faults.APIServerFromEtcdThrottle("cp2", 64), paper("gray", "apiserver", "network")),
	// "kubelet can send but not receive": the API servers deny worker1's
	// kubelet the list and watch of its pods, and nothing else. Its node
	// status, lease and pod status updates go through, so worker1 stays
	// Ready while it no longer hears of pods bound to it or deleted from
	// it. The promise: a node reported Ready is not taken as running what
	// it cannot know of — a pod deleted meanwhile is not reported gone
	// before its containers stop, and at most one stateful copy runs.
	node("kubelet-deaf", "worker1's kubelet reports to the control plane but hears nothing of its pods",
		faults.BlackholeWatch("worker1"), paper("gray", "kubelet", "apiserver")),
	// The API server on cp1, which holds the virtual address (keepalived
	// gives cp1 the highest priority), frozen: its livez check fails and
	// keepalived should move the address. The promise: clients of the
	// virtual address are served again by another server, and nothing
	// acknowledged is lost or read back older.
	controlPlane("apiserver-frozen-holding-vip", "the API server holding the virtual address frozen",
		faults.Freeze("cp1", "kube-apiserver"), paper("gray", "apiserver")),
	// The scheduler holding its lease frozen: its lease lapses and another
	// scheduler leads. Refined from "DNS server frozen": no fault can
	// freeze one container's process (CoreDNS runs as pods, on the local
	// lab too since paper 2); the frozen-leader question the DNS scenario
	// asked of a serving component is asked of the scheduler instead.
	controlPlane("scheduler-frozen-holding-lease", "the leading scheduler frozen while holding its lease",
		faults.FreezeLeader("kube-scheduler"), paper("gray", "scheduler")),
	// The controller-manager holding its lease frozen: it neither renews
	// nor acts, another takes the lease after it lapses. When it is thawed
	// at heal it must notice it lost the lease before acting: at most one
	// leader acts at any moment.
	controlPlane("controller-manager-frozen-holding-lease", "the leading controller-manager frozen while holding its lease",
		faults.FreezeLeader("kube-controller-manager"), paper("gray", "controller-manager")),
}

// selfCheck are the positive controls: scenarios known to break an
// invariant, which must be judged VIOLATED (and whose null arm must not).
// Each names the invariants it controls.
var selfCheck = []scenario.Scenario{
	// worker1's stateful pod left a ready endpoint of nothing: every
	// controller-manager stopped (so neither the EndpointSlice controller
	// nor the node lifecycle controller acts), then worker1's kubelet (so
	// nothing reports the pod not Ready or restarts it), then the pod's
	// containers stopped through worker1's runtime. The API keeps the node
	// Ready and the address ready while cri/worker1 runs no container of
	// the pod: endpoints-truthful must be VIOLATED once the bound passes.
	control(node("control-endpoints-truthful", "positive control: a pod's containers stopped with its kubelet and every controller-manager down",
		controls.DeadEndpoint("worker1", controls.PodRef{Namespace: evidence.DefaultSubjects.PodNamespace, Name: evidence.DefaultSubjects.PodName}),
		[]string{"component:controller-manager", "component:kubelet", "component:containerd"}),
		invariant.EndpointsTruthfulName),
	// worker1 cut off from the control plane, and once it is tainted
	// unreachable its StatefulSet pod force-deleted through the API, as an
	// operator unsticking it would. The StatefulSet controller starts the
	// pod on another worker at once; worker1's kubelet never hears of the
	// deletion and keeps the first copy running. Kubernetes documents that
	// a forced deletion gives up the at-most-one guarantee, so single-copy,
	// read from the runtimes over SSH, must be VIOLATED. The deletion is
	// noted on the timeline, so graceful-deletion judges it as forced.
	control(node("control-single-copy", "positive control: a cut-off StatefulSet pod force-deleted runs twice",
		controls.CutThenForceDelete(faults.HostFromControlPlane("worker1"), controls.Pod{Node: "worker1", Namespace: evidence.DefaultSubjects.PodNamespace, Name: evidence.DefaultSubjects.PodName, TaintWait: profile.NodeWindow}, suiteSampler.Note),
		[]string{"component:kubelet", "component:network"}),
		invariant.SingleCopyName),
	// worker1 cut off from the control plane and its Node object deleted,
	// as an operator removing a dead machine would. The pod garbage
	// collector deletes the pods of a node that no longer exists without
	// waiting for any kubelet, and the cut-off kubelet keeps their
	// containers running: the stateful pod leaves the API while its
	// containers run, and no one force-deleted it, so graceful-deletion
	// must be VIOLATED. The StatefulSet controller then starts the pod on
	// another worker while the first copy still runs, as after a forced
	// deletion, so single-copy must be VIOLATED too. Its window is a
	// minute longer than a node fault's:
	// the collector waits a fixed 40 s quarantine, checked every 20 s,
	// whatever the timer profile.
	control(withWindow(node("control-graceful-deletion", "positive control: a cut-off node's object deleted, its pods collected while they run",
		controls.CutThenDeleteNode(faults.HostFromControlPlane("worker1"), "worker1"),
		[]string{"component:kubelet", "component:controller-manager"}),
		profile.NodeWindow+time.Minute),
		invariant.GracefulDeletionName, invariant.SingleCopyName),
	// The API server on cp3 (not the one holding the virtual address, so
	// the kubelets stay with the cluster) given an etcd of its own: a copy
	// of every key of the cluster's etcd, as after a backup restored under
	// one server or an --etcd-servers pointing at another cluster.
	// Kubernetes assumes every API server reads one etcd; here there are
	// two histories. cp3 answers with the copy's resourceVersions, lower
	// than those the other servers returned (no-time-travel). cp3's
	// controller-manager and scheduler, which talk to cp3's server, find
	// their leases unrenewed in the copy and lead there while the
	// cluster's leaders lead (single-leader, read from each host's own
	// metrics). In the copy no kubelet renews a lease, so cp3's node
	// controller marks the workers NotReady there while the other servers
	// say Ready (api-agreement). The writer of this scenario writes
	// through cp3 alone: what cp3 acknowledged during the window lives
	// only in the copy, which heal drops, and the register reads older
	// after heal (acknowledged-writes-survive). The window is a node
	// fault's: the lease must lapse and the grace period pass in the copy.
	control(withWriter(withWindow(controlPlane("control-split-brain", "positive control: one API server on a copy of etcd",
		faults.APIServerEtcdFork("cp3"),
		[]string{"component:apiserver", "component:etcd"}),
		profile.NodeWindow), "cp3"),
		invariant.APIAgreementName, invariant.NoTimeTravelName, invariant.SingleLeaderName, invariant.AcknowledgedWritesSurviveName),
	// The web Deployment's namespace frozen with a ResourceQuota of zero
	// pods, as an operator stopping a namespace from growing would, and one
	// of its ready pods deleted gracefully. The ReplicaSet controller's
	// replacement is refused at admission, so the Deployment stays a
	// replica short with every component healthy: replicas-restored must
	// be VIOLATED. The quota outlasts heal on purpose (it is what the
	// invariant is judged on) and is released once the verdicts are in.
	control(node("control-replicas-restored", "positive control: a namespace frozen by a quota, a Deployment's pod deleted",
		controls.QuotaThenDelete(controls.Deployment{Namespace: fixtures.Namespace, Name: fixtures.DeploymentName, Wait: profile.Fixtures}),
		[]string{"component:controller-manager"}),
		invariant.ReplicasRestoredName),
	// The stateful pod given a finalizer no controller removes and deleted
	// gracefully, as a controller that died with its finalizer in place
	// leaves it. The kubelet stops its containers, the object stays
	// Terminating, and the StatefulSet controller does not start a
	// replacement while it exists: the lab never returns to its baseline,
	// so convergence must be VIOLATED. The finalizer outlasts heal on
	// purpose and is released once the verdicts are in.
	control(node("control-convergence", "positive control: the stateful pod held Terminating by a finalizer",
		controls.FinalizerThenDelete(controls.PodRef{Namespace: evidence.DefaultSubjects.PodNamespace, Name: evidence.DefaultSubjects.PodName}),
		[]string{"component:controller-manager", "component:kubelet"}),
		invariant.ConvergenceName),
}

func withWindow(s scenario.Scenario, window time.Duration) scenario.Scenario {
	s.Window = window
	return s
}

// withWriter routes the scenario's register writer through writer's API
// server alone.
func withWriter(s scenario.Scenario, writer string) scenario.Scenario {
	s.Writer = writer
	return s
}

// ciRuns are the arms the `ci` label goes on: crash-stop (kubelet, etcd,
// leader), gray, a null arm and a positive control; six runs, because a
// reset of lab11 alone takes one to five minutes on a shared 2-core
// machine (measured: eight runs made `make run` take 26.5 minutes).
var ciRuns = map[string][]scenario.Arm{
	"kubelet-stopped":                  {scenario.FaultArm, scenario.NullArm},
	"controller-manager-leader-killed": {scenario.FaultArm},
	"etcd-split-3-2":                   {scenario.FaultArm},
	"containerd-frozen":                {scenario.FaultArm},
	"control-endpoints-truthful":       {scenario.FaultArm},
}

// table is every scenario with its null arm, ciRuns in the ci subset.
func table() []scenario.Scenario {
	all := scenario.WithNullArms(slices.Concat(crashStop, gray, selfCheck)...)
	for i, s := range all {
		all[i].CI = slices.Contains(ciRuns[s.ID], s.Arm)
		// The engine adds class:<fault class> itself; where that is the
		// paper's class too (crash-stop), say it once.
		auto := all[i].AutoLabels()
		all[i].Labels = slices.DeleteFunc(slices.Clone(s.Labels), func(l string) bool { return slices.Contains(auto, l) })
	}
	return all
}
