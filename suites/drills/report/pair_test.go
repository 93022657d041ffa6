package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/suites/drills"
)

// The pair drill's evidence recorded on a local lab (testdata/README.md).
func TestPairOnRecordedRuns(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "testdata/pair-fast", dir)
	runs, err := record.ReadRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	var c, e PairArm
	for _, r := range runs {
		a, err := analyse(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		switch r.Scenario {
		case drills.IDKubeletStopped:
			c = a
		case drills.IDPowerOff:
			e = a
		}
	}
	for _, a := range []PairArm{c, e} {
		if a.Worker != "pair-worker" {
			t.Errorf("%s: worker %q", a.Run.RunID, a.Worker)
		}
		for _, key := range []string{"ready-unknown", "unreachable-noexecute", "web-deletion", "replacement-created", "replacement-unschedulable", "ready-true", "terminating-gone", "orphan-gone"} {
			if !a.Moment(key).Seen {
				t.Errorf("%s: moment %s not found", a.Run.RunID, key)
			}
		}
		for _, key := range []string{"replacement-scheduled", "orphan-recreated"} {
			if a.Moment(key).Seen {
				t.Errorf("%s: moment %s found, but the run shows none", a.Run.RunID, key)
			}
		}
		// Eviction comes the toleration (30s in fast) after the NoExecute taint.
		gap := a.Moment("web-deletion").At.Sub(a.Moment("unreachable-noexecute").At)
		if gap < 29*time.Second || gap > 35*time.Second {
			t.Errorf("%s: deletion %s after the NoExecute taint, want about 30s", a.Run.RunID, gap)
		}
		if !a.Lease.OK || a.Lease.LastRenew.IsZero() {
			t.Errorf("%s: lease check %+v", a.Run.RunID, a.Lease)
		}
	}
	if got := keptRunning(c.Runtime); !strings.HasPrefix(got, "kept running") {
		t.Errorf("kubelet stopped: containers %s", got)
	}
	if got := keptRunning(e.Runtime); !strings.HasPrefix(got, "did not keep running") {
		t.Errorf("power off: containers %s", got)
	}
	d, ok := Diverge(c, e)
	if !ok || d.Key != DivergenceRuntime {
		t.Errorf("divergence %+v (%v), want the runtime view: containers kept running with the kubelet stopped, gone with the power off", d, ok)
	}
	if _, ok := APIDiverge(c, e); ok {
		t.Errorf("the API view of the recorded window diverges, but every moment lies within %s", Tolerance)
	}

	files, err := WriteFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("wrote %v", files)
	}
	md, err := os.ReadFile(filepath.Join(dir, PairReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"◀ divergence", "node-monitor-grace-period = 12s", "default-unreachable-toleration-seconds = 30s", "Within 2 s of the prediction", "untolerated taint"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	png, err := os.ReadFile(filepath.Join(dir, PairPlotFile))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("plot is not a PNG (%v)", err)
	}
}

func TestWriteFolderRefusesOneArm(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, "testdata/pair-fast", dir)
	b, err := os.ReadFile(filepath.Join(dir, record.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(l, drills.IDPowerOff) {
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, record.VerdictsFile), []byte(strings.Join(keep, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteFolder(dir); err == nil || !strings.Contains(err.Error(), "only one arm") {
		t.Errorf("got %v, want an error naming the missing arm", err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
