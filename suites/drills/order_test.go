//go:build !lab

package drills_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline/faultline/suites/drills"
)

// TestPairArmsRunInTableOrder builds the lab suite and asks Ginkgo, in a
// dry run under several seeds, in which order it would run the pair
// drill: the control arm (6.C2) must come before the experiment (6.C1)
// whatever the seed, as the drill and its report need; with repetitions,
// in every round, the rounds one after the other.
func TestPairArmsRunInTableOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the lab suite")
	}
	bin := filepath.Join(t.TempDir(), "drills.test")
	if out, err := exec.Command("go", "test", "-c", "-tags", "lab", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the lab suite: %v\n%s", err, out)
	}
	for _, run := range []struct{ seed, repeat int }{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}, {7, 1}, {8, 1}, {1, 3}, {2, 3}, {3, 3}} {
		seed := run.seed
		report := filepath.Join(t.TempDir(), "report.json")
		cmd := exec.Command(bin, "-ginkgo.dry-run", "-ginkgo.seed="+strconv.Itoa(seed), "-ginkgo.label-filter="+drills.LabelPair,
			"-ginkgo.json-report="+report, "-ginkgo.no-color", "-faultline.repeat="+strconv.Itoa(run.repeat))
		cmd.Env = append(os.Environ(), "FAULTLINE_LAB=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("seed %d: dry run: %v\n%s", seed, err, out)
		}
		b, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var reports []types.Report
		if err := json.Unmarshal(b, &reports); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(reports) != 1 {
			t.Fatalf("seed %d: %d suite reports, want 1", seed, len(reports))
		}
		var order []string
		for _, sr := range reports[0].SpecReports {
			if sr.LeafNodeType != types.NodeTypeIt || sr.State != types.SpecStatePassed {
				continue // filtered out, or a suite node
			}
			text := strings.Join(sr.ContainerHierarchyTexts, " ")
			for _, id := range []string{drills.IDKubeletStopped, drills.IDPowerOff} {
				if strings.Contains(text, id) {
					order = append(order, id)
				}
			}
		}
		want := strings.TrimSuffix(strings.Repeat(drills.IDKubeletStopped+","+drills.IDPowerOff+",", run.repeat), ",")
		if strings.Join(order, ",") != want {
			t.Errorf("seed %d, %d repetitions: the pair drill would run %v; want %s", seed, run.repeat, order, want)
		}
	}
}
