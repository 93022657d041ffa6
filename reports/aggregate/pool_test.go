package aggregate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

// Environment of the writer process the pool test starts.
const (
	envPoolDir = "FAULTLINE_AGGREGATE_TEST_POOL_DIR"
	envPoolLab = "FAULTLINE_AGGREGATE_TEST_POOL_LAB"
)

// poolRuns is how many runs each writer records: one scenario's fault
// arm, single-copy VIOLATED in the first run of each lab and PRESERVED
// in the others.
const poolRuns = 20

// TestPoolWriterProcess is one Ginkgo process of a suite run over a pool,
// as far as its run folder sees it: it appends its runs, each naming its
// lab, through record.AppendRun.
func TestPoolWriterProcess(t *testing.T) {
	dir, labName := os.Getenv(envPoolDir), os.Getenv(envPoolLab)
	if dir == "" {
		t.Skip("started by TestReportReadsAFolderWrittenByTwoProcessesAsOneRun")
	}
	f := &record.Folder{Dir: dir}
	for i := range poolRuns {
		v := verdict.Preserved
		if i == 0 {
			v = verdict.Violated
		}
		start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		r := verdict.Run{
			Suite: "disagree", RunID: fmt.Sprintf("worker-power-off-fault-%s-%02d", labName, i), Scenario: "worker-power-off", Arm: "fault",
			Labels: crashLabels, Started: start, Ended: start.Add(time.Minute), RunVerdict: verdict.RunJudged,
			Judgements: []verdict.Judgement{{Invariant: "single-copy", Phase: verdict.Safety, Verdict: v, Reason: "made by the test"}},
			Lab:        verdict.LabInfo{Name: labName, Kind: "local", TimerProfile: "fast", KubernetesVersion: "v1.36.3", EtcdVersion: "v3.6.8"},
			GitCommit:  "abc123",
		}
		if err := f.AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
}

// A run folder two processes appended to at once (a suite run over lab11
// and lab11b) is read as one run: every record counted once, the rates
// pooled over both labs with a warning that they are, and --by lab
// splitting them.
func TestReportReadsAFolderWrittenByTwoProcessesAsOneRun(t *testing.T) {
	folder, err := record.NewFolder(t.TempDir(), "disagree", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for _, labName := range []string{"lab11", "lab11b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPoolWriterProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envPoolDir+"="+folder.Dir, envPoolLab+"="+labName)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v\n%s", i+1, err, outs[i])
		}
	}
	rep := build(t, nil, folder.Dir)
	if rep.Records != 2*poolRuns || len(rep.CutShort) != 0 {
		t.Fatalf("%d records (%v cut short), want %d", rep.Records, rep.CutShort, 2*poolRuns)
	}
	if r := row(t, rep.Findings[0], "fault", "single-copy"); r.Tally.Violated != 2 || r.Tally.Preserved != 2*poolRuns-2 || r.Runs != 2*poolRuns {
		t.Errorf("pooled row %+v", r)
	}
	if len(rep.Sources) != 1 || rep.Sources[0] != filepath.Join(folder.Dir, record.VerdictsFile) {
		t.Errorf("sources %v, want the one verdicts.jsonl", rep.Sources)
	}
	warned := false
	for _, w := range rep.Warnings {
		if strings.Contains(w, "2 labs (lab11 (local), lab11b (local))") && strings.Contains(w, "--by lab") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning that the rates pool two labs: %v", rep.Warnings)
	}
	byLab := build(t, [][]string{{"invariant", "lab"}}, folder.Dir)
	for _, labName := range []string{"lab11", "lab11b"} {
		if r := row(t, byLab.Findings[0], "fault", "single-copy", labName); r.Tally.Violated != 1 || r.Tally.N() != poolRuns {
			t.Errorf("%s: %+v", labName, r)
		}
	}
}
