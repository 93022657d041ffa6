package splitbrain_test

import (
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/suites/splitbrain"
)

// Invariants are the paper's, judged in every run.
func paperInvariants() []invariant.Invariant {
	return []invariant.Invariant{invariant.AcknowledgedDataSurvives(), invariant.SingleWriterAtStorage()}
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
	return controls.CutThenForceDelete(faults.HostFromControlPlane(splitbrain.LedgerNode),
		controls.Pod{Node: splitbrain.LedgerNode, Namespace: splitbrain.Namespace, Name: splitbrain.LedgerPod, TaintWait: profile.NodeWindow},
		suiteSampler.Note)
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
		s.Invariants = append(paperInvariants(), s.Invariants...)
		s.Emulation = storageEmulation
		return s
	}
	return scenario.WithNullArms(
		base(scenario.Scenario{
			ID:     "ledger-force-deleted-shared-directory",
			Title:  "worker1 cut off and ledger-0 force-deleted, the log on a shared directory: the replacement appends beside the cut copy",
			Labels: []string{"volume:shared", "component:network", "component:statefulset"},
			Fault:  cutAndForceDelete(),
		}),
		base(scenario.Scenario{
			ID:     "ledger-force-deleted-block-multi-attach",
			Title:  "worker1 cut off and ledger-0 force-deleted, the log on an attachable block volume: the Multi-Attach check keeps the replacement from attaching within the window",
			Labels: []string{"volume:block", "component:network", "component:statefulset", "component:attach-detach"},
			Fault:  cutAndForceDelete(),
		}),
	)
}
