package scenario_test

// The self-test suite run with repetitions (-faultline.repeat,
// FAULTLINE_REPEAT): rounds, resuming a repeated folder, a pool sharing
// the repetitions out.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/reports"
)

func repeatFlag(n int) string { return fmt.Sprintf("-%s=%d", scenario.RepeatFlag, n) }

// checkRounds checks that runs (in the order of their records, one lab)
// came in rounds: every repetition-k run before any of repetition k+1,
// each selftest-verdicts fault arm followed by its null arm, and each
// scenario × arm of the filter run once in each of reps repetitions.
func checkRounds(t *testing.T, runs []verdict.Run, pairs []string, reps int) {
	t.Helper()
	seen := map[string]int{}
	for i, r := range runs {
		if i > 0 && r.RepetitionNumber() < runs[i-1].RepetitionNumber() {
			t.Errorf("record %d is repetition %d after one of repetition %d: the rounds are not in order", i+1, r.RepetitionNumber(), runs[i-1].RepetitionNumber())
		}
		if r.Scenario == "selftest-verdicts" && r.Arm == "fault" && (i+1 == len(runs) || runs[i+1].Scenario != r.Scenario || runs[i+1].Arm != "null") {
			t.Errorf("record %d, the fault arm of %s, is not followed by its null arm", i+1, r.Scenario)
		}
		if !strings.Contains(r.RunID, fmt.Sprintf("-rep%d-", r.RepetitionNumber())) {
			t.Errorf("run %s does not name its repetition %d", r.RunID, r.RepetitionNumber())
		}
		seen[fmt.Sprintf("%s/%s/%d", r.Scenario, r.Arm, r.Repetition)]++
	}
	var want []string
	for _, p := range pairs {
		for k := 1; k <= reps; k++ {
			want = append(want, fmt.Sprintf("%s/%d", p, k))
		}
	}
	slices.Sort(want)
	if got := keys(seen); !slices.Equal(got, want) {
		t.Errorf("runs %v, want %v", got, want)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
}

var resumePairs = []string{"selftest-ineffective/fault", "selftest-verdicts/fault", "selftest-verdicts/null"}

// Every selected scenario × arm runs -faultline.repeat times into one run
// folder, in rounds; resumed with more repetitions the folder gains only
// the new rounds, and resumed with fewer it is refused before anything is
// touched.
func TestSelftestRepeatsEachPairInRounds(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := newSelftest(t, state, nil, resumeFilter, repeatFlag(3))
	if code := s.run(t); code != 1 {
		t.Fatalf("exit %d, want 1 (the VIOLATED scenario fails its spec)\n%s", code, s.out.String())
	}
	runs := s.runs(t)
	checkRounds(t, runs, resumePairs, 3)
	if st := memState(t, state); st.Resets != 9 {
		t.Errorf("memlab reset %d times for 9 runs", st.Resets)
	}
	if !strings.Contains(s.out.String(), "faultline: 9 runs, 3 repetitions of each scenario × arm") {
		t.Errorf("the suite's last line does not say it repeated:\n%s", s.out.String())
	}
	// Ginkgo's JUnit names each spec's round, and labels it.
	folder := s.folder(t)
	gj, err := record.ReadVerdictJUnit(filepath.Join(folder, record.GinkgoJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	rounds := map[string]int{}
	for _, tc := range gj.TestSuites[0].TestCases {
		if tc.Status != "passed" && tc.Status != "failed" {
			continue
		}
		for k := 1; k <= 3; k++ {
			if strings.HasPrefix(tc.Name, fmt.Sprintf("[It] repetition %d of 3 ", k)) && strings.Contains(tc.Name, fmt.Sprintf("repetition:%d", k)) {
				rounds[fmt.Sprint(k)]++
			}
		}
	}
	if len(rounds) != 3 || rounds["1"] != 3 || rounds["2"] != 3 || rounds["3"] != 3 {
		t.Errorf("Ginkgo JUnit's specs by round: %v, want 3 in each of 3", rounds)
	}

	// A fourth round added to the folder: only its runs run.
	more := newSelftest(t, state, []string{scenario.EnvResume + "=" + folder}, resumeFilter, repeatFlag(4))
	more.run(t)
	all := more.runsIn(t, folder)
	if len(all) != 12 {
		t.Fatalf("%d records after adding a fourth repetition, want 12\n%s", len(all), more.out.String())
	}
	checkRounds(t, all, resumePairs, 4)

	// Resumed with fewer repetitions than the folder holds: refused.
	resets := memState(t, state).Resets
	fewer := newSelftest(t, state, []string{scenario.EnvResume + "=" + folder}, resumeFilter, repeatFlag(2))
	if code := fewer.run(t); code == 0 {
		t.Fatalf("a resume with fewer repetitions than the folder holds must be refused\n%s", fewer.out.String())
	}
	if !strings.Contains(fewer.out.String(), "it holds runs of repetition 4") || !strings.Contains(fewer.out.String(), "-faultline.repeat=4") || !strings.Contains(fewer.out.String(), "nothing was touched") {
		t.Errorf("the refusal does not say why and how:\n%s", fewer.out.String())
	}
	if completeRecords(folder) != 12 || memState(t, state).Resets != resets {
		t.Errorf("the refused resume touched the lab or the folder")
	}
}

// FAULTLINE_REPEAT sets the count, the flag wins over it, and a count that
// is not a whole number from 1 is refused before the lab or a run folder
// is touched.
func TestSelftestRepeatCountFromFlagOrEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  []string
		args []string
		runs int
		want string
	}{
		{"environment", []string{scenario.EnvRepeat + "=2"}, nil, 2, ""},
		{"the flag wins", []string{scenario.EnvRepeat + "=5"}, []string{repeatFlag(3)}, 3, ""},
		{"zero", []string{scenario.EnvRepeat + "=0"}, nil, 0, "$FAULTLINE_REPEAT=0: give how many times each scenario × arm runs, a whole number from 1"},
		{"not a number", nil, []string{"-" + scenario.RepeatFlag + "=three"}, 0, "-faultline.repeat=three: give how many times"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			state := filepath.Join(t.TempDir(), "state")
			s := newSelftest(t, state, c.env, append([]string{"-ginkgo.focus=selftest-ineffective"}, c.args...)...)
			code := s.run(t)
			if c.want != "" {
				if code == 0 || !strings.Contains(s.out.String(), c.want) || !strings.Contains(s.out.String(), "nothing was touched") {
					t.Errorf("exit %d; want a refusal saying %q\n%s", code, c.want, s.out.String())
				}
				if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the lab's state dir was touched: %v", err)
				}
				if des, _ := os.ReadDir(s.reports); len(des) != 0 {
					t.Errorf("a run folder was made: %v", des)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, s.out.String())
			}
			if runs := s.runs(t); len(runs) != c.runs || runs[len(runs)-1].Repetition != c.runs {
				t.Errorf("%d runs, want %d repetitions", len(runs), c.runs)
			}
		})
	}
}

// stabilityLines are the lines of the stability tables the reports print
// (summary.md, `faultline report`), sorted: the order of their rows
// follows the order the runs came in, which Ginkgo shuffles by its seed.
func stabilityLines(runs []verdict.Run) []string {
	out := strings.Split(reports.StabilityMarkdown(reports.Stability(runs)), "\n")
	slices.Sort(out)
	return out
}

// repeatedOutcomes are outcomes, then each run's repetition and run
// verdict, sorted.
func repeatedOutcomes(runs []verdict.Run) []string {
	var reps []string
	for _, r := range runs {
		reps = append(reps, fmt.Sprintf("%s [%s] repetition %d %s", r.Scenario, r.Arm, r.RepetitionNumber(), r.RunVerdict))
	}
	slices.Sort(reps)
	return append(outcomes(runs), reps...)
}

// A suite with repetitions killed with SIGKILL in its second round,
// healed from the ledger on the next start and resumed with the same
// repetitions, leaves the records, and so the stability tables, of an
// uncut run: the repetitions recorded before the kill are kept, the cut
// one and those never started run, each once.
func TestSelftestRepeatedRunResumedAfterKill9GivesTheTablesOfAnUncutRun(t *testing.T) {
	t.Parallel()
	uncut := newSelftest(t, t.TempDir(), nil, resumeFilter, repeatFlag(3))
	uncut.run(t)
	uncutRuns := uncut.runs(t)
	want, wantTables := repeatedOutcomes(uncutRuns), stabilityLines(uncutRuns)
	if tables := strings.Join(wantTables, "\n"); !strings.Contains(tables, "| selftest-verdicts | no-flag-a | 3 of 3 | 3/3 = 100.0% [43.9%, 100.0%] | VIOLATED every time | - | 3 | flags-set: 2 flags [2, 2] (3) |") {
		t.Fatalf("the uncut run's stability tables lack selftest-verdicts' no-flag-a:\n%s", tables)
	}

	state := t.TempDir()
	folder, flag := killMidRun(t, state, 4, resumeFilter, repeatFlag(3))
	before, err := record.ReadRuns(folder)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < 4 || len(before) >= 9 {
		t.Fatalf("the killed suite recorded %d runs, want 4 to 8", len(before))
	}
	t.Logf("killed with %d runs recorded and flag %s in the lab", len(before), flag)
	resumed := newSelftest(t, state, []string{scenario.EnvResume + "=" + folder}, resumeFilter, repeatFlag(3))
	resumed.run(t)
	after := resumed.runsIn(t, folder)
	if got := repeatedOutcomes(after); !slices.Equal(got, want) {
		t.Errorf("resumed records:\n  %s\nuncut records:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if got := stabilityLines(after); !slices.Equal(got, wantTables) {
		t.Errorf("resumed stability:\n  %s\nuncut:\n  %s", strings.Join(got, "\n  "), strings.Join(wantTables, "\n  "))
	}
	for i, r := range before {
		if after[i].RunID != r.RunID {
			t.Errorf("record %d was %s before the kill, %s after the resume", i+1, r.RunID, after[i].RunID)
		}
	}
	if es := ledgerEntries(t, state); len(es) != 0 || memState(t, state).Flags[flag] {
		t.Errorf("fault left behind: ledger %v, flags %v", es, memState(t, state).Flags)
	}
}

// Over a pool of two labs the repetitions are shared out: every
// repetition of every pair runs once, on either lab, both labs work, and
// each lab is reset once per run it records.
func TestSelftestRepetitionsOverAPool(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	labA, labB := filepath.Join(root, "lab-a"), filepath.Join(root, "lab-b")
	reports := t.TempDir()
	env := []string{scenario.EnvLabs + "=" + labA + "," + labB, "FAULTLINE_REPORTS_DIR=" + reports, scenario.EnvRepeat + "=3"}
	code, out := poolRun(t, "2", env, "--label-filter=!slow && !broken")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the VIOLATED scenario fails its spec)\n%s", code, out)
	}
	s := &selftestRun{reports: reports}
	runs := s.runs(t)
	seen := map[string]int{}
	byLab := map[string]int{}
	for _, r := range runs {
		seen[fmt.Sprintf("%s/%s/%d", r.Scenario, r.Arm, r.Repetition)]++
		byLab[r.Lab.Name]++
	}
	if len(runs) != 9 || len(seen) != 9 {
		t.Errorf("%d runs of %d distinct repetitions, want 9 of 9: %v", len(runs), len(seen), seen)
	}
	for _, l := range []struct{ name, dir string }{{"lab-a", labA}, {"lab-b", labB}} {
		if byLab[l.name] == 0 {
			t.Errorf("lab %s ran nothing\n%s", l.name, out)
		}
		if st := memState(t, l.dir); st.Resets != byLab[l.name] {
			t.Errorf("lab %s reset %d times, %d records name it", l.name, st.Resets, byLab[l.name])
		}
	}
}

// A suite whose test calls Ginkgo's RunSpecs, not scenario.RunSuite, has
// no spec of its table added: it fails as its tree is built, naming the
// fix, rather than passing with nothing run.
func TestASuiteThatCallsRunSpecsFailsNamingRunSuite(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "runspecs.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, "./selftest/runspecs").CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}
	state := filepath.Join(t.TempDir(), "state")
	s := newSelftest(t, state, nil)
	s.cmd.Path, s.cmd.Args[0] = bin, bin
	if code := s.run(t); code == 0 {
		t.Fatalf("exit 0, want a failure\n%s", s.out.String())
	}
	if flat := strings.Join(strings.Fields(s.out.String()), " "); !strings.Contains(flat, "call scenario.RunSuite in the suite's test function instead of Ginkgo's RunSpecs") {
		t.Errorf("the failure does not name the fix:\n%s", s.out.String())
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lab was touched: %v", err)
	}
}
