package splitbrain_test

import (
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/suites/splitbrain"
)

// workloadInvariants are the paper's invariants that judge w's evidence.
func workloadInvariants(w splitbrain.Workload) []invariant.Invariant {
	switch w {
	case splitbrain.WorkloadLedger:
		return []invariant.Invariant{invariant.AcknowledgedDataSurvives(), invariant.SingleWriterAtStorage(), invariant.SingleHistory(), invariant.StorageIntegrity()}
	case splitbrain.WorkloadKVDB:
		return []invariant.Invariant{invariant.AcknowledgedDataSurvives(), invariant.StorageIntegrity()}
	case splitbrain.WorkloadElector:
		return []invariant.Invariant{invariant.SingleHistory(), invariant.FencingMonotonic()}
	}
	panic("no invariants for workload " + string(w))
}

// invariantsFor are the invariants of every workload labels name, each
// once.
func invariantsFor(labels []string) []invariant.Invariant {
	ws, err := splitbrain.WorkloadsOf(labels)
	if err != nil {
		panic(err.Error())
	}
	var out []invariant.Invariant
	seen := map[string]bool{}
	for _, w := range ws {
		for _, inv := range workloadInvariants(w) {
			if !seen[inv.Name()] {
				seen[inv.Name()] = true
				out = append(out, inv)
			}
		}
	}
	return out
}

// window leaves the replacement time to start and write beside the cut
// copy: the taint wait (the node window's grace) comes first, inside the
// fault's inject.
const (
	window = 40 * time.Second
	settle = 30 * time.Second
)

// cutAndForceDelete cuts worker1 off the control plane, waits for the
// unreachable taint and force-deletes ledger-0 there, as an operator
// "unsticking" it would: the StatefulSet starts a replacement elsewhere
// while worker1's copy, which never hears of the deletion, keeps
// appending.
func cutAndForceDelete() fault.Fault {
	return controls.CutThenForceDelete(faults.HostFromControlPlane(splitbrain.LedgerNode), ledgerPod(), suiteSampler.Note)
}

// ledgerPod is ledger-0 on worker1, as the controls that delete it name it.
func ledgerPod() controls.Pod {
	return controls.Pod{Node: splitbrain.LedgerNode, Namespace: splitbrain.Namespace, Name: splitbrain.LedgerPod, TaintWait: profile.NodeWindow}
}

// frozenKubeletForceDelete freezes worker1's kubelet (its containers run
// on, unsupervised), waits for the unreachable taint and force-deletes
// ledger-0. Heal thaws the kubelet, which then finds its pod gone and
// stops the old copy: that copy's last appends and its shutdown land
// after the replacement has been writing.
func frozenKubeletForceDelete() fault.Fault {
	return controls.CutThenForceDelete(faults.Freeze(splitbrain.LedgerNode, lab.ServiceKubelet), ledgerPod(), suiteSampler.Note)
}

// stoppedKubeletOutOfService stops worker1's kubelet (its containers run
// on) and taints the node out-of-service once it is not Ready, as an
// operator who takes a silent node for a shut-down one would.
func stoppedKubeletOutOfService() fault.Fault {
	return controls.StopThenOutOfService(faults.StopService(splitbrain.LedgerNode, lab.ServiceKubelet), splitbrain.LedgerNode, profile.NodeWindow)
}

// forceDetachWindow outlasts the attach/detach controller's fixed
// 6-minute maxWaitForUnmountDuration (cmd/kube-controller-manager's
// attach/detach controller; no flag sets it) by a minute, for the
// replacement to attach, mount and write.
const forceDetachWindow = 7 * time.Minute

// outOfServiceWindow leaves, after the taint, time for the taint manager's
// eviction, the pod garbage collector's 20 s pass, the detach, the
// replacement's attach and start, and its writes.
const outOfServiceWindow = 90 * time.Second

// cutAndDeleteNode cuts worker1 off the control plane and deletes its
// Node object, as an operator removing a dead machine would: the pod
// garbage collector deletes kvdb-0 (bound to a node that no longer
// exists) without any kubelet's word, and the StatefulSet starts a
// replacement elsewhere while worker1's copy keeps writing.
func cutAndDeleteNode() fault.Fault {
	return controls.CutThenDeleteNode(faults.HostFromControlPlane(splitbrain.LedgerNode), splitbrain.LedgerNode)
}

// deletedNodeWindow covers the pod garbage collector's fixed 40 s
// quarantine of pods on a deleted node and its 20 s pass
// (pkg/controller/podgc: quarantineTime, gcCheckPeriod; no flag sets
// either), the replacement's start, and some 30 s of both copies writing.
const deletedNodeWindow = 100 * time.Second

// table is the paper's scenarios, each with its null arm.
func table() []scenario.Scenario {
	base := func(s scenario.Scenario) scenario.Scenario {
		s.Shape = splitbrain.Lab11S
		s.Labels = append([]string{"paper:splitbrain"}, s.Labels...)
		if s.Window == 0 {
			s.Window = window
		}
		if s.Settle == 0 {
			s.Settle = settle
		}
		s.Invariants = append(invariantsFor(s.Labels), s.Invariants...)
		s.Emulation = storageEmulation
		s.Quiesce = quiesce
		return s
	}
	return scenario.WithNullArms(
		base(scenario.Scenario{
			ID:     "ledger-force-deleted-shared-directory",
			Title:  "worker1 cut off and ledger-0 force-deleted, the log on a shared directory: the replacement appends beside the cut copy",
			Labels: []string{"workload:ledger", "volume:shared", "component:network", "component:statefulset"},
			Fault:  cutAndForceDelete(),
		}),
		base(scenario.Scenario{
			ID:     "ledger-force-deleted-block-multi-attach",
			Title:  "worker1 cut off and ledger-0 force-deleted, the log on an attachable block volume: the Multi-Attach check keeps the replacement from attaching within the window",
			Labels: []string{"workload:ledger", "volume:block", "component:network", "component:statefulset", "component:attach-detach"},
			Fault:  cutAndForceDelete(),
		}),
		base(scenario.Scenario{
			ID:     "ledger-force-deleted-block-past-force-detach",
			Title:  "worker1 cut off and ledger-0 force-deleted, the log on an attachable block volume, the window past the 6-minute force-detach: the replacement attaches while the cut copy still has the volume mounted",
			Labels: []string{"workload:ledger", "volume:block", "component:network", "component:statefulset", "component:attach-detach", "window:force-detach"},
			Fault:  cutAndForceDelete(),
			Window: forceDetachWindow,
		}),
		base(scenario.Scenario{
			ID:     "kvdb-node-deleted-shared-directory",
			Title:  "worker1 cut off and its Node object deleted, a bbolt database on a shared directory: the collected pod's replacement read-modify-writes beside the cut copy, the two taking turns by the file lock",
			Labels: []string{"workload:kvdb", "volume:shared", "component:network", "component:controller-manager", "component:statefulset"},
			Fault:  cutAndDeleteNode(),
			Window: deletedNodeWindow,
		}),
		base(scenario.Scenario{
			ID:     "ledger-kubelet-frozen-force-deleted-shared-directory",
			Title:  "worker1's kubelet frozen and ledger-0 force-deleted, the log on a shared directory: the thawed kubelet stops the old copy only after the replacement has written",
			Labels: []string{"workload:ledger", "volume:shared", "component:kubelet", "component:statefulset"},
			Fault:  frozenKubeletForceDelete(),
		}),
		base(scenario.Scenario{
			ID:     "ledger-out-of-service-block",
			Title:  "worker1's kubelet stopped and the node tainted out-of-service, the log on an attachable block volume: the volume is detached at once and the replacement mounts it beside the old copy",
			Labels: []string{"workload:ledger", "volume:block", "component:kubelet", "component:statefulset", "component:attach-detach"},
			Fault:  stoppedKubeletOutOfService(),
			Window: outOfServiceWindow,
		}),
	)
}
