package splitbrain

import (
	"github.com/faultline/faultline/lab"
	"strings"
	"testing"
)

func TestWorkloadsOfNamesTheLabelsWorkloads(t *testing.T) {
	ws, err := WorkloadsOf([]string{"paper:splitbrain", "workload:kvdb", "volume:shared", "workload:ledger"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0] != WorkloadKVDB || ws[1] != WorkloadLedger {
		t.Fatalf("workloads %v, want [kvdb ledger]", ws)
	}
}

func TestWorkloadsOfRefusesNoneAndUnknown(t *testing.T) {
	if _, err := WorkloadsOf([]string{"volume:shared"}); err == nil || !strings.Contains(err.Error(), "no workload: label") {
		t.Fatalf("no workload label: error %v", err)
	}
	_, err := WorkloadsOf([]string{"workload:postgres"})
	if err == nil || !strings.Contains(err.Error(), `"workload:postgres"`) || !strings.Contains(err.Error(), "kvdb, ledger") {
		t.Fatalf("unknown workload: error %v", err)
	}
}

func TestReadersAskOnlyTheActiveWorkloads(t *testing.T) {
	readers := map[Workload]*storedReader{}
	for _, w := range dataWorkloads {
		readers[w.workload] = &storedReader{w: w}
	}
	SetActive(WorkloadKVDB)
	defer SetActive()
	if qs := readers[WorkloadLedger].Questions(); len(qs) != 0 {
		t.Fatalf("ledger not active, asked %v", qs)
	}
	if qs := readers[WorkloadKVDB].Questions(); len(qs) != 2 || qs[0] != "kvdb/db" || qs[1] != "kvdb/history" {
		t.Fatalf("kvdb active, asked %v", qs)
	}
}

func TestOnVolumeRefusesAScenarioWithoutAVolume(t *testing.T) {
	in, _ := InstallerOf(WorkloadKVDB)
	err := in(t.Context(), nil, Install{Info: lab.StorageInfo{}})
	if err == nil || !strings.Contains(err.Error(), "no volume: label") {
		t.Fatalf("error %v", err)
	}
}

func TestTheVolumeIsCheckedOnlyForABlockVolume(t *testing.T) {
	r := &volumeReader{}
	defer SetActive()
	defer SetActiveVolume("")
	SetActive(WorkloadLedger)
	SetActiveVolume("shared")
	if qs := r.Questions(); len(qs) != 0 {
		t.Errorf("a shared directory: asked %v", qs)
	}
	SetActiveVolume("block")
	if qs := r.Questions(); len(qs) != 1 || qs[0] != "volume/fsck" {
		t.Errorf("a block volume: asked %v", qs)
	}
	if w, _ := r.workload(); w.claim != LedgerClaim {
		t.Errorf("checks the claim %q, want the ledger's", w.claim)
	}
	SetActive(WorkloadElector)
	if qs := r.Questions(); len(qs) != 0 {
		t.Errorf("no data workload: asked %v", qs)
	}
}
