package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

// recordedFolder is a run folder the engine wrote before run records kept
// what judging them again needs (testdata/runs/README.md).
const recordedFolder = "../../testdata/runs/20261206T072429Z-recorded"

// copyFolder copies a run folder into a new temporary directory, where a
// test may judge it again, and returns the copy.
func copyFolder(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", src, err, out)
	}
	return dst
}

// untouched reports the files of dir (outside its re-judgings) whose
// content differs from before.
func untouched(t *testing.T, dir string, before map[string]string) []string {
	t.Helper()
	var changed []string
	after := files(t, dir)
	for p, c := range before {
		if after[p] != c {
			changed = append(changed, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok && !strings.HasPrefix(p, record.RejudgedDir+"/") {
			changed = append(changed, p)
		}
	}
	return changed
}

func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Mode()&os.ModeSymlink != 0 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A folder recorded before runs kept their Judging is judged again where
// it can be, says which verdicts it cannot judge again and why, and gets
// its re-judging beside its records, which a report reads.
func TestRejudgeAFolderRecordedBeforeRunsKeptWhatItNeeds(t *testing.T) {
	dir := copyFolder(t, recordedFolder)
	before := files(t, dir)
	r := faultline(t, "", "rejudge", dir)
	r.expect(t, exitOK, "[5/5] "+dir+": judging run ineffective-fault-20261206T072436.814Z again")
	for _, want := range []string{
		"re-judging " + dir + " (5 runs) with the checker at 0123456789abcdef",
		"run second-copy-fault-20261206T072433.741Z (second-copy, fault arm), recorded at commit dd682f549df6a4acc25e195741a350aea26f8a0e\n  unchanged: single-copy (VIOLATED)\n",
		"unchanged: single-copy (DETECTOR_INVALID), convergence (INSUFFICIENT_DATA)",
		"  api-agreement: INSUFFICIENT_DATA as recorded, not judged again: the record was written before runs kept their invariants' parameters, and api-agreement is built with some (its bounds)",
		"note (5 runs of 5): the inject's start taken from the heal ledger's entry",
		"5 runs in 1 folder: 18 verdicts judged again, 0 of them changed, 0 with another reason only; 11 not judged again; 0 run verdicts changed",
		"written to " + filepath.Join(dir, record.RejudgedDir),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if changed := untouched(t, dir, before); len(changed) > 0 {
		t.Errorf("the run folder's own files changed: %v", changed)
	}
	latest, err := record.LatestRejudged(dir)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(filepath.Join(latest, record.RejudgeFile))
	if err != nil || !strings.Contains(r.stdout, string(saved)) {
		t.Errorf("%s is not what was printed (%v)", record.RejudgeFile, err)
	}
	runs, err := record.ReadRuns(latest)
	if err != nil || len(runs) != 5 || runs[0].Rejudged == nil || runs[0].Rejudged.GitCommit != "0123456789abcdef" {
		t.Fatalf("re-judged records: %d, %v", len(runs), err)
	}

	rep := faultline(t, "", "report", "--rejudged", dir)
	rep.expect(t, exitOK)
	for _, want := range []string{
		"- Judged again by the checker at: 0123456789abcdef (the commits above are the runs')",
		"could not be judged again and are in no row (api-agreement in 2 runs, dns-truthful in 2 runs, endpoints-truthful in 3 runs",
		"| single-copy | 1 | 0 | 1 | 0 | 1/2 = 50.0%",
	} {
		if !strings.Contains(rep.stdout, want) {
			t.Errorf("report --rejudged lacks %q:\n%s", want, rep.stdout)
		}
	}
	if same := faultline(t, "", "report", latest); same.stdout != rep.stdout {
		t.Error("report of the re-judging's folder differs from report --rejudged")
	}
	site := filepath.Join(t.TempDir(), "site")
	html := faultline(t, "", "report", "--format", "html", "-o", site, latest)
	html.expect(t, exitOK)
	pages, _ := filepath.Glob(filepath.Join(site, "runs", "*second-copy-fault-*.html"))
	if len(pages) != 1 {
		t.Fatalf("run pages %v", pages)
	}
	page, _ := os.ReadFile(pages[0])
	summary, _ := os.ReadFile(filepath.Join(latest, record.SummaryFile))
	for name, text := range map[string]string{"the run page": string(page), "summary.md": string(summary)} {
		if !strings.Contains(text, "Judged again at 2") || !strings.Contains(text, "by the checker at 0123456789abcdef") {
			t.Errorf("%s does not say the run was judged again, by which checker", name)
		}
	}
}

// A real lab's folder recorded before runs sampled a pre-fault window
// (the drill report's test data) stays readable and is judged again in
// none of its verdicts, each saying why.
func TestRejudgeAFolderRecordedBeforeThePreFaultWindow(t *testing.T) {
	dir := copyFolder(t, "../../suites/drills/report/testdata/pair-fast")
	r := faultline(t, "", "rejudge", "--dry-run", dir)
	r.expect(t, exitOK)
	if n := strings.Count(r.stdout, "as recorded, not judged again: the record was written before runs sampled a pre-fault window"); n != 4 {
		t.Errorf("%d verdicts said why they were not judged again, want 4:\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stdout, "dry run: nothing was written") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, record.RejudgedDir)); !os.IsNotExist(err) {
		t.Errorf("a dry run wrote %s: %v", record.RejudgedDir, err)
	}
}

// Bad input is an error naming it, exits non-zero and writes nothing, in
// any folder given.
func TestRejudgeRefusesBadInputAndWritesNothing(t *testing.T) {
	good := copyFolder(t, recordedFolder)
	unknown := copyFolder(t, recordedFolder)
	b, err := os.ReadFile(filepath.Join(unknown, record.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = strings.Replace(lines[2], `"invariant":"single-copy"`, `"invariant":"no-such-invariant"`, 1)
	writeTestFile(t, filepath.Join(unknown, record.VerdictsFile), strings.Join(lines, ""))
	parent := filepath.Dir(good)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"missing":           {[]string{good, filepath.Join(parent, "nope")}, "run folder " + filepath.Join(parent, "nope") + ": it does not exist (nothing was written)"},
		"not a run folder":  {[]string{good, t.TempDir()}, "it is not a run folder: it has no evidence/ directory"},
		"unknown invariant": {[]string{good, unknown}, filepath.Join(unknown, record.VerdictsFile) + `:3: run second-copy-fault-20261206T072433.741Z (scenario second-copy) judged invariant "no-such-invariant", which no package linked into this program registers`},
	} {
		before := files(t, good)
		r := faultline(t, "", append([]string{"rejudge"}, c.args...)...)
		r.expect(t, exitError, c.want, "(nothing was written)")
		if changed := untouched(t, good, before); len(changed) > 0 {
			t.Errorf("%s: %v changed", name, changed)
		}
		if _, err := os.Stat(filepath.Join(good, record.RejudgedDir)); !os.IsNotExist(err) {
			t.Errorf("%s: %s was written: %v", name, record.RejudgedDir, err)
		}
	}
	rejudged := faultline(t, "", "rejudge", good)
	rejudged.expect(t, exitOK)
	latest, err := record.LatestRejudged(good)
	if err != nil {
		t.Fatal(err)
	}
	again := faultline(t, "", "rejudge", latest)
	again.expect(t, exitError, "it is a re-judging of "+good+", not a run folder's own record")
	noRejudging := faultline(t, "", "report", "--rejudged", unknown)
	noRejudging.expect(t, exitError, "has not been judged again")
}

// cliRuleFlag is the flag the test invariant cli-flag-rule is violated by:
// the rule as it is now, against the reason the record holds.
const cliRuleFlag = "b"

func init() {
	invariant.Register("cli-flag-rule", invariant.Plain(func() invariant.Invariant { return flagRule{} }))
}

// flagRule is violated when memlab's flags hold cliRuleFlag.
type flagRule struct{}

func (flagRule) Name() string         { return "cli-flag-rule" }
func (flagRule) Phase() verdict.Phase { return verdict.Safety }
func (flagRule) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: "memlab/flags", Question: "flags/set"}}
}
func (flagRule) Judge(in invariant.Input) verdict.Judgement {
	for _, s := range in.Snapshots {
		var flags []string
		if s.Get("memlab/flags", evidence.Question("flags/set")).Decode(&flags) == nil && slices.Contains(flags, cliRuleFlag) {
			return verdict.Judgement{Verdict: verdict.Violated, Reason: "flag " + cliRuleFlag + " is set", At: s.Taken}
		}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: "flag " + cliRuleFlag + " is never set"}
}

// A rule changed since the run: the changed verdict is printed with the
// recorded one and both reasons, and the new one is in the re-judging.
func TestRejudgePrintsAChangedVerdictBesideTheRecordedOne(t *testing.T) {
	dir := copyFolder(t, recordedFolder)
	b, err := os.ReadFile(filepath.Join(dir, record.VerdictsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	// The second-copy run (its fault sets flag b) recorded cli-flag-rule
	// PRESERVED under the rule as it was.
	i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"runID":"second-copy-fault-`) })
	old := `{"invariant":"endpoints-truthful","phase":"safety","verdict":"INSUFFICIENT_DATA"`
	if i < 0 || !strings.Contains(lines[i], old) {
		t.Fatalf("the test data changed: no second-copy run with endpoints-truthful")
	}
	start := strings.Index(lines[i], old)
	end := start + strings.Index(lines[i][start:], "}") + 1
	lines[i] = lines[i][:start] + `{"invariant":"cli-flag-rule","phase":"safety","verdict":"PRESERVED","reason":"the rule as it was"}` + lines[i][end:]
	writeTestFile(t, filepath.Join(dir, record.VerdictsFile), strings.Join(lines, ""))

	code, stdout, stderr := runInProcess(t, "rejudge", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	want := "  cli-flag-rule: PRESERVED -> VIOLATED (part of the run (none) -> window)\n      was: the rule as it was\n      now: flag b is set\n"
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks\n%s\n%s", want, stdout)
	}
	if !strings.Contains(stdout, "19 verdicts judged again, 1 of them changed") {
		t.Errorf("stdout:\n%s", stdout)
	}
	latest, err := record.LatestRejudged(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := record.ReadRuns(latest)
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := record.ReadRuns(dir)
	if err != nil {
		t.Fatal(err)
	}
	verdictOf := func(r verdict.Run) verdict.Verdict {
		for _, j := range r.Judgements {
			if j.Invariant == "cli-flag-rule" {
				return j.Verdict
			}
		}
		return ""
	}
	if verdictOf(runs[i]) != verdict.Violated || verdictOf(recorded[i]) != verdict.Preserved {
		t.Errorf("re-judged %s, recorded %s", verdictOf(runs[i]), verdictOf(recorded[i]))
	}
}
