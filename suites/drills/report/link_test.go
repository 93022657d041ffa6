package report

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/suites/drills"
)

// writeSynthFolder writes a run folder through the record package holding
// one fault-arm run of each scenario given, each with the evidence given.
func writeSynthFolder(t *testing.T, runs map[string]*synthArm) string {
	t.Helper()
	f, err := record.NewFolder(t.TempDir(), "drills", newSynthArm().t0)
	if err != nil {
		t.Fatal(err)
	}
	for id, s := range runs {
		r := synthRun(id + "/fault")
		r.Suite, r.Scenario, r.Arm, r.RunVerdict, r.Started, r.Ended = "drills", id, "fault", verdict.RunJudged, s.t0, s.at(90)
		if err := f.AppendRun(r); err != nil {
			t.Fatal(err)
		}
		if err := f.WriteEvidence(r.RunID, s.rec); err != nil {
			t.Fatal(err)
		}
	}
	return f.Dir
}

// The report finds the drills' runs by the suite's own scenario IDs, reads
// their evidence by the suite's question names and value types, and the
// drill's pods by the suite's namespace and names: a run folder built
// from the suite's constants yields the pair report, with the runtime
// view (drill/containers) as the divergence and the Deployment's pods
// (namespace and Deployment name) marked for deletion in both arms. A
// rename in the suite is a rename here; an ID the report did not know
// would leave it with nothing to write, which fails this test.
func TestTheReportFindsWhatTheSuiteNames(t *testing.T) {
	c, e := issuePair()
	dir := writeSynthFolder(t, map[string]*synthArm{drills.IDKubeletStopped: c, drills.IDPowerOff: e})
	files, err := WriteFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, PairReportFile), filepath.Join(dir, PairPlotFile)}; !slices.Equal(files, want) {
		t.Fatalf("wrote %v, want %v", files, want)
	}
	md, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"35 of 35 reads answered", "0 of 35 reads answered",
		"| Deployment's pods get a deletionTimestamp | +43.0s (43.0s after the fault) | +43.0s (43.0s after the fault) |",
		"| bare pod gets a deletionTimestamp | +43.0s (43.0s after the fault) | +43.0s (43.0s after the fault) |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the pair report lacks %q:\n%s", want, md)
		}
	}

	// One arm alone is refused by name; runs of no drill scenario are none.
	one := writeSynthFolder(t, map[string]*synthArm{drills.IDPowerOff: e})
	if _, err := WriteFolder(one); err == nil || !strings.Contains(err.Error(), drills.IDPowerOff+" without "+drills.IDKubeletStopped) {
		t.Errorf("one arm: %v", err)
	}
	other := writeSynthFolder(t, map[string]*synthArm{"not-a-drill": c})
	if _, err := WriteFolder(other); !errors.Is(err, ErrNoDrillRuns) {
		t.Errorf("a folder of other runs: %v, want ErrNoDrillRuns", err)
	}
}
