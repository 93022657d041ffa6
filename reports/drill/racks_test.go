package drill

import (
	"os"
	"strings"
	"testing"

	"github.com/faultline/faultline/reports"
)

// The racks drill's evidence recorded on a local lab (testdata/README.md).
func TestRacksOnRecordedRuns(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "testdata/racks-fast", dir)
	runs, err := reports.ReadRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 {
		t.Fatal("no runs in testdata/racks-fast")
	}
	for _, r := range runs {
		rec, err := readEvidence(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		h, err := racksHostsOf(rec)
		if err != nil {
			t.Fatal(err)
		}
		if h != (RacksHosts{M1: "m1", W1: "w1", M2: "m2", W2: "w2"}) {
			t.Errorf("%s: hosts %+v", r.RunID, h)
		}
		st, err := AnalyseRacks(r, rec, h)
		if err != nil {
			t.Fatal(err)
		}
		answers := map[string]Statement{}
		for _, s := range st {
			answers[s.Question] = s
			if s.Answer == "" {
				t.Errorf("%s: %q has no answer", r.RunID, s.Question)
			}
		}
		kcm := answers["What triggers the kube-controller-manager leader election, and how long until M2 leads?"]
		if !strings.Contains(kcm.Answer, "M2 was first seen leading") || len(kcm.Evidence) == 0 {
			t.Errorf("%s: leader answer %q with evidence %v", r.RunID, kcm.Answer, kcm.Evidence)
		}
		if p1 := answers["Does P1 keep running on W1 while R1 is cut off?"]; !strings.HasPrefix(p1.Answer, "yes") {
			t.Errorf("%s: P1 answer %q", r.RunID, p1.Answer)
		}
		if p2 := answers["Does the pod on W2 keep running while R1 is cut off?"]; !strings.HasPrefix(p2.Answer, "yes") {
			t.Errorf("%s: P2 answer %q", r.RunID, p2.Answer)
		}
		rp := answers["Does M2 start a replacement of P on W2?"]
		if r.Scenario == ScenarioRackForce && (!strings.HasPrefix(rp.Answer, "yes") || !strings.Contains(rp.Answer, "force-deleted")) {
			t.Errorf("%s: replacement answer %q", r.RunID, rp.Answer)
		}
	}
	files, err := WriteFolder(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("wrote %v: %v", files, err)
	}
	if b, err := os.ReadFile(files[0]); err != nil || !strings.Contains(string(b), "evidence:") {
		t.Errorf("racks report: %v", err)
	}
}
