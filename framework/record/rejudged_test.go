package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

func TestOpenToRejudgeNamesEveryBadFolder(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, records ...string) string {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, EvidenceDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if len(records) > 0 {
			if err := os.WriteFile(filepath.Join(dir, VerdictsFile), []byte(strings.Join(records, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	plain := filepath.Join(root, "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	const rec = `{"runID":"r1","suite":"s","scenario":"s","arm":"fault","runVerdict":"JUDGED","judgements":[]}`
	parent := filepath.Join(root, "runs")
	mk(filepath.Join("runs", "20261101T100000Z-s"), rec)
	for name, c := range map[string]struct{ dir, want string }{
		"missing":      {filepath.Join(root, "nope"), "it does not exist"},
		"a file":       {file, "it is not a directory"},
		"no evidence":  {plain, "it is not a run folder: it has no evidence/ directory"},
		"the parent":   {parent, "it is not a run folder but holds 1 of them"},
		"no records":   {mk("empty"), "it holds no run record (verdicts.jsonl)"},
		"malformed":    {mk("bad", "not json", rec), VerdictsFile + ":1: malformed run record"},
		"no run ID":    {mk("noid", `{"suite":"s","scenario":"s"}`), ":1: a run record needs runID and scenario"},
		"a re-judging": {mk("again", `{"runID":"r1","scenario":"s","arm":"fault","runVerdict":"JUDGED","rejudged":{"at":"2026-11-01T10:00:00Z","gitCommit":"x"}}`), "it is a re-judging of"},
	} {
		before := tree(t, root)
		_, _, err := OpenToRejudge(c.dir)
		if err == nil || !strings.Contains(err.Error(), c.dir) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming the folder and saying %q", name, err, c.want)
		}
		if after := tree(t, root); len(after) != len(before) {
			t.Errorf("%s: the check touched the folders", name)
		}
	}
	cutDir := mk("cut")
	if err := os.WriteFile(filepath.Join(cutDir, VerdictsFile), []byte(rec+"\n"+`{"runID":"r2","sce`), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, cut, err := OpenToRejudge(cutDir)
	if err != nil || len(lines) != 1 || !strings.HasSuffix(cut, VerdictsFile+":2") {
		t.Errorf("a cut last record: %d lines, cut %q, %v", len(lines), cut, err)
	}
}

// A re-judging is a run folder of its own beside the run's records, whose
// evidence is the run's; the run folder's own files stay as they were.
func TestWriteRejudgedLeavesTheRunFolderAsItWas(t *testing.T) {
	f, err := NewFolder(t.TempDir(), "s", t0)
	if err != nil {
		t.Fatal(err)
	}
	recorded := run("a", verdict.RunJudged, j("x", verdict.Preserved))
	if err := f.AppendRun(recorded); err != nil {
		t.Fatal(err)
	}
	snap := evidence.NewSnapshot(t0)
	if err := f.WriteEvidence("a", evidence.Record{Baseline: &snap}); err != nil {
		t.Fatal(err)
	}
	before := tree(t, f.Dir)
	again := recorded
	again.Judgements = []verdict.Judgement{j("x", verdict.Violated)}
	again.Rejudged = &verdict.Rejudged{At: t0.Add(time.Hour), GitCommit: "new"}
	at := t0.Add(time.Hour)
	rj := Rejudging{Suite: "s", Runs: []verdict.Run{again}, Changes: []byte("x: PRESERVED -> VIOLATED\n")}
	dir, err := WriteRejudged(f.Dir, at, rj)
	if err != nil && err != ErrNoRenderer {
		t.Fatal(err)
	}
	if dir != filepath.Join(f.Dir, RejudgedDir, "20261101T110000Z") {
		t.Errorf("written to %s", dir)
	}
	for p, content := range before {
		if after := tree(t, f.Dir)[p]; after != content {
			t.Errorf("%s changed", p)
		}
	}
	runs, err := ReadRuns(dir)
	if err != nil || len(runs) != 1 || runs[0].Judgements[0].Verdict != verdict.Violated || runs[0].Rejudged.GitCommit != "new" {
		t.Errorf("re-judged runs %+v, %v", runs, err)
	}
	if ev, err := ReadEvidence(dir, "a"); err != nil || ev.Baseline == nil {
		t.Errorf("the run's evidence through the re-judging: %v", err)
	}
	for _, name := range []string{VerdictJUnitFile, ApplicabilityFile, RejudgeFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("no %s: %v", name, err)
		}
	}
	if _, _, err := OpenToRejudge(dir); err == nil || !strings.Contains(err.Error(), "judge that folder again") {
		t.Errorf("a re-judging opened to be judged again: %v", err)
	}

	// Ten more at the same second are numbered, and the latest is the
	// last numbered, not the last in name order.
	for range 10 {
		if _, err := WriteRejudged(f.Dir, at, rj); err != nil && err != ErrNoRenderer {
			t.Fatal(err)
		}
	}
	if latest, err := LatestRejudged(f.Dir); err != nil || filepath.Base(latest) != "20261101T110000Z-11" {
		t.Errorf("latest %s, %v", latest, err)
	}

	// A re-judging that cannot be written leaves nothing behind.
	g, err := NewFolder(t.TempDir(), "s", t0)
	if err != nil {
		t.Fatal(err)
	}
	bad := again
	bad.Judgements = []verdict.Judgement{{Invariant: "x", Verdict: "MAYBE"}}
	if _, err := WriteRejudged(g.Dir, at, Rejudging{Suite: "s", Runs: []verdict.Run{bad}}); err == nil {
		t.Error("a record that cannot be encoded was written")
	}
	if _, err := os.Stat(filepath.Join(g.Dir, RejudgedDir)); !os.IsNotExist(err) {
		t.Errorf("a failed re-judging left %s: %v", RejudgedDir, err)
	}
	if _, err := LatestRejudged(g.Dir); err == nil || !strings.Contains(err.Error(), "has not been judged again") {
		t.Errorf("no re-judging: %v", err)
	}
}
