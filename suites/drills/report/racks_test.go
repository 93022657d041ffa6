package report

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/suites/drills"
)

// The racks drill's evidence recorded on a local lab (testdata/README.md).
func TestRacksOnRecordedRuns(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "testdata/racks-fast", dir)
	runs, err := record.ReadRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) == 0 {
		t.Fatal("no runs in testdata/racks-fast")
	}
	for _, r := range runs {
		rec, err := record.ReadEvidence(dir, r.RunID)
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
		tc := answers["Can P1 and its replacement run at the same time?"]
		switch r.Scenario {
		case drills.IDRackForce:
			if !strings.HasPrefix(rp.Answer, "yes") || !strings.Contains(rp.Answer, "force-deleted") || !strings.Contains(rp.Answer, "W2's runtime saw it running") {
				t.Errorf("%s: replacement answer %q", r.RunID, rp.Answer)
			}
			if !strings.HasPrefix(tc.Answer, "single-copy VIOLATED") {
				t.Errorf("%s: two-copies answer %q", r.RunID, tc.Answer)
			}
		case drills.IDRackCut:
			if !strings.HasPrefix(rp.Answer, "no") || !strings.HasPrefix(tc.Answer, "single-copy PRESERVED") {
				t.Errorf("%s: replacement answer %q, two-copies answer %q", r.RunID, rp.Answer, tc.Answer)
			}
		}
		for _, e := range rp.Evidence {
			if strings.Contains(e, "pod-created") && !strings.Contains(e, "replaces uid") {
				t.Errorf("%s: P1 itself given as its replacement: %s", r.RunID, e)
			}
		}
		m1 := answers["What do M1's components do?"]
		if !strings.Contains(m1.Answer, "kube-controller-manager exited and was started again") || !strings.Contains(m1.Answer, "kube-scheduler exited and was started again") {
			t.Errorf("%s: M1 answer %q", r.RunID, m1.Answer)
		}
		pl := answers["Where were the leader leases and the virtual address when R1 was cut off?"]
		if !strings.Contains(pl.Answer, "lease was held by m1 and the kube-scheduler lease by m1") || len(pl.Evidence) != 2 {
			t.Errorf("%s: placement answer %q with evidence %v", r.RunID, pl.Answer, pl.Evidence)
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

// A change after the heal started is the heal's doing, not the cut's: the
// racks window ends at the heal's start.
func TestRacksWindowEndsAtHealStart(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := func(sec float64, kind, subject string) evidence.Event {
		return evidence.Event{At: t0.Add(time.Duration(sec * float64(time.Second))), Source: "controlplane/m1", Subject: subject, Kind: kind}
	}
	base := evidence.NewSnapshot(t0.Add(-time.Second))
	rec := evidence.Record{Baseline: &base, Timeline: evidence.Timeline{
		ev(0, "ledger-recorded", "scenario/x"),
		ev(0, "fault-injected", "scenario/x"),
		ev(60, "heal-started", "scenario/x"),
		ev(61, "component-restarted", "process/m1/kube-scheduler"),
		ev(65, "fault-healed", "scenario/x"),
	}}
	st, err := AnalyseRacks(verdict.Run{RunID: "r"}, rec, RacksHosts{M1: "m1", W1: "w1", M2: "m2", W2: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Question == "What do M1's components do?" && !strings.HasPrefix(s.Answer, "no stop, start or restart") {
			t.Errorf("a restart after the heal started counts in the window: %s", s.Answer)
		}
	}
}
