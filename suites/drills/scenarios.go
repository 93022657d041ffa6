package drills

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	// The lab file is read through the backends' registry: every kind.
	_ "github.com/faultline/faultline/lab/backends"
	"github.com/faultline/faultline/lab/timers"
)

// Scenario IDs; suites/drills/report pairs runs by them.
const (
	IDKubeletStopped = "drill-6c2-kubelet-stopped"
	IDPowerOff       = "drill-6c1-power-off"
	IDRackCut        = "drill-racks-r1-cut"
	IDRackForce      = "drill-racks-r1-cut-force-delete"
)

// The drills' lab shapes: a lab of either may have any name, so each
// scenario declares the shape it needs, which the engine checks before
// the lab is reset (a lab without it skips the scenario, saying what it
// lacks) and which labels it topology:pair or topology:racks.
var (
	Pair  = scenario.Shape{Name: "pair", Check: func(l lab.Lab) error { _, err := PairShapeOf(l); return err }}
	Racks = scenario.Shape{Name: "racks", Check: func(l lab.Lab) error { _, err := RacksShapeOf(l); return err }}
)

// The topology labels the shapes give, to select the drills by.
const (
	LabelPair  = scenario.LabelTopology + "pair"
	LabelRacks = scenario.LabelTopology + "racks"
)

// TimersOf returns the timers of the lab $FAULTLINE_LAB names, or of the
// first lab of a pool ($FAULTLINE_LABS, $FAULTLINE_POOL), as its backend
// reads them from its lab file without opening the lab (the fast
// profile's when no lab is named: the suite then stops at opening the
// lab).
func TimersOf() (lab.Timers, error) { return scenario.TimersFromEnvOr(timers.Fast) }

// PairWindow is how long the pair drill keeps the worker away: long
// enough for detection (the grace period, plus a monitor pass), the
// NoExecute toleration to run out, and the replacements' fate to show.
func PairWindow(p lab.Timers) time.Duration {
	tol := max(p.NotReadyToleration, p.UnreachableToleration)
	return p.NodeMonitorGracePeriod + p.NodeMonitorPeriod + tol + 30*time.Second
}

// RacksWindow is how long rack R1 stays cut off: past leader election,
// detection and eviction, as for the pair.
func RacksWindow(p lab.Timers) time.Duration {
	return PairWindow(p) + p.LeaderLeaseDuration
}

// Table is the drills' scenarios for a lab whose cluster runs with timers
// p. sampler receives the positive control's forced deletion.
func Table(p lab.Timers, sampler *Sampler) []scenario.Scenario {
	settle := 3*time.Minute + p.NodeMonitorGracePeriod
	pairLabels := []string{"paper:drills", "component:kubelet"}
	racksLabels := []string{"paper:drills", "component:network", "component:etcd"}
	single := invariant.SingleCopy()
	return []scenario.Scenario{
		{
			ID:    IDKubeletStopped,
			Title: "6.C2 control: with the worker's kubelet stopped, the node goes Unknown and is tainted, its pods are evicted but keep running, and the Terminating pods go once the kubelet returns",
			// The worker's name is the lab's; the fault is resolved from
			// the lab when the table is made (see PairTable).
			Labels: pairLabels, Shape: Pair, CI: true, Window: PairWindow(p), Settle: settle,
			Invariants: []invariant.Invariant{single, DeletionsComplete()},
		},
		{
			ID:     IDPowerOff,
			Title:  "6.C1 experiment: with the worker powered off, the API sees the same as with its kubelet stopped until the pods' fate diverges; the Terminating pods go once it boots",
			Labels: append(pairLabels, "class:crash-stop"), Shape: Pair, CI: true, Window: PairWindow(p), Settle: settle,
			Invariants: []invariant.Invariant{single, DeletionsComplete()},
		},
		{
			ID:     IDRackCut,
			Title:  "rack R1 loses its links to etcd and R2 while M1 leads: M2 takes the leases, M1's components restart, P1 keeps running on W1 and no second copy of P starts",
			Labels: racksLabels, Shape: Racks, Window: RacksWindow(p), Settle: settle,
			Invariants: []invariant.Invariant{single, DeletionsComplete()},
		},
		{
			ID:     IDRackForce,
			Title:  "positive control: rack R1 cut off and P1 force-deleted, the StatefulSet starts P on W2 while P1 still runs on W1 (single-copy VIOLATED)",
			Labels: racksLabels, Shape: Racks, Window: RacksWindow(p), Settle: settle,
			Invariants: []invariant.Invariant{single, DeletionsComplete()},
			ControlOf:  []string{invariant.SingleCopyName},
		},
	}
}

// WithFaults sets each scenario's fault for hosts named as in the drills'
// topologies (pair: pair-worker; racks: r1, w1, m2).
func WithFaults(table []scenario.Scenario, pairWorker string, racks RacksShape, note func(evidence.Event)) ([]scenario.Scenario, error) {
	out := append([]scenario.Scenario(nil), table...)
	for i := range out {
		switch out[i].ID {
		case IDKubeletStopped:
			out[i].Fault = faults.StopService(pairWorker, lab.ServiceKubelet)
		case IDPowerOff:
			out[i].Fault = faults.PowerOff(pairWorker)
		case IDRackCut:
			out[i].Fault = faults.RackFromRest("r1")
		case IDRackForce:
			out[i].Fault = controls.CutThenForceDelete(faults.RackFromRest("r1"), controls.Pod{Node: racks.W1, Namespace: Namespace, Name: StatefulPodName, Observer: racks.M2, TaintWait: 10 * time.Minute}, note)
		default:
			return nil, fmt.Errorf("no fault for scenario %s", out[i].ID)
		}
	}
	return out, nil
}
