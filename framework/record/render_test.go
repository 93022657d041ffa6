package record

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline/faultline/framework/verdict"
)

// Finish writes the record's files whether or not a renderer is linked,
// says so when none is, and hands every linked renderer the runs it read.
// One test, since the renderers are the process's.
func TestFinishWritesTheRecordAndRunsTheRenderers(t *testing.T) {
	f, err := NewFolder(t.TempDir(), "s", t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AppendRun(run("a", verdict.RunJudged, j("x", verdict.Violated))); err != nil {
		t.Fatal(err)
	}
	table := []verdict.Inapplicable{{FaultClass: "clock-skew", Invariant: "x", Reason: "clocks never reach x"}}
	report := types.Report{SuiteDescription: "s", SuiteSucceeded: true}

	runs, err := f.Finish("s", report, table)
	if !errors.Is(err, ErrNoRenderer) || len(runs) != 1 {
		t.Fatalf("without a renderer: %d runs, %v; want 1 run and ErrNoRenderer", len(runs), err)
	}
	for _, name := range []string{GinkgoJUnitFile, VerdictJUnitFile, ApplicabilityFile} {
		if _, err := os.Stat(f.Path(name)); err != nil {
			t.Errorf("%s not written without a renderer: %v", name, err)
		}
	}
	if got, ok, err := ReadApplicability(f.Dir); err != nil || !ok || !slices.Equal(got, table) {
		t.Errorf("applicability read back %v %v %v, want %v", got, ok, err, table)
	}

	var seen []string
	RegisterRenderer("b-test", func(g *Folder, suite string, runs []verdict.Run, table []verdict.Inapplicable) error {
		seen = append(seen, "b")
		return g.WriteFile("b.md", []byte(suite+" "+runs[0].RunID+" "+table[0].Invariant))
	})
	RegisterRenderer("a-test", func(*Folder, string, []verdict.Run, []verdict.Inapplicable) error {
		seen = append(seen, "a")
		return errors.New("broken renderer")
	})
	if _, err := f.Finish("s", report, table); err == nil || !strings.Contains(err.Error(), "rendering a-test: broken renderer") {
		t.Errorf("a failing renderer must be named: %v", err)
	}
	if !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("renderers ran %v, want a then b (by name), the second despite the first failing", seen)
	}
	if b, err := os.ReadFile(f.Path("b.md")); err != nil || string(b) != "s a x" {
		t.Errorf("rendering %q %v", b, err)
	}

	defer func() {
		if recover() == nil {
			t.Error("a renderer registered twice must panic")
		}
	}()
	RegisterRenderer("b-test", func(*Folder, string, []verdict.Run, []verdict.Inapplicable) error { return nil })
}

func TestReadApplicabilityNamesWhatIsWrong(t *testing.T) {
	f, _ := NewFolder(t.TempDir(), "s", t0)
	if _, ok, err := ReadApplicability(f.Dir); ok || err != nil {
		t.Errorf("a folder without a table: ok %v, %v", ok, err)
	}
	if err := f.WriteApplicability(nil); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := ReadApplicability(f.Dir); !ok || err != nil || len(got) != 0 {
		t.Errorf("an empty table: %v %v %v", got, ok, err)
	}
	for body, want := range map[string]string{
		`[{"faultClass":"gray","invariant":"x","why":"?"}]`: "malformed applicability table",
		`[{"faultClass":"gray"}]`:                           "row 0 needs faultClass and invariant",
	} {
		os.WriteFile(f.Path(ApplicabilityFile), []byte(body), 0o644)
		if _, _, err := ReadApplicability(f.Dir); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ApplicabilityFile) {
			t.Errorf("%s: %v, want an error naming the file and %q", body, err, want)
		}
	}
}
