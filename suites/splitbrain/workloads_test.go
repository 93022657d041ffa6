package splitbrain

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/lab"
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

func TestReadersAskOnlyTheRunsWorkloads(t *testing.T) {
	readers := map[Workload]*storedReader{}
	for _, w := range dataWorkloads {
		readers[w.workload] = &storedReader{w: w, use: useOf([]string{"paper:splitbrain", "workload:kvdb", "volume:shared"})}
	}
	if qs := readers[WorkloadLedger].Questions(); len(qs) != 0 {
		t.Fatalf("ledger not in the run, asked %v", qs)
	}
	if qs := readers[WorkloadKVDB].Questions(); len(qs) != 2 || qs[0] != "kvdb/db" || qs[1] != "kvdb/history" {
		t.Fatalf("kvdb in the run, asked %v", qs)
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
	r := &volumeReader{use: useOf([]string{"workload:ledger", "volume:shared"})}
	if qs := r.Questions(); len(qs) != 0 {
		t.Errorf("a shared directory: asked %v", qs)
	}
	r.use = useOf([]string{"workload:ledger", "volume:block"})
	if qs := r.Questions(); len(qs) != 1 || qs[0] != "volume/fsck" {
		t.Errorf("a block volume: asked %v", qs)
	}
	if w, _ := r.workload(); w.claim != LedgerClaim {
		t.Errorf("checks the claim %q, want the ledger's", w.claim)
	}
	r.use = useOf([]string{"workload:elector", "volume:block"})
	if qs := r.Questions(); len(qs) != 0 {
		t.Errorf("no data workload: asked %v", qs)
	}
}

// The kind of volume is the first volume: label's, as the suite's Prepare
// picks the claim class by it.
func TestVolumeOfIsTheFirstVolumeLabel(t *testing.T) {
	for labels, want := range map[string]string{
		"workload:ledger":                      "",
		"workload:ledger volume:block-fenced":  "block-fenced",
		"volume:shared volume:block":           "shared",
		"paper:splitbrain volume:block-mmp ci": "block-mmp",
	} {
		if got := VolumeOf(strings.Fields(labels)); got != want {
			t.Errorf("%s: %q, want %q", labels, got, want)
		}
	}
}

// The ledger appends naively unless a ledger-mode: label says locked; its
// installer passes the mode to the program.
func TestTheLedgerModeIsTheLabels(t *testing.T) {
	for labels, want := range map[string]string{
		"workload:ledger":                      ledgerlog.ModeNaive,
		"workload:ledger ledger-mode:locked":   ledgerlog.ModeLocked,
		"ledger-mode:naive ledger-mode:naive":  ledgerlog.ModeNaive,
		"ledger-mode:optimistic":               "",
		"ledger-mode:locked ledger-mode:naive": "",
	} {
		got, err := LedgerModeOf(strings.Fields(labels))
		if got != want || (want == "") != (err != nil) {
			t.Errorf("%s: mode %q, error %v; want %q", labels, got, err, want)
		}
	}
	sts := LedgerStatefulSet("faultline-shared", []string{"http://store:2379"}, ledgerlog.ModeLocked)
	if args := strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--mode=locked") {
		t.Errorf("the locked ledger runs with %s", args)
	}
}
