package aggregate

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
)

// repeatedFolder writes verdicttest.RepeatedRuns through the record's own
// writer, as a suite with repetitions does.
func repeatedFolder(t *testing.T) string {
	t.Helper()
	folder, err := record.NewFolder(t.TempDir(), "s", time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range verdicttest.RepeatedRuns() {
		if err := folder.AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
	return folder.Dir
}

// Over a folder of repeated runs the report names the flaky verdicts in
// its findings tables, gives a rate that pools the repetitions of several
// scenarios without an interval, and prints the stability tables: each
// scenario × arm × invariant over its repetitions, in every format.
func TestReportOfRepeatedRuns(t *testing.T) {
	rep := build(t, [][]string{{ByInvariant}, {ByScenario}, {ByInvariant, ByScenario}}, repeatedFolder(t))
	if !rep.Repeated || len(rep.Stability) != 9 {
		t.Fatalf("repeated %v, %d stability rows, want 9", rep.Repeated, len(rep.Stability))
	}
	ep := row(t, rep.Findings[0], "fault", verdicttest.Endpoints)
	if !ep.Pool.PoolsRepetitions() || len(ep.Flaky) != 1 || ep.Flaky[0].Scenario != "pod-network-cut" {
		t.Errorf("endpoints-truthful by invariant: pooled %v, flaky %+v", ep.Pool.PoolsRepetitions(), ep.Flaky)
	}
	if acked := row(t, rep.Findings[0], "fault", verdicttest.Acked); acked.Pool.PoolsRepetitions() {
		t.Error("one scenario's repetitions are trials of one thing, not a pool")
	}
	// By invariant and scenario, a row is one scenario's: its interval stands.
	if r := row(t, rep.Findings[2], "fault", verdicttest.Endpoints, "pod-network-cut"); r.Pool.PoolsRepetitions() || rep.Findings[2].FlakyText(r) != "2/3" {
		t.Errorf("by invariant, scenario: pooled %v, flaky %q", r.Pool.PoolsRepetitions(), rep.Findings[2].FlakyText(r))
	}
	if r := row(t, rep.Findings[1], "fault", "kubelet-stopped"); rep.Findings[1].FlakyText(r) != verdicttest.Graceful+" 1/3" {
		t.Errorf("by scenario: flaky %q", rep.Findings[1].FlakyText(r))
	}
	// By repetition, the rounds side by side: round 2's findings.
	byRound := build(t, [][]string{{ByRepetition}}, repeatedFolder(t))
	if r := row(t, byRound.Findings[0], "fault", "2"); r.Tally.Violated != 1 || r.Tally.Preserved != 2 || r.Excluded != 2 {
		t.Errorf("by repetition, round 2: %+v", r)
	}

	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| endpoints-truthful | 2 | 0 | 0 | 4 | 2/6 = 33.3% (pools the repetitions of 2 scenarios: no interval) | unknown: 4 PRESERVED not recorded | pod-network-cut 2/3 |",
		"| acknowledged-data-survives | 3 | 0 | 0 | 0 | 3/3 = 100.0% [43.9%, 100.0%] |",
		PooledRepetitionsNote,
		"## Stability over repetitions",
		"| pod-network-cut | endpoints-truthful | 2 of 3 | 2/3 = 66.7% [20.8%, 93.9%] | **flaky** | ABORTED 1 | 4 | stretch: 5 s [4, 6] (3) |",
		"| control-endpoints | endpoints-truthful | 1 of 2 | 1/2 = 50.0% [9.5%, 90.5%] | **flaky** | - | 2 | - |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q\n%s", want, md.String())
		}
	}

	var c bytes.Buffer
	if err := WriteCSV(&c, rep); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	stability := 0
	for _, r := range recs[1:] {
		if len(r) != len(recs[0]) {
			t.Fatalf("row of %d fields under a header of %d: %v", len(r), len(recs[0]), r)
		}
		if r[col["by"]] != "stability" {
			continue
		}
		stability++
		if r[col["scenario"]] == "pod-network-cut" && r[col["arm"]] == "fault" && r[col["invariant"]] == verdicttest.Acked {
			if r[col["violated"]] != "3" || r[col["counted"]] != "3" || r[col["ci95_low"]] != "0.438503" || r[col["stability"]] != "VIOLATED" || r[col["aborted"]] != "1" ||
				!strings.Contains(r[col["quantities"]], "per overlap × append-rate: 2 appends/(s × appends/s) [1.5, 2] (3)") {
				t.Errorf("stability row %v", r)
			}
		}
	}
	if stability != 9 {
		t.Errorf("%d stability rows in the CSV, want 9", stability)
	}

	var tex bytes.Buffer
	if err := WriteLaTeX(&tex, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"invariant & violated & counted & rate & 95\\% CI & flaky (violated of judged) \\\\",
		"endpoints-truthful & 2 & 6 & 33.3\\% & pooled, no interval & pod-network-cut 2/3 \\\\",
		"scenario & invariant & violated & judged & rate & 95\\% CI & verdict & not counted & quantities \\\\",
		"kubelet-stopped & graceful-deletion & 1 & 3 & 33.3\\% & [6.1\\%, 79.2\\%] & flaky & FAULT\\_INEFFECTIVE 1 & - \\\\",
	} {
		if !strings.Contains(tex.String(), want) {
			t.Errorf("latex lacks %q\n%s", want, tex.String())
		}
	}
	if strings.Contains(tex.String(), "control-endpoints") {
		t.Errorf("the latex stability table holds a control:\n%s", tex.String())
	}
}

// Records written before repetitions (no repetition field) are repetition
// 1, and a folder that holds them beside later repetitions of the same
// pairs (an old folder resumed with -faultline.repeat) reads as one set of
// repetitions.
func TestOldRecordsAreTheFirstRepetition(t *testing.T) {
	dir := t.TempDir()
	old := line("o1", "worker-power-off", "fault", "JUDGED", "", crashLabels, "fast", judge("single-copy", "VIOLATED"))
	newer := strings.Replace(line("n2", "worker-power-off", "fault", "JUDGED", "", crashLabels, "fast", judge("single-copy", "PRESERVED")), `"gitCommit"`, `"repetition":2,"gitCommit"`, 1)
	writeFile(t, dir+"/"+VerdictsFile, old+"\n"+newer+"\n")
	rep := build(t, nil, dir)
	if len(rep.Runs) != 2 || rep.Runs[0].RepetitionNumber() != 1 || rep.Runs[1].RepetitionNumber() != 2 {
		t.Fatalf("repetitions read %d and %d", rep.Runs[0].RepetitionNumber(), rep.Runs[1].RepetitionNumber())
	}
	if !rep.Repeated || len(rep.Stability) != 1 || !rep.Stability[0].Flaky() || rep.Stability[0].Repetitions != 2 {
		t.Errorf("stability %+v", rep.Stability)
	}
	// One run of a pair is no repetition: no stability to report.
	single := build(t, nil, writeOne(t, old))
	if single.Repeated {
		t.Error("a folder whose pairs ran once reports a stability")
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, single); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Stability") || strings.Contains(md.String(), "flaky") {
		t.Errorf("a report without repetitions shows stability:\n%s", md.String())
	}
}

func writeOne(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir+"/"+VerdictsFile, content+"\n")
	return dir
}
