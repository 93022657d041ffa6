package record

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends" // lab files are read through the backends' registry
)

var (
	t0  = verdicttest.T0
	run = verdicttest.Run
	j   = verdicttest.J
)

func TestAppendAndReadRuns(t *testing.T) {
	f, err := NewFolder(t.TempDir(), "self test", t0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(f.Dir, "20261101T100000Z-self_test") {
		t.Errorf("folder %s", f.Dir)
	}
	in := []verdict.Run{run("a", verdict.RunJudged, j("x", verdict.Violated)), run("b", verdict.FaultIneffective, j("x", verdict.Preserved))}
	for _, r := range in {
		if err := f.AppendRun(r); err != nil {
			t.Fatal(err)
		}
	}
	// A crash in the middle of a third append leaves an unterminated line.
	file, _ := os.OpenFile(f.Path(VerdictsFile), os.O_WRONLY|os.O_APPEND, 0)
	file.WriteString(`{"runID":"c","sce`)
	file.Close()
	out, err := ReadRuns(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].RunID != "a" || out[1].RunVerdict != verdict.FaultIneffective || out[0].Judgements[0].Verdict != verdict.Violated {
		t.Fatalf("read %+v", out)
	}
	// A malformed line that is not the last is an error naming the line.
	os.WriteFile(f.Path(VerdictsFile), []byte("{\"runID\":\"a\",\"scenario\":\"x\"}\nnot json\n{}\n"), 0o644)
	if _, err := ReadRuns(f.Dir); err == nil || !strings.Contains(err.Error(), VerdictsFile+":2: malformed run record") {
		t.Errorf("malformed line: %v", err)
	}
	if _, err := ReadRuns(filepath.Join(f.Dir, "nope")); err == nil {
		t.Error("a missing folder must be an error")
	}
	if g, _ := NewFolder(filepath.Dir(f.Dir), "self test", t0); g == nil || g.Dir == f.Dir {
		t.Error("a second folder with the same start must get its own name")
	}
}

func TestVerdictJUnitMapsEveryVerdict(t *testing.T) {
	runs := []verdict.Run{
		run("a", verdict.RunJudged, j("p", verdict.Preserved), j("v", verdict.Violated), j("i", verdict.InsufficientData), j("n", verdict.NotApplicable), j("d", verdict.DetectorInvalid)),
		run("b", verdict.FaultIneffective, j("v", verdict.Violated)),
	}
	f, _ := NewFolder(t.TempDir(), "s", t0)
	if err := f.WriteVerdictJUnit("s", runs); err != nil {
		t.Fatal(err)
	}
	suites, err := ReadVerdictJUnit(f.Path(VerdictJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	ts := suites.TestSuites[0]
	if ts.Tests != 6 || ts.Failures != 1 || ts.Skipped != 4 {
		t.Fatalf("tests %d failures %d skipped %d", ts.Tests, ts.Failures, ts.Skipped)
	}
	want := map[string]string{"a/p": "passed", "a/v": "failed", "a/i": "skipped", "a/n": "skipped", "a/d": "skipped", "b/v": "skipped"}
	for _, tc := range ts.TestCases {
		key := tc.Properties.WithName(PropRunID) + "/" + tc.Properties.WithName(PropInvariant)
		if tc.Status != want[key] {
			t.Errorf("%s: status %s, want %s", key, tc.Status, want[key])
		}
		switch key {
		case "a/v":
			if tc.Failure == nil || tc.Failure.Message != "because violated" {
				t.Errorf("violated case %+v", tc.Failure)
			}
		case "a/i":
			if tc.Skipped == nil || tc.Skipped.Message != "INSUFFICIENT_DATA: because insufficient_data" {
				t.Errorf("skipped case %+v", tc.Skipped)
			}
		case "b/v":
			if tc.Skipped == nil || !strings.HasPrefix(tc.Skipped.Message, "FAULT_INEFFECTIVE: probe saw nothing") || tc.Properties.WithName(PropVerdict) != "VIOLATED" {
				t.Errorf("ineffective run's case %+v", tc.Skipped)
			}
		}
	}
}

func TestEvidenceAndProvenance(t *testing.T) {
	f, _ := NewFolder(t.TempDir(), "s", t0)
	b := evidence.NewSnapshot(t0)
	if err := f.WriteEvidence("run/1", evidence.Record{Baseline: &b}); err != nil {
		t.Fatal(err)
	}
	if rec, err := ReadEvidence(f.Dir, "run/1"); err != nil || rec.Baseline == nil {
		t.Errorf("evidence read back: %+v %v", rec, err)
	}
	if _, err := ReadEvidence(f.Dir, "no-such-run"); err == nil || !strings.Contains(err.Error(), "no-such-run") {
		t.Errorf("missing evidence: %v", err)
	}

	dir := t.TempDir()
	p := filepath.Join(dir, "pair.yaml")
	os.WriteFile(p, []byte("name: pair\nkind: static\nlab: true\nkubeconfig: k\nnetwork: {management: 10.0.0.0/24}\nssh: {user: u, knownHosts: k, identityFile: i}\nhosts: [{name: a, roles: [control-plane], address: 10.0.0.1}]\n"), 0o644)
	c, err := lab.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ConfigHash(c)
	// sha256 of the exact bytes above.
	if err != nil || !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Errorf("hash %q %v", h, err)
	}
	os.WriteFile(p, []byte("name: pair\nkind: static\nlab: true\nkubeconfig: k\nnetwork: {management: 10.0.0.0/24}\nssh: {user: u, knownHosts: k, identityFile: j}\nhosts: [{name: a, roles: [control-plane], address: 10.0.0.1}]\n"), 0o644)
	if h2, _ := ConfigHash(c); h2 == h {
		t.Error("a changed lab file must change the hash")
	}
	if h, _ := ConfigHash(&lab.Config{Name: "mem"}); !strings.HasPrefix(h, "sha256-json:") {
		t.Errorf("in-memory config hash %q", h)
	}
	if c := GitCommit(context.Background()); c == "" {
		t.Error("git commit must be a commit or unknown")
	}
}

func TestRootIsTheEnvOrTheModuleRoot(t *testing.T) {
	t.Setenv(EnvReportsDir, "/somewhere/else")
	if r, err := Root(); err != nil || r != "/somewhere/else" {
		t.Errorf("with %s: %q %v", EnvReportsDir, r, err)
	}
	t.Setenv(EnvReportsDir, "")
	r, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	// The tests run in framework/record/, two below the module root.
	wd, _ := os.Getwd()
	if want := filepath.Join(filepath.Dir(filepath.Dir(wd)), "reports", "runs"); r != want {
		t.Errorf("root %q, want %q", r, want)
	}
}

func TestDecodeRunsKeepsWhereEachRecordWasRead(t *testing.T) {
	in := "{\"runID\":\"a\",\"scenario\":\"x\"}\n\n{\"runID\":\"b\",\"scenario\":\"x\",\"newerField\":1}\n{\"runID\":\"c\""
	lines, cut, err := DecodeRuns(strings.NewReader(in), "v.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].Where() != "v.jsonl:1" || lines[1].RunID != "b" || lines[1].Where() != "v.jsonl:3" || cut != "v.jsonl:4" {
		t.Errorf("lines %+v, cut %q; want a at 1, b at 3 and line 4 cut short", lines, cut)
	}
	if _, _, err := DecodeRuns(strings.NewReader(`{"runID":"a"} {"runID":"b"}`+"\n"), "v.jsonl"); err == nil || !strings.Contains(err.Error(), "v.jsonl:1: malformed run record: more than one JSON value") {
		t.Errorf("two values on a line: %v", err)
	}
	if _, _, err := DecodeRuns(strings.NewReader(`{"runID":"a","runVerdict":"FINE"}`+"\n"), "v.jsonl"); err == nil || !strings.Contains(err.Error(), "v.jsonl:1: malformed run record") {
		t.Errorf("a misspelt run verdict: %v", err)
	}
}
