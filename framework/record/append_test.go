package record

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// Environment of the writer process the append test starts.
const (
	envAppendDir    = "FAULTLINE_RECORD_TEST_APPEND_DIR"
	envAppendWriter = "FAULTLINE_RECORD_TEST_APPEND_WRITER"
)

// appendRecords and appendPadding make each record a line far longer
// than a pipe buffer or a page, so that a write in parts would show.
const (
	appendRecords = 150
	appendPadding = 96 << 10
)

// appendedRun is record i of writer w, on writer w's lab.
func appendedRun(w string, i int) verdict.Run {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	return verdict.Run{
		Suite: "append", RunID: fmt.Sprintf("%s-%03d", w, i), Scenario: "s" + strconv.Itoa(i%7), Arm: "fault",
		Started: started, Ended: started.Add(time.Second), RunVerdict: verdict.RunAborted,
		RunReason: strings.Repeat(w, appendPadding),
		Lab:       verdict.LabInfo{Name: "lab-" + w, Kind: "memlab"},
	}
}

// TestAppendWriterProcess is the writer the append test starts twice: it
// appends its records and writes an evidence file for each, as a Ginkgo
// process of a suite run over a pool does.
func TestAppendWriterProcess(t *testing.T) {
	dir, w := os.Getenv(envAppendDir), os.Getenv(envAppendWriter)
	if dir == "" {
		t.Skip("started by TestAppendsOfTwoProcessesStayWholeLines")
	}
	f := &Folder{Dir: dir}
	for i := range appendRecords {
		r := appendedRun(w, i)
		if err := f.AppendRun(r); err != nil {
			t.Fatal(err)
		}
		if err := f.WriteEvidence(r.RunID, evidence.Record{}); err != nil {
			t.Fatal(err)
		}
	}
}

// Two processes appending to one verdicts.jsonl at once (the Ginkgo
// processes of a suite run over a pool of labs): every record is a whole
// line, none is lost, each process's records are in its own order, each
// names its own lab, and every evidence file is there.
func TestAppendsOfTwoProcessesStayWholeLines(t *testing.T) {
	folder, err := NewFolder(t.TempDir(), "append", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	outs := make([]*strings.Builder, 2)
	for i, w := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAppendWriterProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), envAppendDir+"="+folder.Dir, envAppendWriter+"="+w)
		outs[i] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v\n%s", i, err, outs[i])
		}
	}
	runs, err := ReadRuns(folder.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2*appendRecords {
		t.Fatalf("%d records, want %d", len(runs), 2*appendRecords)
	}
	next := map[string]int{}
	interleaved := false
	for k, r := range runs {
		w := strings.TrimPrefix(r.Lab.Name, "lab-")
		want := appendedRun(w, next[w])
		if r.RunID != want.RunID || r.RunReason != want.RunReason {
			t.Fatalf("record %d: %s (%d bytes of reason), want %s: a record out of its writer's order or cut", k+1, r.RunID, len(r.RunReason), want.RunID)
		}
		next[w]++
		if k > 0 && runs[k-1].Lab.Name != r.Lab.Name {
			interleaved = true
		}
		if _, err := os.Stat(filepath.Join(folder.Dir, EvidenceDir, r.RunID+".jsonl")); err != nil {
			t.Errorf("evidence of %s: %v", r.RunID, err)
		}
	}
	if next["a"] != appendRecords || next["b"] != appendRecords {
		t.Errorf("records per writer %v", next)
	}
	t.Logf("the two writers' records interleaved: %v", interleaved)
	left, _ := filepath.Glob(filepath.Join(folder.Dir, EvidenceDir, "*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
