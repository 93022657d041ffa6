package scenario_test

// The self-test suite over a pool of memlabs, each Ginkgo process owning
// one (FAULTLINE_LABS lists their state dirs; the self-test names each lab
// after its dir), run as users run it: the ginkgo command with --procs.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
)

var ginkgoCLI struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// ginkgoCommand is the ginkgo command built from the module's own Ginkgo,
// once for every test that needs it.
func ginkgoCommand(t *testing.T) string {
	t.Helper()
	ginkgoCLI.once.Do(func() {
		// Beside the suite's binary, in the folder TestMain removes.
		ginkgoCLI.path = filepath.Join(filepath.Dir(selftestBinary), "ginkgo")
		ginkgoCLI.out, ginkgoCLI.err = exec.Command("go", "build", "-o", ginkgoCLI.path, "github.com/onsi/ginkgo/v2/ginkgo").CombinedOutput()
	})
	if ginkgoCLI.err != nil {
		t.Fatalf("building the ginkgo command: %v\n%s", ginkgoCLI.err, ginkgoCLI.out)
	}
	return ginkgoCLI.path
}

// poolRun runs the self-test suite under `ginkgo --procs=N` with the
// environment and ginkgo flags given, and returns its exit code and output.
// It hands ginkgo the suite's test binary TestMain built: ginkgo compiles
// a package into the package's own directory, so runs of it side by side
// would write over each other's binary.
func poolRun(t *testing.T, procs string, env []string, flags ...string) (int, string) {
	t.Helper()
	args := append([]string{"-p", "--procs=" + procs, "--no-color"}, flags...)
	cmd := exec.Command(ginkgoCommand(t), append(args, selftestBinary)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	default:
		t.Fatalf("running ginkgo: %v\n%s", err, out)
		return -1, ""
	}
}

// The suite over two memlabs with two processes: one run folder holding
// every record, each record naming the lab that ran it (the lab whose
// resets it counts), both labs used, runs on the two labs overlapping in
// time (so the specs were not Serial), each lab's heal ledger its own and
// empty, and the JUnits and summary written once from all the records.
func TestSelftestOverAPoolOfTwoLabs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	labA, labB := filepath.Join(root, "lab-a"), filepath.Join(root, "lab-b")
	reports := t.TempDir()
	env := []string{
		scenario.EnvLabs + "=" + labA + "," + labB,
		"FAULTLINE_REPORTS_DIR=" + reports,
		"FAULTLINE_SELFTEST_LINGERING=1", "FAULTLINE_SELFTEST_HAZARD_AT_HEAL=1",
		"FAULTLINE_SELFTEST_TWO_COPIES=1", "FAULTLINE_SELFTEST_SEEN_ONCE=1",
	}
	code, out := poolRun(t, "2", env, "--label-filter=!slow && !broken")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the VIOLATED scenario fails its spec)\n%s", code, out)
	}
	s := &selftestRun{reports: reports}
	dir := s.folder(t)
	runs := s.runs(t)
	want := []string{
		"selftest-effect-seen-once/fault", "selftest-hazard-at-heal/fault",
		"selftest-ineffective/fault", "selftest-lingering/fault",
		"selftest-two-copies-before-fault/fault", "selftest-verdicts/fault", "selftest-verdicts/null",
	}
	if got := scenarioArms(runs); !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v\n%s", got, want, out)
	}

	byLab := map[string][]verdict.Run{}
	for _, r := range runs {
		byLab[r.Lab.Name] = append(byLab[r.Lab.Name], r)
	}
	for _, l := range []struct{ name, dir string }{{"lab-a", labA}, {"lab-b", labB}} {
		st := memState(t, l.dir)
		if len(byLab[l.name]) == 0 {
			t.Errorf("lab %s ran nothing: the pool's second lab was idle\n%s", l.name, out)
		}
		// Every run resets its lab first: a record names the lab it ran
		// on when that lab counts one reset per record naming it.
		if st.Resets != len(byLab[l.name]) {
			t.Errorf("lab %s was reset %d times, and %d records name it", l.name, st.Resets, len(byLab[l.name]))
		}
		for f, on := range st.Flags {
			if on && f != memlab.PreexistingFlag {
				t.Errorf("lab %s was left with flag %s set", l.name, f)
			}
		}
		if es := ledgerEntries(t, l.dir); len(es) != 0 {
			t.Errorf("lab %s's ledger not empty: %v", l.name, es)
		}
	}
	if len(byLab) != 2 {
		t.Errorf("records name labs %v, want lab-a and lab-b", keys(byLab))
	}
	overlap := false
	for _, a := range byLab["lab-a"] {
		for _, b := range byLab["lab-b"] {
			if a.Started.Before(b.Ended) && b.Started.Before(a.Ended) {
				overlap = true
			}
		}
	}
	if !overlap {
		t.Errorf("no run on lab-a overlapped one on lab-b in time: the specs ran one at a time, as Serial specs do\n%s", out)
	}

	// Ginkgo's JUnit of all processes, the verdict JUnit of every record.
	gj, err := record.ReadVerdictJUnit(filepath.Join(dir, record.GinkgoJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	passedOrFailed := 0
	for _, ts := range gj.TestSuites {
		for _, tc := range ts.TestCases {
			if strings.Contains(tc.Name, "selftest-") && (tc.Status == "passed" || tc.Status == "failed") {
				passedOrFailed++
			}
		}
	}
	if passedOrFailed != len(want) {
		t.Errorf("junit.xml holds %d specs that ran, want %d (every process's)", passedOrFailed, len(want))
	}
	vj, err := record.ReadVerdictJUnit(filepath.Join(dir, record.VerdictJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	cases := 0
	for _, r := range runs {
		cases += len(r.Judgements)
	}
	if vj.Tests != cases {
		t.Errorf("verdicts-junit.xml has %d cases, the records %d judgements", vj.Tests, cases)
	}
	summary, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil || !strings.Contains(string(summary), "lab-a") || !strings.Contains(string(summary), "lab-b") {
		t.Errorf("summary.md does not name both labs (%v):\n%s", err, summary)
	}
	for _, r := range runs {
		if _, err := record.ReadEvidence(dir, r.RunID); err != nil {
			t.Errorf("run %s on %s: %v", r.RunID, r.Lab.Name, err)
		}
	}
	if !strings.Contains(out, "lab pool ($FAULTLINE_LABS): process 1: lab-a, process 2: lab-b") {
		t.Errorf("the suite did not say which process owns which lab:\n%s", out)
	}

	// Resumed over the same pool: every pair finished, nothing runs on
	// either lab, nothing is appended, no folder is made.
	resets := memState(t, labA).Resets + memState(t, labB).Resets
	code, out = poolRun(t, "2", append(env, scenario.EnvResume+"="+dir), "--label-filter=!slow && !broken")
	if code != 0 {
		t.Fatalf("resume over the pool: exit %d\n%s", code, out)
	}
	if n := completeRecords(dir); n != len(want) {
		t.Errorf("%d records after resuming with nothing to run, want %d", n, len(want))
	}
	if after := memState(t, labA).Resets + memState(t, labB).Resets; after != resets {
		t.Errorf("the labs were reset %d times by a resume with nothing to run", after-resets)
	}
	if des, _ := os.ReadDir(reports); len(des) != 1 {
		t.Errorf("the resume made a run folder: %v", des)
	}
}

// Each lab of the pool keeps its own heal ledger, in its state dir, and
// process 1 heals every one before any spec runs: here the second lab's,
// left by a run killed on it mid-window, though no spec of process 1 runs
// there.
func TestSelftestPoolHealsEveryLabsLedgerFirst(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// Named memlab, as the killed single-lab run named its lab in the
	// entry it left.
	labA, labB := filepath.Join(root, "lab-a"), filepath.Join(root, memlab.Name)
	_, flag := killMidRun(t, labB, 1, resumeFilter)
	if len(ledgerEntries(t, labB)) != 1 || !memState(t, labB).Flags[flag] {
		t.Fatalf("the killed run left no fault behind")
	}
	reports := t.TempDir()
	env := []string{scenario.EnvLabs + "=" + labA + "," + labB, "FAULTLINE_REPORTS_DIR=" + reports}
	code, out := poolRun(t, "2", env, "--focus=selftest-ineffective")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if es := ledgerEntries(t, labB); len(es) != 0 {
		t.Errorf("lab %s's ledger still holds %v", memlab.Name, es)
	}
	if memState(t, labB).Flags[flag] {
		t.Errorf("flag %s left set on lab %s", flag, memlab.Name)
	}
	if es := ledgerEntries(t, labA); len(es) != 0 {
		t.Errorf("lab-a's ledger holds %v", es)
	}
	if !strings.Contains(out, "heal ledger on start") {
		t.Errorf("the start did not report the heal:\n%s", out)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Pools that cannot run are refused on process 1 before any lab is
// touched and before a run folder is made, each saying why.
func TestSelftestRefusesPoolsThatCannotRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := func(name string) string { return filepath.Join(root, name) }
	cases := []struct {
		name  string
		procs string
		env   []string
		flags []string
		want  []string
	}{
		{"more processes than labs", "2", []string{scenario.EnvLabs + "=" + dir("only")}, nil,
			[]string{"2 ginkgo processes but the lab pool ($FAULTLINE_LABS) has 1 labs", "--procs=1"}},
		{"a lab and a pool", "2", []string{scenario.EnvLabs + "=" + dir("x") + "," + dir("y"), scenario.EnvLab + "=lab11"}, nil,
			[]string{"both FAULTLINE_LAB and FAULTLINE_LABS are set"}},
		{"one lab twice", "2", []string{scenario.EnvLabs + "=" + dir("x") + "," + dir("x")}, nil,
			[]string{"entry 2 (" + dir("x") + ") is entry 1 again"}},
		{"two names of one lab", "2", []string{scenario.EnvLabs + "=" + dir("x") + "," + filepath.Join(root, "other", "x")}, nil,
			[]string{"labs 1 and 2 of the pool are both lab x"}},
		{"a shape one lab lacks", "2", []string{scenario.EnvLabs + "=" + dir("wide-a") + "," + dir("narrow-b"), "FAULTLINE_SELFTEST_WIDE=1"}, []string{"--focus=selftest-wide"},
			[]string{"cannot run these specs", "spec selftest-wide [fault] needs what 1 of the 2 labs lack", "lab narrow-b (ginkgo process 2)", "does not have the shape wide: it has no wide host"}},
		{"not a lab", "2", []string{scenario.EnvLabs + "=" + dir("p") + "," + dir("q"), "FAULTLINE_SELFTEST_NOT_A_LAB=1"}, nil,
			[]string{"lab 1 of the pool (" + dir("p") + ", for ginkgo process 1)", "lab 2 of the pool (" + dir("q") + ", for ginkgo process 2)", "`lab: true`"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reports := t.TempDir()
			env := append([]string{"FAULTLINE_REPORTS_DIR=" + reports}, c.env...)
			code, out := poolRun(t, c.procs, env, append(c.flags, "--focus=selftest-ineffective|selftest-wide")...)
			if code == 0 {
				t.Fatalf("exit 0, want a refusal\n%s", out)
			}
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range c.want {
				if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if des, _ := os.ReadDir(reports); len(des) != 0 {
				t.Errorf("a refused pool made a run folder: %v", des)
			}
			for _, n := range []string{"only", "x", "y", "wide-a", "narrow-b", "p", "q"} {
				if (&memlabProbe{dir(n)}).touched() {
					t.Errorf("lab %s was touched", n)
				}
			}
		})
	}
}

type memlabProbe struct{ dir string }

func (p *memlabProbe) touched() bool { return memlab.Open(p.dir, true).Touched() }

// The shapes checked are those of the specs that will run: a pool whose
// labs differ in a shape no selected spec needs runs.
func TestSelftestPoolChecksOnlyTheSpecsThatWillRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	reports := t.TempDir()
	env := []string{
		scenario.EnvLabs + "=" + filepath.Join(root, "wide-a") + "," + filepath.Join(root, "narrow-b"),
		"FAULTLINE_SELFTEST_WIDE=1", "FAULTLINE_REPORTS_DIR=" + reports,
	}
	code, out := poolRun(t, "2", env, "--focus=selftest-ineffective")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	s := &selftestRun{reports: reports}
	if got := scenarioArms(s.runs(t)); !slices.Equal(got, []string{"selftest-ineffective/fault"}) {
		t.Errorf("ran %v", got)
	}
}
