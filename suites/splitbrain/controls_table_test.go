package splitbrain_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/scenario"
	storedinv "github.com/faultline/faultline/kits/storeddata/invariants"
	"github.com/faultline/faultline/suites/splitbrain"
)

// Each invariant of the paper has a lab control that must break it, with
// its null arm; the ledger damage leaves more than the default share of
// the window's probes after it.
func TestEveryInvariantHasAPositiveControl(t *testing.T) {
	controlled := map[string]int{}
	arms := map[string]int{}
	for _, sc := range table() {
		if !strings.HasPrefix(sc.ID, "control-") {
			if len(sc.ControlOf) > 0 {
				t.Errorf("%s controls %v but is not named a control", sc.ID, sc.ControlOf)
			}
			continue
		}
		arms[sc.ID]++
		if len(sc.ControlOf) == 0 || !hasLabel(sc.Labels, "selfcheck") {
			t.Errorf("%s: controls %v, labels %v", sc.ID, sc.ControlOf, sc.Labels)
		}
		for _, inv := range sc.ControlOf {
			controlled[inv]++
		}
		if strings.HasPrefix(sc.ID, "control-ledger-record-") {
			if sc.Change == nil || sc.Change.After*4 > sc.Window {
				t.Errorf("%s: the damage %+v in a %s window leaves fewer than three quarters of the probes after it", sc.ID, sc.Change, sc.Window)
			}
			if share := 1 - float64(sc.Change.After)/float64(sc.Window); share <= fault.EffectShareOf(sc.Fault) {
				t.Errorf("%s: %.2f of the probes can see the damage, the run needs %.2f", sc.ID, share, fault.EffectShareOf(sc.Fault))
			}
		}
	}
	for _, inv := range []string{storedinv.StorageIntegrityName, storedinv.SingleHistoryName, storedinv.FencingMonotonicName, storedinv.SingleWriterAtStorageName} {
		if controlled[inv] == 0 {
			t.Errorf("no control of %s", inv)
		}
	}
	for id, n := range arms {
		if n != 2 {
			t.Errorf("%s: %d arms", id, n)
		}
	}
}

// Each positive control counts as its hit only the violation kinds of the
// detector it is built for: another failure of the same invariant (a
// ledger-damaged where e2fsck should fire, a token that went down where
// two holders should share one) is no hit.
func TestEachPositiveControlNamesTheKindsItIsBuiltFor(t *testing.T) {
	want := map[string]map[string][]string{
		"control-ledger-record-garbled-shared-directory": {
			storedinv.StorageIntegrityName:         {storedinv.LedgerDamaged},
			storedinv.SingleHistoryName:            {storedinv.NotOneLog},
			storedinv.AcknowledgedDataSurvivesName: {storedinv.LostAppend},
		},
		"control-ledger-record-forged-shared-directory": {
			storedinv.SingleHistoryName:            {storedinv.NotOneLog},
			storedinv.AcknowledgedDataSurvivesName: {storedinv.LostAppend},
		},
		"control-filesystem-damaged-block":              {storedinv.StorageIntegrityName: {storedinv.FilesystemDamaged}},
		"control-elector-lease-handed-over-fenced":      {storedinv.FencingMonotonicName: {storedinv.SharedToken}},
		"control-ledger-second-writer-shared-directory": {storedinv.SingleWriterAtStorageName: {storedinv.TwoWriters}},
	}
	seen := map[string]bool{}
	for _, sc := range table() {
		if len(sc.ControlOf) == 0 {
			continue
		}
		seen[sc.ID] = true
		w, ok := want[sc.ID]
		if !ok {
			t.Errorf("%s: a control this test does not know", sc.ID)
			continue
		}
		if !reflect.DeepEqual(sc.ControlKinds, w) {
			t.Errorf("%s [%s]: kinds %v, want %v", sc.ID, sc.Arm, sc.ControlKinds, w)
		}
		for _, inv := range sc.ControlOf {
			if _, ok := sc.ControlKinds[inv]; !ok {
				t.Errorf("%s: no kinds named for %s, so any VIOLATED of it would count", sc.ID, inv)
			}
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("no control %s in the table", id)
		}
	}
}

// single-writer-at-storage's control starts a second ledger writer on the
// shared directory, whose class every node can mount at once, and judges
// the ledger's invariants; its fault decodes from its params alone (the
// heal ledger's), naming a pod other than ledger-0, which heal deletes.
func TestTheSecondWriterControlSharesTheLedgersClaimAndHealsByItsParams(t *testing.T) {
	arms := map[scenario.Arm]bool{}
	for _, sc := range table() {
		if sc.ID != "control-ledger-second-writer-shared-directory" {
			continue
		}
		arms[sc.Arm] = true
		if !hasLabel(sc.Labels, "volume:shared") || !hasLabel(sc.Labels, "workload:ledger") {
			t.Errorf("[%s] labels %v: want the ledger on the shared directory", sc.Arm, sc.Labels)
		}
		var judged []string
		for _, inv := range sc.Invariants {
			judged = append(judged, inv.Name())
		}
		if !slices.Equal(judged, []string{storedinv.SingleWriterAtStorageName}) {
			t.Errorf("[%s] judges %v, want single-writer-at-storage alone", sc.Arm, judged)
		}
		if sc.Fault.Kind() != controls.KindSecondLedgerWriter {
			t.Fatalf("[%s] fault %s", sc.Arm, sc.Fault.Kind())
		}
		f, err := fault.Decode(sc.Fault.Kind(), sc.Fault.Params())
		if err != nil {
			t.Fatalf("[%s] decoding its params: %v", sc.Arm, err)
		}
		var w controls.SecondWriter
		if err := json.Unmarshal(f.Params(), &w); err != nil {
			t.Fatal(err)
		}
		if w.Namespace != splitbrain.Namespace || w.StatefulSet != splitbrain.Ledger || w.Pod == "" || w.Pod == splitbrain.LedgerPod {
			t.Errorf("[%s] params %+v", sc.Arm, w)
		}
	}
	if !arms[scenario.FaultArm] || !arms[scenario.NullArm] {
		t.Errorf("arms %v, want the fault arm and the null arm", arms)
	}
}

// TestTheCISetIsTheRunsCIRunsNames checks that every arm ciRuns names is
// in the table and carries the ci label, and that no other arm does: a
// renamed scenario would otherwise drop out of the set without a word.
func TestTheCISetIsTheRunsCIRunsNames(t *testing.T) {
	want := 0
	for _, arms := range ciRuns {
		want += len(arms)
	}
	got := 0
	for _, sc := range table() {
		if !hasLabel(sc.AllLabels(), scenario.LabelCI) {
			continue
		}
		got++
		if !slices.Contains(ciRuns[sc.ID], sc.Arm) {
			t.Errorf("%s (%s) carries the ci label but ciRuns does not name it", sc.ID, sc.Arm)
		}
	}
	if got != want {
		t.Errorf("the ci set has %d runs, ciRuns names %d: a name in ciRuns is not in the table", got, want)
	}
}
