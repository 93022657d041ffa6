package splitbrain_test

import (
	"slices"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	storedfaults "github.com/faultline/faultline/kits/storeddata/faults"
	storedinv "github.com/faultline/faultline/kits/storeddata/invariants"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/suites/splitbrain"
)

// workloadInvariants are the paper's invariants that judge w's evidence.
func workloadInvariants(w splitbrain.Workload) []invariant.Invariant {
	switch w {
	case splitbrain.WorkloadLedger:
		return []invariant.Invariant{storedinv.AcknowledgedDataSurvives(), storedinv.SingleWriterAtStorage(), storedinv.SingleHistory(), storedinv.StorageIntegrity()}
	case splitbrain.WorkloadKVDB:
		return []invariant.Invariant{storedinv.AcknowledgedDataSurvives(), storedinv.StorageIntegrity()}
	case splitbrain.WorkloadElector:
		return []invariant.Invariant{storedinv.SingleHistory(), storedinv.FencingMonotonic()}
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
			// fencing-monotonic judges fenced writers only: an unfenced
			// arm would be INSUFFICIENT_DATA by its definition.
			if inv.Name() == storedinv.FencingMonotonicName && hasLabel(labels, splitbrain.LabelFencing+electorlog.FencingNone) {
				continue
			}
			if !seen[inv.Name()] {
				seen[inv.Name()] = true
				out = append(out, inv)
			}
		}
	}
	return out
}

func hasLabel(labels []string, want string) bool {
	for _, l := range labels {
		if l == want {
			return true
		}
	}
	return false
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

// The elector's windows, from its timers (splitbrain.ElectorLeaseDuration
// 6 s, ElectorRenewDeadline 4 s, ElectorRetryPeriod 1 s).
const (
	// electorFreeze is how long the leader stays frozen: its last renewal
	// lapses after the lease duration, the other replica takes the Lease
	// at its next try (within the retry period), so 7 s after the freeze
	// at most; 20 s leaves it some 13 s of leading and writing.
	electorFreeze = 20 * time.Second
	// electorFrozenWindow goes on 10 s past the thaw: the thawed leader
	// writes with its old token until its renewals have failed for the
	// renew deadline (4 s, tried every second); its writes must fall
	// inside the window, since settling with no convergence invariant to
	// wait for ends at its first sample.
	electorFrozenWindow = electorFreeze + 10*time.Second
	// electorForkWindow: replica b, whose API server (cp3) reads the
	// fork, sees the Lease stop being renewed at the copy's revision and
	// takes it there after the lease duration and one retry (7 s), while
	// replica a, through cp1 and the cluster's etcd, goes on renewing and
	// leading; 30 s leaves some 20 s of two leaders. The fork's inject
	// has already waited until cp3 reads the copy.
	electorForkWindow = 30 * time.Second
)

// frozenElectorLeader freezes the pod holding the elector's Lease (its
// cgroup, so its containers stop with their sockets open while its node
// and kubelet go on), and the change thaws it electorFreeze into the
// window: the stale leader wakes believing it still leads.
func frozenElectorLeader() (fault.Fault, *scenario.Change) {
	f := faults.FreezeLeaseHolder(splitbrain.Namespace, splitbrain.Elector)
	return f, &scenario.Change{
		Name:  "thaw the frozen elector leader",
		After: electorFreeze,
		// The fault's own heal on the host its inject froze (idempotent:
		// the end of the window heals again and finds nothing); in the
		// null arm nothing was frozen, and no host is asked.
		Make: faults.ThawFrozen(f),
	}
}

// electorScenarios are scenarios 3 and 4, unfenced and fenced.
func electorScenarios() []scenario.Scenario {
	var out []scenario.Scenario
	for _, fencing := range []string{electorlog.FencingNone, electorlog.FencingLeaseTransitions} {
		suffix, unfenced := "-fenced", fencing == electorlog.FencingNone
		if unfenced {
			suffix = "-unfenced"
		}
		hypo := "the store refuses the stale leader's token"
		if unfenced {
			hypo = "the store takes both leaders' increments"
		}
		freeze, thaw := frozenElectorLeader()
		out = append(out,
			// Scenario 4: the leader frozen past its lease and thawed.
			// Unfenced, the thawed leader's increments are accepted beside
			// the new leader's (single-history VIOLATED: lost updates);
			// fenced, they carry a leaseTransitions below the store's and
			// are refused (single-history and fencing-monotonic
			// PRESERVED, exercised by the refusals).
			scenario.Scenario{
				ID:     "elector-leader-frozen" + suffix,
				Title:  "the elector's leader frozen past its lease and thawed, fencing " + fencing + ": " + hypo,
				Labels: []string{"workload:elector", splitbrain.LabelFencing + fencing, "component:leader-election"},
				Fault:  freeze,
				Change: thaw,
				Window: electorFrozenWindow,
				// The probe sees the freeze for 20 of the window's 30 s,
				// above the default half.
			},
			// Scenario 3: replica b reaches only cp3's API server, which
			// the fault moves onto a copy of etcd; replica a is pinned to
			// cp1 (the cluster's etcd). b takes the Lease in the copy
			// while a keeps it in the cluster. Unfenced both write
			// (single-history VIOLATED); fenced, b's token
			// (leaseTransitions one above a's, counted in the copy) is
			// accepted and a's refused from then on (single-history and
			// fencing-monotonic PRESERVED, exercised). A shared token
			// (fencing-monotonic VIOLATED) needs the cluster's Lease to
			// reach the copy's count with another holder, which this
			// window does not give.
			scenario.Scenario{
				ID:     "elector-forked-apiserver" + suffix,
				Title:  "the elector's replica b on cp3's API server, cp3 moved onto a copy of etcd, fencing " + fencing + ": b takes the Lease in the copy while a keeps it, and " + hypo,
				Labels: []string{"workload:elector", splitbrain.LabelFencing + fencing, splitbrain.LabelAPIServerA + "cp1", splitbrain.LabelAPIServerB + "cp3", "component:leader-election", "component:apiserver", "component:etcd"},
				Fault:  faults.APIServerEtcdFork("cp3"),
				Window: electorForkWindow,
			},
		)
	}
	return out
}

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
		// A row judges its workloads' invariants, unless it names its
		// own (a positive control that judges only what it is built to
		// break).
		if len(s.Invariants) == 0 {
			s.Invariants = invariantsFor(s.Labels)
		}
		s.Emulation = splitbrain.StorageEmulation(s.Labels)
		s.Quiesce = quiesce(s.Labels)
		return s
	}
	scenarios := []scenario.Scenario{
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
		base(scenario.Scenario{
			ID:     "ledger-out-of-service-block-fenced",
			Title:  "worker1's kubelet stopped and the node tainted out-of-service, the log on a block volume whose detach fences the node: the old copy's I/O fails once the volume is detached, and the replacement writes alone",
			Labels: []string{"workload:ledger", "volume:block-fenced", "component:kubelet", "component:statefulset", "component:attach-detach"},
			Fault:  stoppedKubeletOutOfService(),
			Window: outOfServiceWindow,
		}),
	}
	for _, s := range applicationControls() {
		scenarios = append(scenarios, base(s))
	}
	for _, s := range positiveControls() {
		scenarios = append(scenarios, base(s))
	}
	for _, s := range electorScenarios() {
		scenarios = append(scenarios, base(s))
	}
	all := scenario.WithNullArms(scenarios...)
	for i, s := range all {
		all[i].CI = slices.Contains(ciRuns[s.ID], s.Arm)
	}
	return all
}

// ciRuns are the arms the `ci` label goes on: the paper's first finding
// with its null arm (the log on a shared directory, its pod
// force-deleted while the old copy is cut off), the elector's unfenced
// lost update with its null arm, and the positive control of
// single-writer-at-storage. Five runs of 3-4 minutes each, so that five
// repetitions of the set fit in an afternoon on one lab.
var ciRuns = map[string][]scenario.Arm{
	"ledger-force-deleted-shared-directory":         {scenario.FaultArm, scenario.NullArm},
	"elector-leader-frozen-unfenced":                {scenario.FaultArm, scenario.NullArm},
	"control-ledger-second-writer-shared-directory": {scenario.FaultArm},
}

// applicationControls are the ledger rows in which two copies wrote, run
// again with the ledger locked (ledgerlog.ModeLocked: an exclusive flock
// of the log and its end re-read before each append): an application
// that does not trust at-most-one. Their verdicts are not Kubernetes
// findings (role application-control): single-writer-at-storage still
// says whether Kubernetes let two copies write; acknowledged-data-survives
// and single-history say whether this application lost anything by it.
// On the shared directory the lock is one kernel's and holds across
// nodes (the emulation says so); on a block volume each node's ext4 mount
// has its own lock table and its own idea of the file's end, so the lock
// and the re-read protect nothing there, which these rows measure.
func applicationControls() []scenario.Scenario {
	locked := func(s scenario.Scenario) scenario.Scenario {
		s.ApplicationControl = true
		s.Labels = append([]string{"workload:ledger", splitbrain.LabelLedgerMode + ledgerlog.ModeLocked}, s.Labels...)
		s.Title += "; the ledger locked (an flock and the end re-read before each append), an application that does not trust at-most-one"
		return s
	}
	return []scenario.Scenario{
		locked(scenario.Scenario{
			ID:     "ledger-locked-force-deleted-shared-directory",
			Title:  "worker1 cut off and ledger-0 force-deleted, the log on a shared directory: the replacement appends beside the cut copy",
			Labels: []string{"volume:shared", "component:network", "component:statefulset"},
			Fault:  cutAndForceDelete(),
		}),
		locked(scenario.Scenario{
			ID:     "ledger-locked-kubelet-frozen-force-deleted-shared-directory",
			Title:  "worker1's kubelet frozen and ledger-0 force-deleted, the log on a shared directory: the replacement appends beside the unsupervised old copy",
			Labels: []string{"volume:shared", "component:kubelet", "component:statefulset"},
			Fault:  frozenKubeletForceDelete(),
		}),
		locked(scenario.Scenario{
			ID:     "ledger-locked-out-of-service-block",
			Title:  "worker1's kubelet stopped and the node tainted out-of-service, the log on an attachable block volume: the replacement mounts it beside the old copy",
			Labels: []string{"volume:block", "component:kubelet", "component:statefulset", "component:attach-detach"},
			Fault:  stoppedKubeletOutOfService(),
			Window: outOfServiceWindow,
		}),
		locked(scenario.Scenario{
			ID:     "ledger-locked-force-deleted-block-past-force-detach",
			Title:  "worker1 cut off and ledger-0 force-deleted, the log on an attachable block volume, the window past the 6-minute force-detach: the replacement attaches while the cut copy still has the volume mounted",
			Labels: []string{"volume:block", "component:network", "component:statefulset", "component:attach-detach", "window:force-detach"},
			Fault:  cutAndForceDelete(),
			Window: forceDetachWindow,
		}),
	}
}

// The positive controls' timing. The damage to the ledger's log is made
// damageAfter into the window, so that the reads before it (one every
// sampling interval, splitbrain.SampleEvery, 1 s) hold the record it
// damages and those after hold the damage; the window leaves three
// quarters of its effect probes after it, above the default half. The
// other controls act at inject and need only a few rounds.
const (
	damageAfter   = 6 * time.Second
	controlWindow = 24 * time.Second
)

// ledgerSecondWriter is the bare pod the single-writer control starts
// beside ledger-0.
const ledgerSecondWriter = splitbrain.Ledger + "-second-writer"

// positiveControls are the detectors' lab controls: each breaks on
// purpose what its invariant guards, in a way only that detector reads,
// and must come out VIOLATED; its null arm (nothing injected, the change a
// no-op) PRESERVED.
func positiveControls() []scenario.Scenario {
	ledgerDamage := func(how string) (fault.Fault, *scenario.Change) {
		f := storedfaults.LedgerRecordDamage(storedfaults.LedgerDamage{Namespace: splitbrain.Namespace, Claim: splitbrain.LedgerClaim, File: splitbrain.LedgerFile, Damage: how})
		return f, &scenario.Change{
			Name:  "damage (" + how + ") the ledger's record the inject chose; nothing in the null arm, which chose none",
			After: damageAfter,
			Make:  f.Strike,
		}
	}
	garbled, garble := ledgerDamage(storedfaults.DamageGarbled)
	forged, forge := ledgerDamage(storedfaults.DamageForged)
	return []scenario.Scenario{
		// storage-integrity's ledger check: bytes in the middle of a
		// record overwritten where the shared directory holds the log.
		// The record was acknowledged and every read before the damage
		// held it whole, so the same damage breaks single-history's
		// comparison of the reads and acknowledged-data-survives: each
		// must see it.
		{
			ID:        "control-ledger-record-garbled-shared-directory",
			Title:     "8 bytes in the middle of a record of the ledger's log overwritten where the storage holds it: the log holds bytes that are no whole record",
			Labels:    []string{"selfcheck", "workload:ledger", "volume:shared", "component:storage"},
			Fault:     garbled,
			Change:    garble,
			Window:    controlWindow,
			ControlOf: []string{storedinv.StorageIntegrityName, storedinv.SingleHistoryName, storedinv.AcknowledgedDataSurvivesName},
			// Each by the detector the damage is built for: the log's
			// own check, the comparison of its reads, the lost append.
			ControlKinds: map[string][]string{
				storedinv.StorageIntegrityName:         {storedinv.LedgerDamaged},
				storedinv.SingleHistoryName:            {storedinv.NotOneLog},
				storedinv.AcknowledgedDataSurvivesName: {storedinv.LostAppend},
			},
		},
		// single-history's comparison of the log's reads: a record
		// replaced by one that checks clean on its own, so storage
		// integrity does not see it (it stays PRESERVED) and only the
		// reads, and the histories (acknowledged-data-survives: the
		// acknowledged append is gone, a record nobody wrote is there),
		// do.
		{
			ID:        "control-ledger-record-forged-shared-directory",
			Title:     "a record of the ledger's log replaced, where the storage holds it, by a whole record of the same length and sequence that no writer made: a later read is no extension of an earlier one",
			Labels:    []string{"selfcheck", "workload:ledger", "volume:shared", "component:storage"},
			Fault:     forged,
			Change:    forge,
			Window:    controlWindow,
			ControlOf: []string{storedinv.SingleHistoryName, storedinv.AcknowledgedDataSurvivesName},
			// acknowledged-data-survives names a lost append before a
			// record nobody wrote, and the forgery makes both: its
			// VIOLATED is the lost append.
			ControlKinds: map[string][]string{
				storedinv.SingleHistoryName:            {storedinv.NotOneLog},
				storedinv.AcknowledgedDataSurvivesName: {storedinv.LostAppend},
			},
		},
		// storage-integrity's file system check: the block volume's
		// metadata broken while nothing mounts it.
		{
			ID:     "control-filesystem-damaged-block",
			Title:  "the ledger stopped and its block volume's file system metadata broken where the storage holds it, nothing mounting it: e2fsck finds it",
			Labels: []string{"selfcheck", "workload:ledger", "volume:block", "component:storage"},
			Fault: controls.StopThenDamageFilesystem(controls.FilesystemDamage{
				Namespace: splitbrain.Namespace, StatefulSet: splitbrain.Ledger, Claim: splitbrain.LedgerClaim, Replicas: 1}),
			Window:       controlWindow,
			ControlOf:    []string{storedinv.StorageIntegrityName},
			ControlKinds: map[string][]string{storedinv.StorageIntegrityName: {storedinv.FilesystemDamaged}},
		},
		// single-writer-at-storage: a second copy of the ledger made on
		// purpose, a bare pod from the StatefulSet's template mounting
		// ledger-0's claim on another worker, the shared directory
		// letting both nodes mount it at once. Both copies append to one
		// log from the offsets they hold, each acknowledging its own
		// appends, so appends of one land between two of the other's:
		// two-writers. It judges single-writer-at-storage alone: the
		// two copies write over each other's records too, so
		// acknowledged-data-survives, single-history and storage-integrity
		// fire or not as the two offsets fall (on the lab all three
		// fired beside it), which is not what the control builds and
		// would fail its spec for verdicts it does not name.
		{
			ID:     "control-ledger-second-writer-shared-directory",
			Title:  "a second copy of ledger-0 started by hand on another worker, a bare pod from the StatefulSet's template mounting the same claim on a shared directory: two writers append to one log at once",
			Labels: []string{"selfcheck", "workload:ledger", "volume:shared", "component:storage"},
			Fault: controls.SecondLedgerWriter(controls.SecondWriter{
				Namespace: splitbrain.Namespace, StatefulSet: splitbrain.Ledger, Pod: ledgerSecondWriter}),
			Window:       controlWindow,
			Invariants:   []invariant.Invariant{storedinv.SingleWriterAtStorage()},
			ControlOf:    []string{storedinv.SingleWriterAtStorageName},
			ControlKinds: map[string][]string{storedinv.SingleWriterAtStorageName: {storedinv.TwoWriters}},
		},
		// fencing-monotonic with what the fenced store accepts by
		// design: two holders with one token. It judges fencing-monotonic
		// alone: whether the two leaders' increments also interleave into
		// a lost update (single-history) depends on how long the old
		// holder goes on writing, which is the old holder's renew
		// deadline against the new one's retry, a race the control does
		// not need; single-history's elector half fires in the unfenced
		// findings.
		{
			ID:     "control-elector-lease-handed-over-fenced",
			Title:  "the elector's Lease written over to the other replica with its leaseTransitions kept: both leaders write with one token, which the fenced store accepts",
			Labels: []string{"selfcheck", "workload:elector", splitbrain.LabelFencing + electorlog.FencingLeaseTransitions, "component:leader-election"},
			Fault: storedfaults.LeaseHandedOver(storedfaults.LeaseHandover{
				Namespace: splitbrain.Namespace, Lease: splitbrain.Elector, HistoryPrefix: splitbrain.ElectorHistoryPrefix}),
			Window:     controlWindow,
			Invariants: []invariant.Invariant{storedinv.FencingMonotonic()},
			ControlOf:  []string{storedinv.FencingMonotonicName},
			// One token, two holders; a token that went down is another
			// breakage, not the one built here.
			ControlKinds: map[string][]string{storedinv.FencingMonotonicName: {storedinv.SharedToken}},
		},
	}
}
