package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

// TestReportOverTwoSelftestRuns runs the engine's self-test suite twice
// (engineered to produce every verdict kind and a FAULT_INEFFECTIVE run),
// then `faultline report` over both run folders, and checks the rate table
// against counts made independently from record.ReadRuns.
func TestReportOverTwoSelftestRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the self-test suite twice")
	}
	suite := filepath.Join(t.TempDir(), "selftest.test")
	if out, err := exec.Command("go", "test", "-c", "-o", suite, "../../framework/scenario/selftest").CombinedOutput(); err != nil {
		t.Fatalf("building the self-test suite: %v\n%s", err, out)
	}
	runsDir := t.TempDir()
	for i := 0; i < 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, suite, "-ginkgo.label-filter=!slow", "-ginkgo.no-color")
		cmd.Env = append(os.Environ(), "FAULTLINE_SELFTEST_STATE="+t.TempDir(), "FAULTLINE_REPORTS_DIR="+runsDir)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		// The suite fails by design (one scenario violates an invariant);
		// only a run that did not finish is a problem here.
		if timedOut || (err != nil && cmd.ProcessState == nil) {
			t.Fatalf("self-test run %d did not finish: %v\n%s", i+1, err, out)
		}
		// Run folders are named by the second the suite started.
		time.Sleep(1100 * time.Millisecond)
	}
	folders, err := filepath.Glob(filepath.Join(runsDir, "*-selftest"))
	if err != nil || len(folders) != 2 {
		t.Fatalf("want 2 run folders, have %v (%v)", folders, err)
	}

	// Counts made from the reporters' own reader, by arm and invariant.
	type counts struct{ violated, preserved, other, excluded int }
	want := map[string]*counts{}
	excludedRuns, judged := 0, 0
	for _, f := range folders {
		runs, err := record.ReadRuns(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.Counted() {
				judged++
			} else {
				excludedRuns++
			}
			for _, j := range r.Judgements {
				k := r.Arm + "/" + j.Invariant
				if want[k] == nil {
					want[k] = &counts{}
				}
				switch {
				case !r.Counted():
					want[k].excluded++
				case j.Verdict == verdict.Violated:
					want[k].violated++
				case j.Verdict == verdict.Preserved:
					want[k].preserved++
				default:
					want[k].other++
				}
			}
		}
	}
	if excludedRuns == 0 || judged == 0 {
		t.Fatalf("the self-test should give judged and excluded runs; got %d and %d", judged, excludedRuns)
	}

	res := faultline(t, "", append([]string{"report", "--format", "csv", "--by", "invariant"}, folders...)...)
	res.expect(t, exitOK, fmt.Sprintf("%d of %d run records excluded", excludedRuns, judged+excludedRuns), "FAULT_INEFFECTIVE")
	rows, err := csv.NewReader(strings.NewReader(res.stdout)).ReadAll()
	if err != nil {
		t.Fatalf("report is not CSV: %v\n%s", err, res.stdout)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	atoi := func(row []string, name string) int {
		n, err := strconv.Atoi(row[col[name]])
		if err != nil {
			t.Fatalf("column %s: %v", name, err)
		}
		return n
	}
	seen := 0
	withInterval := 0
	for _, row := range rows[1:] {
		if row[col["by"]] != "invariant" {
			continue // the stability rows: each pair ran in both folders
		}
		k := row[col["arm"]] + "/" + row[col["invariant"]]
		w := want[k]
		if w == nil {
			t.Errorf("row %s is not in the run records", k)
			continue
		}
		seen++
		got := counts{atoi(row, "violated"), atoi(row, "preserved"),
			atoi(row, "insufficient_data") + atoi(row, "not_applicable") + atoi(row, "detector_invalid"), atoi(row, "excluded")}
		if got != *w {
			t.Errorf("%s: report says %+v, the records say %+v", k, got, *w)
		}
		if got.violated+got.preserved > 0 {
			withInterval++
			lo, _ := strconv.ParseFloat(row[col["ci95_low"]], 64)
			hi, _ := strconv.ParseFloat(row[col["ci95_high"]], 64)
			rate, _ := strconv.ParseFloat(row[col["rate"]], 64)
			if !(lo <= rate && rate <= hi && hi > lo) {
				t.Errorf("%s: rate %v outside its interval [%v, %v]", k, rate, lo, hi)
			}
		}
	}
	if seen != len(want) || withInterval == 0 {
		t.Errorf("report has %d of %d arm/invariant rows, %d with an interval", seen, len(want), withInterval)
	}

	// The HTML site of both folders: a page per run, each with the
	// evidence's cadence where its window took snapshots.
	site := filepath.Join(t.TempDir(), "site")
	faultline(t, "", append([]string{"report", "--format", "html", "-o", site}, folders...)...).expect(t, exitOK)
	pages := 0
	for _, f := range folders {
		runs, err := record.ReadRuns(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			b, err := os.ReadFile(filepath.Join(site, "runs", record.SafeName(filepath.Base(f))+"--"+record.SafeName(r.RunID)+".html"))
			if err != nil {
				t.Errorf("run %s has no page: %v", r.RunID, err)
				continue
			}
			pages++
			rec, err := record.ReadEvidence(f, r.RunID)
			if err == nil && len(rec.Window) >= 2 && !strings.Contains(string(b), `<tr data-phase="window">`) {
				t.Errorf("run %s's page lacks its window's cadence", r.RunID)
			}
		}
	}
	if pages == 0 {
		t.Error("the site has no run page")
	}

	md := faultline(t, "", append([]string{"report"}, folders...)...)
	md.expect(t, exitOK)
	for _, s := range []string{"## Findings by invariant", "## Applicability table", "## Excluded runs", "| FAULT_INEFFECTIVE |", "% ["} {
		if !strings.Contains(md.stdout, s) {
			t.Errorf("markdown report lacks %q", s)
		}
	}
}

// TestReportOverARepeatedSelftestRun runs the self-test suite with three
// repetitions of each scenario × arm into one folder, then `faultline
// report` over it: the stability tables, each scenario × invariant k of
// n with its interval and the quantities' median and range, beside the
// folder's own summary.md and verdict JUnit saying the same.
func TestReportOverARepeatedSelftestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the self-test suite")
	}
	suite := filepath.Join(t.TempDir(), "selftest.test")
	if out, err := exec.Command("go", "test", "-c", "-o", suite, "../../framework/scenario/selftest").CombinedOutput(); err != nil {
		t.Fatalf("building the self-test suite: %v\n%s", err, out)
	}
	runsDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite, "-ginkgo.label-filter=!slow && !broken", "-ginkgo.no-color", "-faultline.repeat=3")
	cmd.Env = append(os.Environ(), "FAULTLINE_SELFTEST_STATE="+t.TempDir(), "FAULTLINE_REPORTS_DIR="+runsDir)
	if out, err := cmd.CombinedOutput(); ctx.Err() != nil || (err != nil && cmd.ProcessState == nil) {
		t.Fatalf("the self-test did not finish: %v\n%s", err, out)
	}
	folders, err := filepath.Glob(filepath.Join(runsDir, "*-selftest"))
	if err != nil || len(folders) != 1 {
		t.Fatalf("want 1 run folder, have %v (%v)", folders, err)
	}
	stable := "| selftest-verdicts | no-flag-a | 3 of 3 | 3/3 = 100.0% [43.9%, 100.0%] | VIOLATED every time | - | 3 | flags-set: 2 flags [2, 2] (3) |"
	md := faultline(t, "", "report", folders[0])
	md.expect(t, exitOK)
	for _, s := range []string{
		"9 run records from 1 run folder: 6 judged, 3 excluded",
		"flaky (VIOLATED of judged)",
		"## Stability over repetitions",
		"### Findings",
		stable,
		"| selftest-ineffective | no-flag-b | 0 of 0 | - | not judged | FAULT_INEFFECTIVE 3 | 3 | - |",
		"### Null arms (expected PRESERVED every time)",
		"| selftest-verdicts | no-flag-a | 0 of 3 | 0/3 = 0.0% [0.0%, 56.1%] | PRESERVED every time | - | 3 | - |",
	} {
		if !strings.Contains(md.stdout, s) {
			t.Errorf("the report lacks %q:\n%s", s, md.stdout)
		}
	}
	summary, err := os.ReadFile(filepath.Join(folders[0], record.SummaryFile))
	if err != nil || !strings.Contains(string(summary), stable) {
		t.Errorf("summary.md lacks the stability table (%v):\n%s", err, summary)
	}
	vj, err := record.ReadVerdictJUnit(filepath.Join(folders[0], record.VerdictJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	stableCases := 0
	for _, tc := range vj.TestSuites[0].TestCases {
		if tc.Properties.WithName(record.PropInvariant) == "no-flag-a" && tc.Properties.WithName(record.PropArm) == "fault" {
			if tc.Properties.WithName(record.PropStability) != record.Stable || tc.Properties.WithName(record.PropStabilityCount) != "3/3" {
				t.Errorf("%s: stability %q %q", tc.Name, tc.Properties.WithName(record.PropStability), tc.Properties.WithName(record.PropStabilityCount))
			}
			stableCases++
		}
	}
	if stableCases != 3 {
		t.Errorf("%d verdict cases of no-flag-a's fault arm, want one per repetition", stableCases)
	}
}
