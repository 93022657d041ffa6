package crashmatrix_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/fault/faults"
	storedfaults "github.com/faultline/faultline/kits/storeddata/faults"
	"github.com/faultline/faultline/lab"
)

// shape is what the catalog needs of a topology: its hosts by role and
// whether its storage fences at detach.
type shape struct {
	topology     string
	workers      []string
	controlPlane []string
	// fenced is the StorageClass whose volumes are fenced at detach; ""
	// where the lab has none.
	fenced string
}

// worker is the i-th worker, wrapping around on a lab with fewer.
func (s shape) worker(i int) string { return s.workers[i%len(s.workers)] }
func (s shape) cp(i int) string     { return s.controlPlane[i%len(s.controlPlane)] }

// need is a fixture a kind's faults act on, made before each of its cells
// and removed after, so every cell starts from the clean lab.
type need int

const (
	needNothing need = iota
	// needPod is one running pod (netexec) on the kind's node; with a
	// fenced class on the lab, stop-then-out-of-service's pod mounts a
	// fenced block volume.
	needPod
	// needDeployment is a Deployment of two pods.
	needDeployment
)

// fixtureNamespace holds every fixture; it is made once per lab.
const fixtureNamespace = "crash"

// fixtures names what a cell's fixtures are.
type fixtures struct {
	Node, Pod, Deployment, Claim string
}

// entry is one fault kind of the registry in the matrix: the fault a cell
// injects, the fixture it acts on and the kind's own crash points.
type entry struct {
	kind string
	need need
	// node is the worker index the fixture pod goes to.
	node int
	make func(s shape, fx fixtures) fault.Fault
	// inject and heal are the kind's own crash points inside its inject
	// and its heal, with their counts (crashpoint's <point>#<n>).
	inject, heal []string
	lingering    bool
	// unreachable says why the local lab cannot reach a cell ("" when it
	// can): the kind's inject refuses there, say. A key is a cell's name
	// ("mid-inject-2": that cell alone) or its name without the number
	// ("mid-inject": every such cell).
	unreachable map[string]string
	// only lists the topologies the kind runs on; empty: every one but
	// pair (pair is for power).
	only []string
	// unbuilt says why the matrix runs none of the kind's cells ("" when
	// it runs them): the fixtures the kind acts on are not among the
	// matrix's.
	unbuilt string
}

const (
	// injectRefused is why delay reaches nothing past its inject on the
	// local lab.
	injectRefused = "the local kernel has no sch_prio/sch_netem: delay's inject refuses before it changes anything (lab.ErrUnsupported), so the run never has the fault in place"
	// noStorageFixtures is why the matrix runs none of paper 3's
	// controls' cells.
	noStorageFixtures = "not built: the kind acts on paper 3's workloads (a ledger or elector StatefulSet on a claim, its history in the lab's external store), which the matrix does not make"
	// agentsAsServices is why a step taken only for a node agent the lab
	// runs as a DaemonSet's pod is never reached.
	freezeOfAService = "the cell's fault freezes the scheduler's leader, a host service, and the matrix's labs (lab11, lab11s, pair) run their node agents as host services too (kubernetes.agents unset: services, the default): the freeze's pod steps, taken only for a node agent the lab runs as a DaemonSet pod, are never reached"
	agentsAsServices = "the matrix's labs (lab11, lab11s, pair) run kube-proxy and kube-router as host services (kubernetes.agents unset: services, the default), so the step taken only for a node agent the lab runs as a DaemonSet pod is never reached; lab11-pods.yaml runs them as pods, and the matrix does not bring it up"
)

// catalog is every fault kind of the registry, with the fault its cells
// inject.
var catalog = []entry{
	{kind: faults.KindPartition, make: func(s shape, _ fixtures) fault.Fault { return faults.Isolate(s.worker(2)) },
		inject: []string{"partition/inject/host#1"}, heal: []string{"partition/heal/host#1"}},
	{kind: faults.KindDelay, make: func(s shape, _ fixtures) fault.Fault {
		return faults.Delay(s.worker(0), []string{s.cp(0)}, 100*time.Millisecond, 0)
	}, unreachable: map[string]string{cellInjected: injectRefused, cellWindow: injectRefused}},
	{kind: faults.KindLoss, make: func(s shape, _ fixtures) fault.Fault {
		return faults.Loss(s.worker(0), []string{"role:" + string(lab.RoleControlPlane)}, 30)
	}},
	{kind: faults.KindThrottle, make: func(s shape, _ fixtures) fault.Fault {
		return faults.Throttle("role:"+string(lab.RoleWorker), []string{"role:" + string(lab.RoleControlPlane)}, 1024)
	}, inject: []string{"throttle/inject/host#1"}, heal: []string{"throttle/heal/host#1"}},
	// The pod steps' points come last, so the service steps' cells keep
	// their names (mid-inject-1, mid-heal-1) on every lab.
	{kind: faults.KindFreeze, make: func(shape, fixtures) fault.Fault { return faults.FreezeLeader(lab.ServiceScheduler) },
		inject: []string{"freeze/inject/pod-marked"}, heal: []string{"freeze/heal/host#1", "freeze/heal/pod-thawed"},
		unreachable: map[string]string{cellInjected + "-1": freezeOfAService, cellMidHeal + "-2": freezeOfAService}},
	{kind: faults.KindKill, make: func(s shape, _ fixtures) fault.Fault { return faults.Kill(s.worker(1), lab.ServiceKubeProxy) }},
	{kind: faults.KindStopService, make: func(s shape, _ fixtures) fault.Fault {
		return faults.StopService(s.worker(2), lab.ServiceKubelet)
	}},
	{kind: faults.KindRestart, make: func(s shape, _ fixtures) fault.Fault { return faults.Restart(s.worker(1), lab.ServiceKubelet) },
		inject: []string{"restart-service/inject/stopped"}},
	{kind: faults.KindPowerOff, make: func(s shape, _ fixtures) fault.Fault { return faults.PowerOff(s.worker(len(s.workers) - 1)) },
		heal: []string{"power-off/heal/powered-on"}, only: []string{"lab11", "lab11s", "pair"}},
	{kind: faults.KindClockSkew, make: func(s shape, _ fixtures) fault.Fault { return faults.ClockSkew(s.worker(0), 90*time.Second) }},
	{kind: faults.KindPodNetworkCut, make: func(s shape, _ fixtures) fault.Fault { return faults.PodNetworkCut(s.worker(0)) }},
	{kind: faults.KindBlackholeWatch, make: func(s shape, _ fixtures) fault.Fault { return faults.BlackholeWatch(s.worker(0)) },
		inject: []string{"blackhole-watch/inject/host#1", "blackhole-watch/inject/applied"}, heal: []string{"blackhole-watch/heal/host#1"}},
	{kind: faults.KindAPIServerEtcdFork, make: func(s shape, _ fixtures) fault.Fault { return faults.APIServerEtcdFork(s.cp(1)) },
		inject: []string{"apiserver-etcd-fork/inject/started", "apiserver-etcd-fork/inject/copied", "apiserver-etcd-fork/inject/redirected", "apiserver-etcd-fork/inject/refused"},
		heal:   []string{"apiserver-etcd-fork/heal/unredirected", "apiserver-etcd-fork/heal/unrefused"}},
	{kind: faults.KindEtcdCompact, make: func(shape, fixtures) fault.Fault { return faults.EtcdCompact(false) }},
	{kind: faults.KindEtcdNoSpace, make: func(shape, fixtures) fault.Fault { return faults.EtcdNoSpace() },
		inject: []string{"etcd-no-space/inject/member#1"}, heal: []string{"etcd-no-space/heal/disarmed#1"}},
	{kind: faults.KindPinAgents, make: func(s shape, _ fixtures) fault.Fault {
		return faults.PinAgents(s.worker(0), s.cp(0), lab.ServiceKubeProxy, lab.ServicePolicyAgent)
	}, inject: []string{"pin-agents/inject/agent#1", "pin-agents/inject/pod-chain"}, heal: []string{"pin-agents/heal/restored#1", "pin-agents/heal/pod-chain-removed"},
		unreachable: map[string]string{cellInjected + "-2": agentsAsServices, cellMidHeal + "-2": agentsAsServices}},
	{kind: faults.KindPodFreeze, need: needPod, node: 0, make: func(_ shape, fx fixtures) fault.Fault { return faults.FreezePod(fixtureNamespace, fx.Pod) },
		inject: []string{"pod-freeze/inject/marked"}, heal: []string{"pod-freeze/heal/thawed"}},
	// A compound is released as a lingering fault (it releases any part
	// that lingers), so its run reaches the release point too.
	{kind: faults.KindCompound, lingering: true, make: func(s shape, _ fixtures) fault.Fault {
		return faults.Compound(faults.StopService(s.worker(1), lab.ServiceKubeProxy), faults.PodNetworkCut(s.worker(1)), faults.Freeze(s.worker(2), lab.ServicePolicyAgent))
	}, inject: []string{"compound/inject/part#1", "compound/inject/part#2"}, heal: []string{"compound/heal/part#1", "compound/heal/part#2"}},
	{kind: fault.NullKind, make: func(s shape, _ fixtures) fault.Fault {
		return fault.NullWithDecoy(faults.Isolate(s.worker(2)), faults.Freeze(s.worker(2), lab.ServiceKubeProxy))
	}},
	{kind: controls.KindCutThenForceDelete, need: needPod, node: 2, make: func(s shape, fx fixtures) fault.Fault {
		return controls.CutThenForceDelete(faults.Isolate(fx.Node), controls.Pod{Node: fx.Node, Namespace: fixtureNamespace, Name: fx.Pod, TaintWait: 2 * time.Minute}, nil)
	}, inject: []string{"cut-then-force-delete/inject/cut"}},
	{kind: controls.KindCutThenDeleteNode, make: func(s shape, _ fixtures) fault.Fault {
		return controls.CutThenDeleteNode(faults.Isolate(s.worker(2)), s.worker(2))
	}, inject: []string{"cut-then-delete-node/inject/cut"}, heal: []string{"cut-then-delete-node/heal/uncut", "cut-then-delete-node/heal/kubelet-stopped"}},
	{kind: controls.KindDeadEndpoint, need: needPod, node: 1, make: func(_ shape, fx fixtures) fault.Fault {
		return controls.DeadEndpoint(fx.Node, controls.PodRef{Namespace: fixtureNamespace, Name: fx.Pod})
	}, inject: []string{"dead-endpoint/inject/controller-manager#1", "dead-endpoint/inject/kubelet"}, heal: []string{"dead-endpoint/heal/kubelet"}},
	{kind: controls.KindQuotaThenDelete, need: needDeployment, lingering: true, make: func(_ shape, fx fixtures) fault.Fault {
		return controls.QuotaThenDelete(controls.Deployment{Namespace: fixtureNamespace, Name: fx.Deployment, Wait: 90 * time.Second})
	}, inject: []string{"quota-then-delete/inject/quota"}},
	{kind: controls.KindFinalizerThenDelete, need: needPod, node: 0, lingering: true, make: func(_ shape, fx fixtures) fault.Fault {
		return controls.FinalizerThenDelete(controls.PodRef{Namespace: fixtureNamespace, Name: fx.Pod})
	}, inject: []string{"finalizer-then-delete/inject/finalizer"}},
	// Heal leaves the service stopped on purpose; release (from the
	// ledger too) starts it.
	{kind: controls.KindStoppedThroughHeal, lingering: true, make: func(s shape, _ fixtures) fault.Fault {
		return controls.StoppedThroughHeal(s.worker(1), lab.ServiceKubeProxy)
	}},
	{kind: controls.KindStopThenOutOfService, need: needPod, node: 2, make: func(s shape, fx fixtures) fault.Fault {
		return controls.StopThenOutOfService(faults.StopService(fx.Node, lab.ServiceKubelet), fx.Node, 2*time.Minute)
	}, inject: []string{"stop-then-out-of-service/inject/stopped"}, heal: []string{"stop-then-out-of-service/heal/started"}},
	// Paper 3's controls. Their heals undo nothing a crash could leave
	// but the StatefulSet stop-then-damage-filesystem scales to zero and
	// the bare pod second-ledger-writer makes (deleted by the name its
	// params hold); the damage itself outlives heal on purpose until the
	// lab's reset.
	{kind: storedfaults.KindLedgerRecordDamaged, make: func(_ shape, fx fixtures) fault.Fault {
		return storedfaults.LedgerRecordDamage(storedfaults.LedgerDamage{Namespace: fixtureNamespace, Claim: fx.Claim, File: "ledger.log", Damage: storedfaults.DamageGarbled})
	}, only: []string{"lab11s"}, unbuilt: noStorageFixtures},
	{kind: controls.KindStopThenDamageFilesystem, make: func(_ shape, fx fixtures) fault.Fault {
		return controls.StopThenDamageFilesystem(controls.FilesystemDamage{Namespace: fixtureNamespace, StatefulSet: "ledger", Claim: fx.Claim, Replicas: 1})
	}, only: []string{"lab11s"}, unbuilt: noStorageFixtures},
	{kind: storedfaults.KindLeaseHandedOver, make: func(shape, fixtures) fault.Fault {
		return storedfaults.LeaseHandedOver(storedfaults.LeaseHandover{Namespace: fixtureNamespace, Lease: "elector", HistoryPrefix: "/elector"})
	}, only: []string{"lab11s"}, unbuilt: noStorageFixtures},
	{kind: controls.KindSecondLedgerWriter, make: func(shape, fixtures) fault.Fault {
		return controls.SecondLedgerWriter(controls.SecondWriter{Namespace: fixtureNamespace, StatefulSet: "ledger", Pod: "ledger-second-writer"})
	}, only: []string{"lab11s"}, unbuilt: noStorageFixtures},
}

// The cells of every kind. A cell is one moment the run is killed at.
const (
	cellRecorded   = "before-inject" // the ledger entry written, nothing injected
	cellInjected   = "mid-inject"    // inside the kind's inject (its own points)
	cellWindow     = "window"        // the fault in place, a probe of the window done
	cellHealBegun  = "heal-begun"    // heal began, the kind's heal is one step
	cellMidHeal    = "mid-heal"      // inside the kind's heal (its own points)
	cellHealed     = "healed"        // healed, the ledger entry not removed
	cellReleased   = "released"      // a lingering fault released, its entry not removed
	cellHealKilled = "heal-killed"   // the run killed in its window, then `faultline heal` killed mid-heal, then run again
	cellFencing    = "fencing"       // the run killed while the fenced volume is detached (and fenced) from the out-of-service node
)

// cell is one moment a kind's run is killed at.
type cell struct {
	name string
	// point is where the run is killed ("" for cellFencing: the test
	// kills it from outside).
	point string
	// healPoint, for cellHealKilled, is where `faultline heal` is killed.
	healPoint string
	// unreachable says why the local lab cannot run this cell.
	unreachable string
}

// cells are the kind's cells on s, in the order a run reaches them.
func (e entry) cells(s shape) []cell {
	var out []cell
	add := func(name, point string) {
		base, _, _ := strings.Cut(name, "#")
		base = strings.TrimRight(base, "-0123456789")
		u := e.unreachable[name]
		if u == "" {
			u = e.unreachable[base]
		}
		if e.unbuilt != "" {
			u = e.unbuilt
		}
		out = append(out, cell{name: name, point: point, unreachable: u})
	}
	add(cellRecorded, "run/inject/recorded")
	for i, p := range e.inject {
		add(fmt.Sprintf("%s-%d", cellInjected, i+1), p)
	}
	add(cellWindow, "run/window/probed")
	if len(e.heal) == 0 {
		add(cellHealBegun, "run/heal/started")
	}
	for i, p := range e.heal {
		add(fmt.Sprintf("%s-%d", cellMidHeal, i+1), p)
	}
	add(cellHealed, "run/heal/healed")
	if e.lingering {
		add(cellReleased, "run/release/released")
	}
	// `faultline heal` killed inside the kind's heal, or between its
	// heal and the entry's removal where the heal is one step; the run
	// before it killed at the last moment it reaches with the fault in
	// place.
	heal := "ledger/heal/healed"
	if len(e.heal) > 0 {
		heal = e.heal[0]
	}
	before := "run/window/probed"
	if e.unreachable[cellWindow] != "" {
		before = "run/inject/recorded"
	}
	out = append(out, cell{name: cellHealKilled, point: before, healPoint: heal, unreachable: e.unbuilt})
	if e.kind == controls.KindStopThenOutOfService && s.fenced != "" {
		out = append(out, cell{name: cellFencing})
	}
	return out
}

// runsOn says whether the kind's cells run on the topology.
func (e entry) runsOn(topology string) bool {
	if len(e.only) == 0 {
		return topology != "pair"
	}
	for _, t := range e.only {
		if t == topology {
			return true
		}
	}
	return false
}

// declared checks a point with its count against crashpoint.Points.
func declared(point string) error {
	name, _, _ := strings.Cut(point, "#")
	if _, ok := crashpoint.Lookup(name); !ok {
		return fmt.Errorf("%s is no declared crash point", point)
	}
	return nil
}
