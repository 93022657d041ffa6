package record

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline/faultline/framework/verdict"
)

// tree lists a folder's files with their content, to show it untouched.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if info.IsDir() {
			out[p] = "dir"
			return nil
		}
		b, _ := os.ReadFile(p)
		out[p] = string(b)
		return nil
	})
	return out
}

func TestOpenToResumeNamesEveryBadFolder(t *testing.T) {
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
	rec := func(suite string) string {
		return `{"runID":"r1","suite":"` + suite + `","scenario":"s","arm":"fault","runVerdict":"JUDGED","judgements":[]}`
	}
	for name, c := range map[string]struct{ dir, want string }{
		"missing":              {filepath.Join(root, "nope"), "it does not exist"},
		"a file":               {file, "it is not a directory"},
		"no evidence":          {plain, "it is not a run folder: it has no evidence/ directory"},
		"another suite's run":  {mk("20261101T100000Z-selftest-2", rec("disagree")), `it is a run folder of suite "disagree" (` + filepath.Join(root, "20261101T100000Z-selftest-2", VerdictsFile) + `:1 holds a run of it), not of "selftest"`},
		"another suite's name": {mk("20261101T100000Z-agents"), `its name says it is a run folder of suite "agents", not of "selftest"`},
		"a stranger's name":    {mk("old-results"), "its name is not <UTC start>-<suite>"},
		"malformed":            {mk("20261101T100000Z-selftest-3", "not json", rec("selftest")), VerdictsFile + ":1: malformed run record"},
		"no run ID":            {mk("20261101T100000Z-selftest-4", `{"suite":"selftest","scenario":"s"}`), ":1: a run record needs runID and scenario"},
	} {
		before := tree(t, root)
		_, err := OpenToResume(c.dir, "selftest")
		if err == nil || !strings.Contains(err.Error(), "resuming run folder "+c.dir+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming the folder and saying %q", name, err, c.want)
		}
		if after := tree(t, root); len(after) != len(before) {
			t.Errorf("%s: the check touched the folders", name)
		}
	}

	// A folder killed before its first record is its suite's by its name,
	// with or without the suffix of a taken name.
	for _, name := range []string{"20261101T100000Z-selftest", "20261101T100000Z-selftest-12"} {
		r, err := OpenToResume(mk(name), "selftest")
		if err != nil || len(r.Lines) != 0 || r.Cut != "" {
			t.Errorf("%s: %+v, %v", name, r, err)
		}
	}
	// Records say whose a folder is, whatever its name now.
	r, err := OpenToResume(mk("renamed", rec("selftest")), "selftest")
	if err != nil || len(r.Lines) != 1 || r.Lines[0].RunID != "r1" {
		t.Errorf("renamed: %+v, %v", r, err)
	}
}

func TestDropCutRecordLetsTheNextAppendStartItsOwnLine(t *testing.T) {
	f, err := NewFolder(t.TempDir(), "selftest", t0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.DropCutRecord(); n != 0 || err != nil {
		t.Errorf("no verdicts.jsonl: %d, %v", n, err)
	}
	a := run("a", verdict.RunJudged, j("x", verdict.Preserved))
	a.Suite = "selftest"
	if err := f.AppendRun(a); err != nil {
		t.Fatal(err)
	}
	if n, err := f.DropCutRecord(); n != 0 || err != nil {
		t.Errorf("whole records: %d, %v", n, err)
	}
	file, _ := os.OpenFile(f.Path(VerdictsFile), os.O_WRONLY|os.O_APPEND, 0)
	file.WriteString(`{"runID":"b","sce`)
	file.Close()
	r, err := OpenToResume(f.Dir, "selftest")
	if err != nil || len(r.Lines) != 1 || r.Cut != f.Path(VerdictsFile)+":2" {
		t.Fatalf("resume of a cut folder: %+v, %v", r, err)
	}
	if n, err := f.DropCutRecord(); n != len(`{"runID":"b","sce`) || err != nil {
		t.Errorf("cut record: removed %d, %v", n, err)
	}
	c := run("c", verdict.RunJudged, j("x", verdict.Preserved))
	c.Suite = "selftest"
	if err := f.AppendRun(c); err != nil {
		t.Fatal(err)
	}
	runs, err := ReadRuns(f.Dir)
	if err != nil || len(runs) != 2 || runs[0].RunID != "a" || runs[1].RunID != "c" {
		t.Errorf("after the cut record was dropped: %+v, %v", runs, err)
	}
}

func TestLockRefusesASecondHolder(t *testing.T) {
	f, err := NewFolder(t.TempDir(), "selftest", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Lock(); err != nil {
		t.Fatal(err)
	}
	// A second open of the folder is a second holder, as another process
	// would be.
	err = (&Folder{Dir: f.Dir}).Lock()
	if !errors.Is(err, ErrFolderInUse) || !strings.Contains(err.Error(), f.Dir) {
		t.Errorf("second lock: %v, want in use, naming the folder", err)
	}
}

func TestGinkgoJUnitOfAResumedFolderKeepsTheEarlierSuites(t *testing.T) {
	f, err := NewFolder(t.TempDir(), "selftest", t0)
	if err != nil {
		t.Fatal(err)
	}
	report := func(state types.SpecState, text string) types.Report {
		return types.Report{SuiteDescription: "selftest", SuiteSucceeded: state == types.SpecStatePassed, SpecReports: types.SpecReports{
			{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: state},
		}}
	}
	if err := f.WriteGinkgoJUnit(report(types.SpecStateFailed, "first")); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteGinkgoJUnit(report(types.SpecStatePassed, "second")); err != nil {
		t.Fatal(err)
	}
	got, err := ReadVerdictJUnit(f.Path(GinkgoJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.TestSuites) != 2 || got.Failures != 1 || got.Tests != 2 ||
		!strings.Contains(got.TestSuites[0].TestCases[0].Name, "first") || !strings.Contains(got.TestSuites[1].TestCases[0].Name, "second") {
		t.Errorf("merged JUnit: %d suites, %d tests, %d failures: %+v", len(got.TestSuites), got.Tests, got.Failures, got.TestSuites)
	}
	if _, err := os.Stat(f.Path(GinkgoJUnitFile) + ".this-run"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary report was left: %v", err)
	}

	// An earlier file that cannot be read is kept, not overwritten.
	if err := os.WriteFile(f.Path(GinkgoJUnitFile), []byte("<broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteGinkgoJUnit(report(types.SpecStatePassed, "third")); err == nil || !strings.Contains(err.Error(), "kept as it is") {
		t.Errorf("unreadable earlier JUnit: %v", err)
	}
	if b, _ := os.ReadFile(f.Path(GinkgoJUnitFile)); string(b) != "<broken" {
		t.Errorf("the earlier file was overwritten: %q", b)
	}
}
