package scenario_test

// These tests run the self-test suite (./selftest) as a subprocess against
// memlab and assert on what it leaves behind: the run folder's JUnit and
// JSONL files, memlab's state file and the heal ledger. Never on log text,
// except where the thing under test is the error message itself.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
)

var selftestBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "faultline-selftest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	selftestBinary = filepath.Join(dir, "selftest.test")
	build := exec.Command("go", "test", "-c", "-o", selftestBinary, "./selftest")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the self-test suite: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// selftestRun is one invocation of the self-test suite.
type selftestRun struct {
	state, reports string
	cmd            *exec.Cmd
	out            bytes.Buffer
}

func newSelftest(t *testing.T, state string, env []string, args ...string) *selftestRun {
	t.Helper()
	s := &selftestRun{state: state, reports: t.TempDir()}
	s.cmd = exec.Command(selftestBinary, append([]string{"-test.v", "-ginkgo.no-color"}, args...)...)
	s.cmd.Env = append(os.Environ(), "FAULTLINE_SELFTEST_STATE="+state, "FAULTLINE_REPORTS_DIR="+s.reports)
	s.cmd.Env = append(s.cmd.Env, env...)
	s.cmd.Stdout, s.cmd.Stderr = &s.out, &s.out
	return s
}

// run runs the suite to the end and returns its exit code.
func (s *selftestRun) run(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(t, err, s)
	case <-ctx.Done():
		s.cmd.Process.Kill()
		<-done
		t.Fatalf("self-test did not finish:\n%s", s.out.String())
		return -1
	}
}

func exitCode(t *testing.T, err error, s *selftestRun) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		t.Fatalf("running self-test: %v\n%s", err, s.out.String())
		return -1
	}
}

// folder is the one run folder the invocation made.
func (s *selftestRun) folder(t *testing.T) string {
	t.Helper()
	des, err := os.ReadDir(s.reports)
	if err != nil || len(des) != 1 {
		t.Fatalf("want one run folder in %s, got %v (%v)\n%s", s.reports, des, err, s.out.String())
	}
	return filepath.Join(s.reports, des[0].Name())
}

func (s *selftestRun) runs(t *testing.T) []verdict.Run {
	t.Helper()
	runs, err := record.ReadRuns(s.folder(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, s.out.String())
	}
	return runs
}

func memState(t *testing.T, dir string) memlab.State {
	t.Helper()
	st, err := memlab.Open(dir, true).Load()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ledgerEntries(t *testing.T, dir string) []ledger.Entry {
	t.Helper()
	led, err := ledger.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	es, err := led.Entries()
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func scenarioArms(runs []verdict.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.Scenario+"/"+r.Arm)
	}
	sort.Strings(out)
	return out
}

var sixKinds = []string{"PRESERVED", "VIOLATED", "INSUFFICIENT_DATA", "NOT_APPLICABLE", "DETECTOR_INVALID", "FAULT_INEFFECTIVE"}

func missingKinds(seen map[string]bool) []string {
	var missing []string
	for _, k := range sixKinds {
		if !seen[k] {
			missing = append(missing, k)
		}
	}
	return missing
}

func TestSelftestProducesEveryVerdictInEveryFile(t *testing.T) {
	t.Parallel()
	s := newSelftest(t, t.TempDir(), nil, "-ginkgo.label-filter=!slow")
	if code := s.run(t); code != 1 {
		t.Fatalf("exit %d, want 1 (the VIOLATED scenario fails its spec)\n%s", code, s.out.String())
	}
	dir := s.folder(t)

	// verdicts.jsonl
	runs := s.runs(t)
	if got := scenarioArms(runs); !slices.Equal(got, []string{"selftest-ineffective/fault", "selftest-inject-fails/fault", "selftest-verdicts/fault", "selftest-verdicts/null"}) {
		t.Fatalf("runs %v", got)
	}
	seen := map[string]bool{}
	byRun := map[string]verdict.Run{}
	for _, r := range runs {
		byRun[r.Scenario+"/"+r.Arm] = r
		seen[string(r.RunVerdict)] = true
		for _, j := range r.Judgements {
			seen[string(j.Verdict)] = true
		}
		if r.ConfigHash == "" || r.GitCommit == "" || r.Lab.Name != memlab.Name || r.Suite != "selftest" {
			t.Errorf("run %s lacks provenance: %+v", r.RunID, r)
		}
		wantRole := verdict.RoleFinding
		if r.Arm == "null" {
			wantRole = verdict.RoleNull
		}
		if r.Role != wantRole || len(r.ControlOf) != 0 {
			t.Errorf("run %s: role %q, controlOf %v; want %s and none", r.RunID, r.Role, r.ControlOf, wantRole)
		}
		if len(r.Load) != 2 || r.Load[0].At.After(r.Load[1].At) {
			t.Errorf("run %s: load %+v, want the load average at start and at end", r.RunID, r.Load)
		}
		if judged := r.RunVerdict != verdict.RunAborted; judged != (r.Effect != nil) {
			t.Errorf("run %s (%s): effect coverage %+v", r.RunID, r.RunVerdict, r.Effect)
		}
	}
	if m := missingKinds(seen); len(m) > 0 {
		t.Errorf("verdicts.jsonl lacks %v", m)
	}
	want := map[string]verdict.Verdict{"no-flag-a": verdict.Violated, "also-no-flag-a": verdict.Violated, "no-flag-b": verdict.Preserved, "dark-source": verdict.InsufficientData,
		"unreachable": verdict.NotApplicable, "no-preexisting": verdict.DetectorInvalid, "healed-a": verdict.Preserved}
	fr := byRun["selftest-verdicts/fault"]
	if fr.RunVerdict != verdict.RunJudged || fr.SpecState != "failed" || len(fr.Judgements) != len(want) {
		t.Errorf("fault arm run %+v", fr)
	}
	for _, j := range fr.Judgements {
		if j.Verdict != want[j.Invariant] {
			t.Errorf("fault arm: %s is %s, want %s (%s)", j.Invariant, j.Verdict, want[j.Invariant], j.Reason)
		}
	}
	nr := byRun["selftest-verdicts/null"]
	for _, j := range nr.Judgements {
		if strings.HasSuffix(j.Invariant, "no-flag-a") && j.Verdict != verdict.Preserved {
			t.Errorf("null arm must preserve no-flag-a: %+v", j)
		}
	}
	if nr.RunVerdict != verdict.RunJudged || nr.SpecState != "passed" {
		t.Errorf("null arm run %s/%s, want JUDGED/passed", nr.RunVerdict, nr.SpecState)
	}
	if ir := byRun["selftest-ineffective/fault"]; ir.RunVerdict != verdict.FaultIneffective || ir.Counted() {
		t.Errorf("ineffective run %+v", ir)
	}
	ar := byRun["selftest-inject-fails/fault"]
	if ar.RunVerdict != verdict.RunAborted || !strings.Contains(ar.RunReason, "inject failed") || ar.SpecState != "failed" {
		t.Errorf("failed inject: run %s (%s), spec %s", ar.RunVerdict, ar.RunReason, ar.SpecState)
	}
	for _, j := range ar.Judgements {
		if j.Verdict != verdict.InsufficientData {
			t.Errorf("a run whose inject failed must not claim %s for %s", j.Verdict, j.Invariant)
		}
	}

	// verdicts-junit.xml: one case per run × invariant.
	vj, err := record.ReadVerdictJUnit(filepath.Join(dir, record.VerdictJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	seen = map[string]bool{}
	cases, failures := 0, 0
	for _, tc := range vj.TestSuites[0].TestCases {
		cases++
		seen[tc.Properties.WithName(record.PropVerdict)] = true
		seen[tc.Properties.WithName(record.PropRunVerdict)] = true
		if tc.Failure != nil {
			failures++
			if !strings.HasSuffix(tc.Properties.WithName(record.PropInvariant), "no-flag-a") || tc.Properties.WithName(record.PropArm) != "fault" {
				t.Errorf("unexpected failure %s", tc.Name)
			}
		}
	}
	if cases != 7+7+2+2 || failures != 2 {
		t.Errorf("verdict JUnit: %d cases, %d failures; want 18, 2", cases, failures)
	}
	if m := missingKinds(seen); len(m) > 0 {
		t.Errorf("verdicts-junit.xml lacks %v", m)
	}

	// junit.xml: Ginkgo's own, with the verdicts as spec properties.
	gj, err := record.ReadVerdictJUnit(filepath.Join(dir, record.GinkgoJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	seen = map[string]bool{}
	specs, listed := 0, false
	for _, tc := range gj.TestSuites[0].TestCases {
		if tc.Properties == nil {
			continue
		}
		specs++
		// One violation must not hide another: the spec fails once,
		// naming both.
		if strings.Contains(tc.Name, "selftest-verdicts [fault]") {
			listed = true
			if tc.Failure == nil || !strings.Contains(tc.Failure.Message, "2 safety invariant(s) VIOLATED") ||
				!strings.Contains(tc.Failure.Message, "invariant no-flag-a (safety)") || !strings.Contains(tc.Failure.Message, "invariant also-no-flag-a (safety)") {
				t.Errorf("the failing spec must list every violation: %+v", tc.Failure)
			}
		}
		for _, p := range tc.Properties.Properties {
			if strings.HasPrefix(p.Name, "verdict ") || p.Name == "run verdict" {
				var v string
				if err := json.Unmarshal([]byte(p.Value), &v); err != nil {
					t.Errorf("property %s=%s: %v", p.Name, p.Value, err)
				}
				seen[v] = true
			}
		}
	}
	if !listed {
		t.Error("Ginkgo JUnit has no case for selftest-verdicts [fault]")
	}
	if specs != 4 || gj.TestSuites[0].Failures != 2 {
		t.Errorf("Ginkgo JUnit: %d specs with verdicts, %d failures; want 4, 2", specs, gj.TestSuites[0].Failures)
	}
	if m := missingKinds(seen); len(m) > 0 {
		t.Errorf("junit.xml lacks %v", m)
	}

	// The It of the fault arm failed; heal still ran and the ledger is empty.
	st := memState(t, s.state)
	if st.Flags["a"] || st.Flags["c"] || st.Flags["f"] {
		t.Errorf("faults left in the lab: %v", st.Flags)
	}
	if i, j := slices.Index(st.Log, "inject a"), slices.Index(st.Log, "heal a"); i < 0 || j < i {
		t.Errorf("heal after the failed It did not run: %v", st.Log)
	}
	if i, j := slices.Index(st.Log, "inject f"), slices.Index(st.Log, "heal f"); i < 0 || j < i {
		t.Errorf("heal after the failed inject did not run: %v", st.Log)
	}
	if es := ledgerEntries(t, s.state); len(es) != 0 {
		t.Errorf("ledger not empty: %v", es)
	}

	// Evidence of every run, readable, with baseline, window and final.
	for _, r := range runs {
		f, err := os.Open(filepath.Join(dir, record.EvidenceDir, record.SafeName(r.RunID)+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := evidence.ReadJSONL(f)
		f.Close()
		judged := r.RunVerdict != verdict.RunAborted
		if err != nil || rec.Baseline == nil || judged != (len(rec.Window) > 0) || judged != (rec.Final != nil) || len(rec.Timeline.OfKind("fault-healed")) != 1 {
			t.Errorf("evidence of %s: %v (baseline %v, %d window, final %v, %d heal events)", r.RunID, err, rec.Baseline != nil, len(rec.Window), rec.Final != nil, len(rec.Timeline.OfKind("fault-healed")))
		}
	}
	summary, err := os.ReadFile(filepath.Join(dir, record.SummaryFile))
	if err != nil || !bytes.Contains(summary, []byte("| memlab-flag | unreachable |")) {
		t.Errorf("summary lacks the applicability table: %v", err)
	}
}

func TestSelftestFocusRunsExactlyOneScenario(t *testing.T) {
	t.Parallel()
	s := newSelftest(t, t.TempDir(), nil, "-ginkgo.focus=selftest-ineffective")
	if code := s.run(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.out.String())
	}
	if got := scenarioArms(s.runs(t)); !slices.Equal(got, []string{"selftest-ineffective/fault"}) {
		t.Errorf("focus ran %v", got)
	}
}

// client-go's lines go to the run folder's client-go.log from the start,
// the lab's check included, and never to the terminal. The suite logs one
// through klog while it checks the lab (the line is fixed in the suite).
func TestSelftestClientLinesGoToTheRunFolder(t *testing.T) {
	t.Parallel()
	const line = "selftest: a client-go line while the lab is checked"
	s := newSelftest(t, t.TempDir(), nil, "-ginkgo.focus=selftest-ineffective")
	if code := s.run(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.out.String())
	}
	if strings.Contains(s.out.String(), line) {
		t.Errorf("the client line reached the terminal:\n%s", s.out.String())
	}
	b, err := os.ReadFile(filepath.Join(s.folder(t), scenario.ClientLogName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), line) {
		t.Errorf("%s lacks the line logged while the lab was checked:\n%s", scenario.ClientLogName, b)
	}
}

func TestSelftestLabelFilterSelectsTheRightSet(t *testing.T) {
	t.Parallel()
	for filter, want := range map[string][]string{
		"arm:null":                    {"selftest-verdicts/null"},
		"paper:selftest && arm:fault": {"selftest-ineffective/fault", "selftest-verdicts/fault"},
		"ci":                          {"selftest-verdicts/fault", "selftest-verdicts/null"},
		"fault:memlab-flag && !slow":  {"selftest-ineffective/fault", "selftest-inject-fails/fault", "selftest-verdicts/fault", "selftest-verdicts/null"},
	} {
		s := newSelftest(t, t.TempDir(), nil, "-ginkgo.label-filter="+filter)
		s.run(t)
		if got := scenarioArms(s.runs(t)); !slices.Equal(got, want) {
			t.Errorf("label filter %q ran %v, want %v", filter, got, want)
		}
	}
}

// startLongWindow starts the long-window scenario and waits until its fault
// is in the lab and in the ledger.
func startLongWindow(t *testing.T, state string) *selftestRun {
	t.Helper()
	s := newSelftest(t, state, []string{"FAULTLINE_SELFTEST_LONG_WINDOW=2m"}, "-ginkgo.focus=selftest-long-window")
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := memlab.Open(state, true).Load()
		if err == nil && st.Flags["w"] && len(ledgerEntries(t, state)) == 1 {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the long-window fault never took hold\n%s", s.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSelftestHealsOnSignalDuringTheWindow(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			healsOnSignal(t, sig)
		})
	}
}

func healsOnSignal(t *testing.T, sig syscall.Signal) {
	state := t.TempDir()
	s := startLongWindow(t, state)
	// The fault is in; let the window begin (it is two minutes long).
	time.Sleep(300 * time.Millisecond)
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(t, err, s); code == 0 {
			t.Errorf("an interrupted suite must not exit 0\n%s", s.out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the suite did not stop after %s\n%s", sig, s.out.String())
	}
	st := memState(t, state)
	if st.Flags["w"] || !slices.Contains(st.Log, "heal w") {
		t.Errorf("not healed after %s: %+v", sig, st)
	}
	if es := ledgerEntries(t, state); len(es) != 0 {
		t.Errorf("ledger not empty after %s: %v", sig, es)
	}
	runs := s.runs(t)
	if len(runs) != 1 || runs[0].RunVerdict != verdict.RunAborted || !strings.Contains(runs[0].RunReason, "interrupted") {
		t.Fatalf("interrupted run record %+v", runs)
	}
	for _, j := range runs[0].Judgements {
		if j.Verdict != verdict.InsufficientData {
			t.Errorf("an interrupted run must not claim %s for %s", j.Verdict, j.Invariant)
		}
	}
	if _, err := record.ReadVerdictJUnit(filepath.Join(s.folder(t), record.VerdictJUnitFile)); err != nil {
		t.Errorf("no verdict JUnit after %s: %v", sig, err)
	}
}

func TestSelftestNextStartHealsAfterKill9(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := startLongWindow(t, state)
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	st := memState(t, state)
	es := ledgerEntries(t, state)
	if !st.Flags["w"] || len(es) != 1 || es[0].Kind != memlab.FlagKind {
		t.Fatalf("after kill -9 the fault and its entry must remain: flags %v, entries %v", st.Flags, es)
	}
	killedLog := len(st.Log)

	next := newSelftest(t, state, nil, "-ginkgo.focus=selftest-ineffective")
	if code := next.run(t); code != 0 {
		t.Fatalf("next start exit %d\n%s", code, next.out.String())
	}
	st = memState(t, state)
	after := st.Log[killedLog:]
	if len(after) == 0 || after[0] != "heal w" {
		t.Errorf("the next start must heal from the ledger before anything else; it did %v", after)
	}
	if st.Flags["w"] || st.Flags["c"] {
		t.Errorf("faults left: %v", st.Flags)
	}
	if es := ledgerEntries(t, state); len(es) != 0 {
		t.Errorf("ledger not empty: %v", es)
	}
	if got := scenarioArms(next.runs(t)); !slices.Equal(got, []string{"selftest-ineffective/fault"}) {
		t.Errorf("next start ran %v", got)
	}
}

func TestSelftestRefusesWhatIsNotALab(t *testing.T) {
	t.Parallel()
	for env, why := range map[string]string{
		"FAULTLINE_SELFTEST_NOT_A_LAB=1": "does not say `lab: true`",
		"FAULTLINE_SELFTEST_NO_MARKER=1": "refusing to run: the cluster does not carry the lab's marker",
	} {
		state := filepath.Join(t.TempDir(), "state")
		s := newSelftest(t, state, []string{env}, "-ginkgo.label-filter=!slow")
		if code := s.run(t); code == 0 {
			t.Fatalf("%s: the suite must fail\n%s", env, s.out.String())
		}
		if !strings.Contains(s.out.String(), why) {
			t.Errorf("%s: the error must say why (%q):\n%s", env, why, s.out.String())
		}
		if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the lab's state dir was touched: %v", env, err)
		}
		if des, _ := os.ReadDir(s.reports); len(des) != 0 {
			t.Errorf("%s: a run folder was made: %v", env, des)
		}
	}
}

// TestGinkgoRunsDeferCleanupOnSIGINT checks the Ginkgo behaviour the heal
// relies on when AfterEach cannot heal: a DeferCleanup registered in
// JustBeforeEach runs after the first SIGINT.
func TestGinkgoRunsDeferCleanupOnSIGINT(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "cleanupcheck.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, "./selftest/cleanupcheck").CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, out)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "-test.v")
	cmd.Env = append(os.Environ(), "FAULTLINE_CLEANUPCHECK_DIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(time.Minute)
	for _, err := os.Stat(filepath.Join(dir, "injected")); err != nil; _, err = os.Stat(filepath.Join(dir, "injected")) {
		if time.Now().After(deadline) {
			t.Fatalf("never injected\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("did not stop after SIGINT\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "cleaned")); err != nil {
		t.Errorf("DeferCleanup did not run after SIGINT\n%s", out.String())
	}
}

func TestSelftestFailedHealStaysInTheLedgerAndBlocksTheNextStart(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := newSelftest(t, state, []string{"FAULTLINE_SELFTEST_HEAL_FAILS=1"}, "-ginkgo.focus=selftest-heal-fails")
	if code := s.run(t); code == 0 {
		t.Fatalf("a failed heal must fail the suite\n%s", s.out.String())
	}
	runs := s.runs(t)
	if len(runs) != 1 || runs[0].RunVerdict != verdict.RunAborted || !strings.Contains(runs[0].RunReason, "heal failed") {
		t.Fatalf("run %+v", runs)
	}
	es := ledgerEntries(t, state)
	if len(es) != 1 || !strings.Contains(string(es[0].Params), `"h"`) {
		t.Fatalf("the unhealed fault must stay in the ledger: %v", es)
	}
	before := memState(t, state)

	next := newSelftest(t, state, []string{"FAULTLINE_SELFTEST_HEAL_FAILS=1"}, "-ginkgo.focus=selftest-ineffective")
	if code := next.run(t); code == 0 {
		t.Fatalf("a start whose ledger heal fails must not run scenarios\n%s", next.out.String())
	}
	if !strings.Contains(next.out.String(), "healing what the heal ledger of lab memlab holds") || !strings.Contains(next.out.String(), "flag h cannot be cleared") {
		t.Errorf("the refusal must say what could not be healed:\n%s", next.out.String())
	}
	if after := memState(t, state); after.Resets != before.Resets || len(after.Log) != len(before.Log) {
		t.Errorf("the lab was touched after the ledger heal failed: %v then %v", before.Log, after.Log)
	}
	if des, _ := os.ReadDir(next.reports); len(des) != 0 {
		t.Errorf("a run folder was made: %v", des)
	}
}

// TestSelftestUnderTheGinkgoCLI runs the suite as users do, with the
// ginkgo command (built from the module's own Ginkgo), in parallel: one run
// folder, --focus picking both arms of one scenario, nothing left behind.
func TestSelftestUnderTheGinkgoCLI(t *testing.T) {
	t.Parallel()
	cli := ginkgoCommand(t)
	state, reportsDir := t.TempDir(), t.TempDir()
	cmd := exec.Command(cli, "-p", "--procs=2", "--no-color", "--focus=selftest-verdicts", "./selftest")
	cmd.Env = append(os.Environ(), "FAULTLINE_SELFTEST_STATE="+state, "FAULTLINE_REPORTS_DIR="+reportsDir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1 (the fault arm fails its spec), got %v\n%s", err, out)
	}
	s := &selftestRun{reports: reportsDir}
	if got := scenarioArms(s.runs(t)); !slices.Equal(got, []string{"selftest-verdicts/fault", "selftest-verdicts/null"}) {
		t.Errorf("ran %v", got)
	}
	if st := memState(t, state); st.Flags["a"] {
		t.Errorf("fault left in the lab: %v", st.Flags)
	}
	if es := ledgerEntries(t, state); len(es) != 0 {
		t.Errorf("ledger not empty: %v", es)
	}

	// Resumed in parallel, with the flag after --: every process skips
	// both finished arms; nothing runs, nothing is appended.
	folder := s.folder(t)
	cmd = exec.Command(cli, "-p", "--procs=2", "--no-color", "--focus=selftest-verdicts", "./selftest", "--", "-"+scenario.ResumeFlag+"="+folder)
	cmd.Env = append(os.Environ(), "FAULTLINE_SELFTEST_STATE="+state, "FAULTLINE_REPORTS_DIR="+reportsDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("resume under the ginkgo CLI: %v\n%s", err, out)
	}
	if n := completeRecords(folder); n != 2 {
		t.Errorf("%d records after a parallel resume with nothing to run, want 2", n)
	}
	if des, _ := os.ReadDir(reportsDir); len(des) != 1 {
		t.Errorf("the parallel resume made a run folder: %v", des)
	}
}

// A fault the lab cannot run is no verdict and no failure: the spec is
// skipped with the reason, the run record is ABORTED saying the lab cannot
// run it, no invariant claims anything, and the ledger is left empty.
func TestSelftestUnsupportedFaultIsSkippedNotJudged(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := newSelftest(t, state, []string{"FAULTLINE_SELFTEST_UNSUPPORTED=1"}, "-ginkgo.focus=selftest-unsupported")
	if code := s.run(t); code != 0 {
		t.Fatalf("exit %d, want 0 (a skip is not a failure)\n%s", code, s.out.String())
	}
	runs := s.runs(t)
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1\n%s", len(runs), s.out.String())
	}
	r := runs[0]
	if r.RunVerdict != verdict.RunAborted || !strings.Contains(r.RunReason, "the lab cannot run this fault") || r.SpecState != "skipped" || r.Counted() {
		t.Errorf("run %s (%s), spec %s, counted %v; want ABORTED saying the lab cannot run it, skipped, not counted", r.RunVerdict, r.RunReason, r.SpecState, r.Counted())
	}
	for _, j := range r.Judgements {
		if j.Verdict != verdict.InsufficientData {
			t.Errorf("an unsupported fault's run claims %s for %s", j.Verdict, j.Invariant)
		}
	}
	junit, err := os.ReadFile(filepath.Join(s.folder(t), "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(junit), "<skipped message=") || !strings.Contains(string(junit), "the lab cannot run this fault") {
		t.Errorf("Ginkgo's JUnit does not show the spec skipped with the reason:\n%s", junit)
	}
	entries, err := os.ReadDir(filepath.Join(state, "ledger"))
	if err == nil {
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".json") {
				t.Errorf("ledger entry %s left behind", e.Name())
			}
		}
	}
}

// A positive control whose damage outlives heal: its convergence invariant
// is judged VIOLATED over the final snapshot (the flag still set after
// heal), which passes its spec, and only then is it released; nothing is
// left in the lab or the ledger.
func TestSelftestLingeringControlIsReleasedAfterItsVerdict(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := newSelftest(t, state, []string{"FAULTLINE_SELFTEST_LINGERING=1"}, "-ginkgo.focus=selftest-lingering")
	if code := s.run(t); code != 0 {
		t.Fatalf("exit %d, want 0 (the control showed its VIOLATED)\n%s", code, s.out.String())
	}
	runs := s.runs(t)
	if len(runs) != 1 || runs[0].RunVerdict != verdict.RunJudged {
		t.Fatalf("runs %+v, want one JUDGED\n%s", runs, s.out.String())
	}
	got := map[string]verdict.Verdict{}
	for _, j := range runs[0].Judgements {
		got[j.Invariant] = j.Verdict
	}
	if got["healed-l"] != verdict.Violated || got["no-flag-b"] != verdict.Preserved {
		t.Errorf("verdicts %v, want healed-l VIOLATED and no-flag-b PRESERVED", got)
	}
	st := memState(t, state)
	if st.Flags["l"] {
		t.Error("the lingering flag is still set after the run")
	}
	var order []string
	for _, e := range st.Log {
		if strings.HasSuffix(e, " l") {
			order = append(order, e)
		}
	}
	if !slices.Equal(order, []string{"inject l", "heal l", "release l"}) {
		t.Errorf("lab log %v, want inject, heal, release in that order", order)
	}
	if es := ledgerEntries(t, state); len(es) != 0 {
		t.Errorf("ledger not empty: %v", es)
	}
	folder := &record.Folder{Dir: s.folder(t)}
	ev, err := os.ReadFile(folder.EvidencePath(runs[0].RunID))
	if err != nil {
		t.Fatal(err)
	}
	healed, settled, released := bytes.Index(ev, []byte(`"fault-healed"`)), bytes.Index(ev, []byte(`"settle-timeout"`)), bytes.Index(ev, []byte(`"fault-released"`))
	if healed < 0 || settled < 0 || released < 0 || !(healed < settled && settled < released) {
		t.Errorf("timeline must have fault-healed, then settle-timeout, then fault-released (offsets %d, %d, %d)", healed, settled, released)
	}
}

// readEvidence reads the evidence record of one run of s.
func readEvidence(t *testing.T, s *selftestRun, runID string) evidence.Record {
	t.Helper()
	f, err := os.Open((&record.Folder{Dir: s.folder(t)}).EvidencePath(runID))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := evidence.ReadJSONL(f)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func judgementsOf(r verdict.Run) map[string]verdict.Judgement {
	out := map[string]verdict.Judgement{}
	for _, j := range r.Judgements {
		out[j.Invariant] = j
	}
	return out
}

// The stateful pod already runs on two nodes before the fault: the real
// single-copy invariant, judged over the pre-fault window (one baseline
// snapshot cannot show two reads of one container), is DETECTOR_INVALID,
// never blamed on the fault, and the spec does not fail for it.
func TestSelftestPreFaultWindowMakesARealInvariantDetectorInvalid(t *testing.T) {
	t.Parallel()
	s := newSelftest(t, t.TempDir(), []string{"FAULTLINE_SELFTEST_TWO_COPIES=1"}, "-ginkgo.focus=selftest-two-copies-before-fault")
	if code := s.run(t); code != 0 {
		t.Fatalf("exit %d, want 0 (a detector found broken before the fault fails nothing)\n%s", code, s.out.String())
	}
	runs := s.runs(t)
	if len(runs) != 1 || runs[0].RunVerdict != verdict.RunJudged {
		t.Fatalf("runs %+v, want one JUDGED\n%s", runs, s.out.String())
	}
	js := judgementsOf(runs[0])
	sc := js["single-copy"]
	if sc.Verdict != verdict.DetectorInvalid || sc.During != "pre-fault" || !strings.Contains(sc.Reason, "before the fault") || !strings.Contains(sc.Reason, "two nodes at once") {
		t.Errorf("single-copy %+v, want DETECTOR_INVALID during pre-fault, saying the pod ran on two nodes before the fault", sc)
	}
	if j := js["no-flag-b"]; j.Verdict != verdict.Preserved {
		t.Errorf("no-flag-b %+v, want PRESERVED", j)
	}
	rec := readEvidence(t, s, runs[0].RunID)
	if rec.Baseline == nil || len(rec.PreFault) < 3 {
		t.Fatalf("evidence has baseline %v and %d pre-fault snapshots, want a baseline and at least 3", rec.Baseline != nil, len(rec.PreFault))
	}
	if !sc.At.After(rec.Baseline.Taken) || sc.At.After(rec.PreFault[len(rec.PreFault)-1].Taken) {
		t.Errorf("the overlap at %s lies outside the pre-fault window %s..%s", sc.At, rec.Baseline.Taken, rec.PreFault[len(rec.PreFault)-1].Taken)
	}
}

// A positive control whose breakage falls after the window: one safety
// invariant broken while heal runs, another after heal while settling.
// Both are judged VIOLATED (the spec passes, as a control's should), each
// with the part of the run it fell in; the heal samples and every settle
// sample are in the evidence.
func TestSelftestSafetyIsJudgedThroughHealAndSettle(t *testing.T) {
	t.Parallel()
	s := newSelftest(t, t.TempDir(), []string{"FAULTLINE_SELFTEST_HAZARD_AT_HEAL=1"}, "-ginkgo.focus=selftest-hazard-at-heal")
	if code := s.run(t); code != 0 {
		t.Fatalf("exit %d, want 0 (the control showed both its VIOLATED)\n%s", code, s.out.String())
	}
	runs := s.runs(t)
	if len(runs) != 1 || runs[0].RunVerdict != verdict.RunJudged {
		t.Fatalf("runs %+v, want one JUDGED\n%s", runs, s.out.String())
	}
	r := runs[0]
	if r.RunRole() != verdict.RoleControl || r.Role != verdict.RoleControl || !slices.Equal(r.ControlOf, []string{"no-blip", "no-aftershock"}) {
		t.Errorf("role %q, controlOf %v; want control of no-blip and no-aftershock", r.Role, r.ControlOf)
	}
	js := judgementsOf(r)
	for name, during := range map[string]string{"no-blip": "heal", "no-aftershock": "settle"} {
		if j := js[name]; j.Verdict != verdict.Violated || j.During != during {
			t.Errorf("%s %+v, want VIOLATED during %s", name, j, during)
		}
	}
	for _, name := range []string{"no-flag-b", "healed-e", "aftershock-passed"} {
		if j := js[name]; j.Verdict != verdict.Preserved {
			t.Errorf("%s %+v, want PRESERVED", name, j)
		}
	}
	rec := readEvidence(t, s, r.RunID)
	if len(rec.Heal) == 0 || len(rec.Settle) < 2 || rec.Final == nil {
		t.Errorf("evidence has %d heal and %d settle snapshots (final %v); want heal samples and every settle sample", len(rec.Heal), len(rec.Settle), rec.Final != nil)
	}
	started, healed := rec.Timeline.OfKind("heal-started"), rec.Timeline.OfKind("fault-healed")
	if len(started) != 1 || len(healed) != 1 || !started[0].At.Before(healed[0].At) {
		t.Fatalf("timeline has %d heal-started and %d fault-healed events, want one each in that order", len(started), len(healed))
	}
	for _, snap := range rec.Heal {
		if snap.Taken.Before(started[0].At) || snap.Taken.After(healed[0].At) {
			t.Errorf("heal sample taken at %s, outside the heal %s..%s", snap.Taken, started[0].At, healed[0].At)
		}
	}
}

// A fault whose effect only the first of some ten probes sees is
// FAULT_INEFFECTIVE: one sighting is not the fault holding through the
// window. The record has the coverage, and the reason says it.
func TestSelftestEffectSeenByTooFewProbesIsIneffective(t *testing.T) {
	t.Parallel()
	s := newSelftest(t, t.TempDir(), []string{"FAULTLINE_SELFTEST_SEEN_ONCE=1"}, "-ginkgo.focus=selftest-effect-seen-once")
	if code := s.run(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, s.out.String())
	}
	runs := s.runs(t)
	if len(runs) != 1 {
		t.Fatalf("runs %+v\n%s", runs, s.out.String())
	}
	r := runs[0]
	if r.RunVerdict != verdict.FaultIneffective || r.Counted() {
		t.Errorf("run %s (%s), want FAULT_INEFFECTIVE", r.RunVerdict, r.RunReason)
	}
	e := r.Effect
	if e == nil || e.Observed != 1 || e.Probes < 5 || e.Required != 0.5 {
		t.Fatalf("effect coverage %+v, want 1 observed of at least 5 probes, 0.5 required", e)
	}
	if want := fmt.Sprintf("in 1 of %d probes", e.Probes); !strings.Contains(r.RunReason, want) || !strings.Contains(r.RunReason, "50%") {
		t.Errorf("reason %q lacks %q and the required share", r.RunReason, want)
	}
}

// resumeFilter is the set the resume tests run: three pairs, each with
// its fault in the ledger for a while (two flags and the null arm's
// stand-in), one of them FAULT_INEFFECTIVE.
const resumeFilter = "-ginkgo.label-filter=!slow && !broken"

// outcomes are what two folders' records must agree on: scenario, arm,
// run verdict and every invariant's verdict, one line a run, sorted.
func outcomes(runs []verdict.Run) []string {
	var out []string
	for _, r := range runs {
		var js []string
		for _, j := range r.Judgements {
			js = append(js, j.Invariant+"="+string(j.Verdict))
		}
		sort.Strings(js)
		out = append(out, fmt.Sprintf("%s [%s] %s: %s", r.Scenario, r.Arm, r.RunVerdict, strings.Join(js, " ")))
	}
	sort.Strings(out)
	return out
}

// completeRecords counts the whole lines of a folder's verdicts.jsonl.
func completeRecords(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, record.VerdictsFile))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// killMidRun starts the suite with args and kills it with SIGKILL once
// `recorded` runs have been recorded and another holds a memlab flag fault
// in the lab and in the ledger; it returns the run folder and the flag
// left set.
func killMidRun(t *testing.T, state string, recorded int, args ...string) (string, string) {
	t.Helper()
	s := newSelftest(t, state, nil, args...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	led, err := ledger.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		des, _ := os.ReadDir(s.reports)
		if len(des) == 1 && completeRecords(filepath.Join(s.reports, des[0].Name())) >= recorded {
			es, _ := led.Entries()
			st, err := memlab.Open(state, true).Load()
			if len(es) == 1 && es[0].Kind == memlab.FlagKind && err == nil {
				var f memlab.Flag
				if json.Unmarshal(es[0].Params, &f) == nil && st.Flags[f.Name] {
					if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					s.cmd.Wait()
					return filepath.Join(s.reports, des[0].Name()), f.Name
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run was caught holding its fault after another was recorded\n%s", s.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A suite killed with SIGKILL mid-run, healed from the heal ledger on the
// next start and resumed gives the records an uncut run gives: the runs
// recorded before the kill are kept and not run again, the cut one and
// those never started run and append to the same folder.
func TestSelftestResumedAfterKill9GivesTheRecordsOfAnUncutRun(t *testing.T) {
	t.Parallel()
	uncut := newSelftest(t, t.TempDir(), nil, resumeFilter)
	uncut.run(t)
	want := outcomes(uncut.runs(t))
	if len(want) != 3 {
		t.Fatalf("the uncut run recorded %v", want)
	}

	state := t.TempDir()
	folder, flag := killMidRun(t, state, 1, resumeFilter)
	before, err := record.ReadRuns(folder)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) < 1 || len(before) > 2 {
		t.Fatalf("the killed suite recorded %d runs, want 1 or 2", len(before))
	}
	if es := ledgerEntries(t, state); len(es) != 1 {
		t.Fatalf("after kill -9 the fault's entry must remain: %v", es)
	}
	t.Logf("killed with %d run(s) recorded and flag %s in the lab", len(before), flag)
	killedLog := len(memState(t, state).Log)

	resumed := newSelftest(t, state, []string{scenario.EnvResume + "=" + folder}, resumeFilter)
	code := resumed.run(t)
	if des, _ := os.ReadDir(resumed.reports); len(des) != 0 {
		t.Errorf("the resumed suite made a run folder of its own: %v", des)
	}
	after, err := record.ReadRuns(folder)
	if err != nil {
		t.Fatal(err)
	}
	if got := outcomes(after); !slices.Equal(got, want) {
		t.Errorf("resumed records:\n  %s\nuncut records:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for i, r := range before {
		if after[i].RunID != r.RunID {
			t.Errorf("record %d was %s before the kill, %s after the resume: records are appended, never rewritten", i+1, r.RunID, after[i].RunID)
		}
	}
	// The failing spec (the VIOLATED fault arm) fails the resumed suite
	// only when the resumed suite ran it.
	ranFaultArm := !slices.ContainsFunc(before, func(r verdict.Run) bool { return r.Scenario == "selftest-verdicts" && r.Arm == "fault" })
	if wantCode := map[bool]int{true: 1, false: 0}[ranFaultArm]; code != wantCode {
		t.Errorf("resumed suite exit %d, want %d\n%s", code, wantCode, resumed.out.String())
	}
	st := memState(t, state)
	if rest := st.Log[killedLog:]; len(rest) == 0 || rest[0] != "heal "+flag {
		t.Errorf("the resumed start must heal flag %s from the ledger first; it did %v", flag, rest)
	}
	if st.Flags[flag] || st.Flags["a"] || st.Flags["c"] {
		t.Errorf("faults left in the lab: %v", st.Flags)
	}
	if es := ledgerEntries(t, state); len(es) != 0 {
		t.Errorf("ledger not empty: %v", es)
	}

	// Ginkgo's JUnit (the killed process wrote none) skips each run the
	// folder held, naming the folder and the record.
	gj, err := record.ReadVerdictJUnit(filepath.Join(folder, record.GinkgoJUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, tc := range gj.TestSuites[0].TestCases {
		if tc.Skipped != nil && strings.Contains(tc.Skipped.Message, "already run in the resumed run folder "+folder+": "+record.VerdictsFile+":") {
			notes++
		}
	}
	if len(gj.TestSuites) != 1 || notes != len(before) {
		t.Errorf("Ginkgo JUnit: %d suites, %d resume skips; want 1 and %d", len(gj.TestSuites), notes, len(before))
	}
	vj, err := record.ReadVerdictJUnit(filepath.Join(folder, record.VerdictJUnitFile))
	if err != nil || vj.Tests != 7+7+2 {
		t.Errorf("verdict JUnit: %d cases (%v), want the 16 of all three runs", vj.Tests, err)
	}

	// Resumed again with the flag, every pair is finished: nothing runs,
	// nothing is appended, and Ginkgo's JUnit gains this process's suite.
	again := newSelftest(t, state, nil, resumeFilter, "-"+scenario.ResumeFlag+"="+folder)
	if code := again.run(t); code != 0 {
		t.Errorf("a resume with nothing left to run: exit %d\n%s", code, again.out.String())
	}
	if n := completeRecords(folder); n != 3 {
		t.Errorf("%d records after a resume with nothing to run, want 3", n)
	}
	if gj, err := record.ReadVerdictJUnit(filepath.Join(folder, record.GinkgoJUnitFile)); err != nil || len(gj.TestSuites) != 2 {
		t.Errorf("Ginkgo JUnit after a second resume: %v, %+v", err, gj)
	}
	if got := outcomes(again.runsIn(t, folder)); !slices.Equal(got, want) {
		t.Errorf("records after the second resume: %v", got)
	}
}

func (s *selftestRun) runsIn(t *testing.T, folder string) []verdict.Run {
	t.Helper()
	runs, err := record.ReadRuns(folder)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.out.String())
	}
	return runs
}

// A run interrupted by SIGINT is recorded ABORTED; resumed, it runs again
// and its record follows the aborted one, and Ginkgo's JUnit holds both
// processes' suites.
func TestSelftestResumeRunsAnInterruptedRunAgain(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := startLongWindow(t, state)
	time.Sleep(300 * time.Millisecond)
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	folder := s.folder(t)
	if runs := s.runs(t); len(runs) != 1 || runs[0].RunVerdict != verdict.RunAborted {
		t.Fatalf("interrupted run: %+v", runs)
	}
	resumed := newSelftest(t, state, []string{"FAULTLINE_SELFTEST_LONG_WINDOW=300ms", scenario.EnvResume + "=" + folder}, "-ginkgo.focus=selftest-long-window")
	if code := resumed.run(t); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, resumed.out.String())
	}
	runs := resumed.runsIn(t, folder)
	if len(runs) != 2 || runs[0].RunVerdict != verdict.RunAborted || runs[1].RunVerdict != verdict.RunJudged || runs[1].Scenario != "selftest-long-window" {
		t.Fatalf("records after the resume: %+v", runs)
	}
	if !strings.Contains(resumed.out.String(), "2 runs (1 of them ABORTED and run again after)") {
		t.Errorf("the suite's last line does not say a run was run again:\n%s", resumed.out.String())
	}
	gj, err := record.ReadVerdictJUnit(filepath.Join(folder, record.GinkgoJUnitFile))
	if err != nil || len(gj.TestSuites) != 2 {
		t.Fatalf("Ginkgo JUnit: %v, %d suites, want the interrupted process's and the resumed one's", err, len(gj.TestSuites))
	}
	if es := ledgerEntries(t, state); len(es) != 0 {
		t.Errorf("ledger not empty: %v", es)
	}
}

// A folder that cannot be resumed is refused before the lab is opened:
// the error names the problem, the lab's state dir is not made, no run
// folder is made, and the folder is left as it was.
func TestSelftestResumeRefusesBadFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(name, records string) string {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, record.EvidenceDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if records != "" {
			if err := os.WriteFile(filepath.Join(dir, record.VerdictsFile), []byte(records), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	rec := func(suite, profile string) string {
		return `{"runID":"r1","suite":"` + suite + `","scenario":"selftest-verdicts","arm":"fault","runVerdict":"JUDGED","judgements":[],"lab":{"name":"memlab","kind":"memlab","timerProfile":"` + profile + `"}}` + "\n"
	}
	plain := filepath.Join(root, "plain")
	os.MkdirAll(plain, 0o755)
	for name, c := range map[string]struct{ dir, want string }{
		"missing":        {filepath.Join(root, "nope"), "it does not exist"},
		"not a folder":   {plain, "it is not a run folder: it has no evidence/ directory"},
		"another suite":  {mk("20261101T100000Z-disagree", rec("disagree", "none")), `it is a run folder of suite "disagree"`},
		"another's name": {mk("20261101T100000Z-agents", ""), `its name says it is a run folder of suite "agents"`},
		"malformed":      {mk("20261101T100000Z-selftest", "{\n"+rec("selftest", "none")), record.VerdictsFile + ":1: malformed run record"},
		"other profile":  {mk("20261101T100000Z-selftest-2", rec("selftest", "fast")), `its runs ran with timer profile "fast"`},
	} {
		t.Run(name, func(t *testing.T) {
			before := map[string]string{}
			filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					b, _ := os.ReadFile(p)
					before[p] = string(b)
				}
				return nil
			})
			state := filepath.Join(t.TempDir(), "state")
			s := newSelftest(t, state, []string{scenario.EnvResume + "=" + c.dir}, resumeFilter)
			if code := s.run(t); code == 0 {
				t.Fatalf("the suite must refuse\n%s", s.out.String())
			}
			if !strings.Contains(s.out.String(), "resuming run folder "+c.dir+": ") || !strings.Contains(s.out.String(), c.want) || !strings.Contains(s.out.String(), "nothing was touched") {
				t.Errorf("the refusal must name the folder and say %q:\n%s", c.want, s.out.String())
			}
			if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the lab's state dir was touched: %v", err)
			}
			if des, _ := os.ReadDir(s.reports); len(des) != 0 {
				t.Errorf("a run folder was made: %v", des)
			}
			filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					if b, _ := os.ReadFile(p); before[p] != string(b) {
						t.Errorf("%s changed", p)
					}
					delete(before, p)
				}
				return nil
			})
			if len(before) != 0 {
				t.Errorf("files removed: %v", before)
			}
		})
	}
}

// A folder whose suite still runs is refused: a resume would run its
// scenarios a second time beside it.
func TestSelftestResumeRefusesAFolderInUse(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	running := startLongWindow(t, state)
	folder := running.folder(t)
	s := newSelftest(t, t.TempDir(), []string{scenario.EnvResume + "=" + folder}, "-ginkgo.focus=selftest-ineffective")
	if code := s.run(t); code == 0 {
		t.Fatalf("a resume of a folder in use must be refused\n%s", s.out.String())
	}
	if !strings.Contains(s.out.String(), "run folder "+folder+": the run folder is in use by another running suite") {
		t.Errorf("the refusal must say the folder is in use:\n%s", s.out.String())
	}
	if n := completeRecords(folder); n != 0 {
		t.Errorf("%d records appended to a folder in use", n)
	}
}
