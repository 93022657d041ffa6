package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runRecord(runID, scenario, arm, runVerdict, reason string, verdicts ...string) string {
	var js []string
	for i, v := range verdicts {
		js = append(js, fmt.Sprintf(`{"invariant":"inv-%d","phase":"safety","verdict":%q,"reason":"hand-made"}`, i+1, v))
	}
	return fmt.Sprintf(`{"runID":%q,"suite":"disagree","scenario":%q,"arm":%q,"labels":["class:gray","arm:%s"],"started":"2026-11-01T10:00:00Z","ended":"2026-11-01T10:01:00Z","runVerdict":%q,"runReason":%q,"judgements":[%s],"lab":{"name":"lab11","kind":"local","timerProfile":"fast"}}`,
		runID, scenario, arm, arm, runVerdict, reason, strings.Join(js, ","))
}

// twoRunFolders holds, over two folders, inv-1: 3 violated and 1 preserved
// in judged fault runs, plus one FAULT_INEFFECTIVE run.
func twoRunFolders(t *testing.T) (string, string, string) {
	root := t.TempDir()
	a := filepath.Join(root, "runs", "20261101T100000Z-disagree")
	b := filepath.Join(root, "runs", "20261101T120000Z-disagree")
	writeTestFile(t, filepath.Join(a, "verdicts.jsonl"),
		runRecord("a1", "s1", "fault", "JUDGED", "", "VIOLATED", "PRESERVED")+"\n"+
			runRecord("a2", "s1", "fault", "JUDGED", "", "VIOLATED", "INSUFFICIENT_DATA")+"\n")
	writeTestFile(t, filepath.Join(b, "verdicts.jsonl"),
		runRecord("b1", "s2", "fault", "JUDGED", "", "VIOLATED", "NOT_APPLICABLE")+"\n"+
			runRecord("b2", "s2", "fault", "JUDGED", "", "PRESERVED", "PRESERVED")+"\n"+
			runRecord("b3", "s2", "fault", "FAULT_INEFFECTIVE", "partition left every link up", "VIOLATED", "VIOLATED")+"\n")
	return root, a, b
}

func TestReportMarkdown(t *testing.T) {
	root, a, b := twoRunFolders(t)
	r := faultline(t, root, "report", a, b)
	r.expect(t, exitOK)
	for _, want := range []string{
		"5 run records from 2 run folders: 4 judged, 1 excluded",
		"## Findings by invariant",
		// inv-1's 3/4 pools two runs of s1 and two of s2, repetitions of
		// two scenarios: no interval, and s2's VIOLATED then PRESERVED is
		// flaky. These records do not say whether a PRESERVED was
		// exercised, so the exercised rate is unknown.
		"| inv-1 | 3 | 0 | 0 | 1 | 3/4 = 75.0% (pools the repetitions of 2 scenarios: no interval) | unknown: 1 PRESERVED not recorded | s2 1/2 | 0 | 0 | 0 | 1 | 4 |",
		// inv-2 was judged once in each scenario: 0/2 = 0.0% [0.0%, 65.8%].
		"| inv-2 | 0 | 0 | 0 | 2 | 0/2 = 0.0% [0.0%, 65.8%] | unknown: 2 PRESERVED not recorded | - | 1 | 1 | 0 | 1 | 4 |",
		"## Stability over repetitions",
		"| s2 | inv-1 | 1 of 2 | 1/2 = 50.0% [9.5%, 90.5%] | **flaky** | FAULT_INEFFECTIVE 1 | 3 | - |",
		"## Findings by scenario",
		"## Positive controls",
		"## Null arms\n\nNo null-arm runs in these records.",
		"| b3 | s2 | fault | finding | FAULT_INEFFECTIVE | partition left every link up |",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestReportCSVToFile(t *testing.T) {
	root, a, b := twoRunFolders(t)
	out := filepath.Join(root, "rates.csv")
	r := faultline(t, root, "report", "--format", "csv", "--by", "invariant", "--by", "class", "-o", out, a, b)
	r.expect(t, exitOK, "1 of 5 run records excluded", "FAULT_INEFFECTIVE: partition left every link up")
	if r.stdout != "" {
		t.Errorf("with -o, stdout should be empty: %q", r.stdout)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, rec := range recs {
		rows[strings.Join(rec, ",")] = true
	}
	for _, want := range []string{
		"by,role,arm,invariant,class,scenario,violated,preserved,preserved_exercised,preserved_not_exercised,preserved_not_recorded,counted,rate,ci95_low,ci95_high,exercised_counted,exercised_rate,exercised_ci95_low,exercised_ci95_high,violation_kinds,insufficient_data,not_applicable,detector_invalid,excluded,runs,run_id,expected,verdict,outcome,flaky,pooled_scenarios,stability,fault_ineffective,aborted,quantities",
		// Both rows pool the repetitions of two scenarios: no interval.
		"invariant,finding,fault,inv-1,,,3,1,0,0,1,4,0.750000,,,,,,,,0,0,0,1,4,,,,,s2 inv-1:1/2,2,,,,",
		"class,finding,fault,,gray,,3,3,0,0,3,6,0.500000,,,,,,,,1,1,0,2,4,,,,,s2 inv-1:1/2,2,,,,",
		// s2's inv-1 over its runs: bounds by bisection of the score
		// statistic, independent of the closed form.
		"stability,finding,fault,inv-1,,s2,1,1,,,,2,0.500000,0.094531,0.905469,,,,,,0,0,0,,3,,,,,,,flaky,1,0,",
	} {
		if !rows[want] {
			t.Errorf("csv lacks %s:\n%v", want, recs)
		}
	}
}

func TestReportErrors(t *testing.T) {
	root, a, _ := twoRunFolders(t)
	broken := filepath.Join(root, "runs", "broken")
	writeTestFile(t, filepath.Join(broken, "verdicts.jsonl"), runRecord("x", "s", "fault", "JUDGED", "", "PRESERVED")+"\n{\"runID\":\n")

	faultline(t, root, "report", a, broken).expect(t, exitError, filepath.Join(broken, "verdicts.jsonl")+":2: malformed run record")
	faultline(t, root, "report", "--by", "component", a).expect(t, exitError, "no run has a component:<value> label", "label prefixes in these runs: arm, class")
	faultline(t, root, "report", a, a).expect(t, exitError, "was already read at")
	faultline(t, root, "report", filepath.Join(root, "nope")).expect(t, exitError, "nope")
	out := filepath.Join(root, "no", "such", "dir", "r.md")
	faultline(t, root, "report", "-o", out, a).expect(t, exitError, "writing report")
}

// TestReportKeepsControlsOutOfFindings is the ci set's endpoints-truthful
// row in small: one finding run preserved, one violated, and the control
// built to violate it, known by its control: label as records written
// before roles were recorded are.
func TestReportKeepsControlsOutOfFindings(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "runs", "20261101T100000Z-disagree")
	control := strings.Replace(runRecord("c1", "control-endpoints-truthful", "fault", "JUDGED", "", "VIOLATED"),
		`"labels":["class:gray"`, `"labels":["selfcheck","control:inv-1","class:gray"`, 1)
	writeTestFile(t, filepath.Join(dir, "verdicts.jsonl"),
		runRecord("f1", "pod-network-cut", "fault", "JUDGED", "", "PRESERVED")+"\n"+
			runRecord("f2", "pod-network-cut", "fault", "JUDGED", "", "VIOLATED")+"\n"+
			control+"\n"+
			runRecord("n1", "pod-network-cut", "null", "JUDGED", "", "PRESERVED")+"\n")
	r := faultline(t, root, "report", "--by", "class", dir)
	r.expect(t, exitOK)
	from := strings.Index(r.stdout, "## Findings by class")
	if from < 0 {
		t.Fatalf("report has no findings table:\n%s", r.stdout)
	}
	findings := r.stdout[from:]
	if to := strings.Index(findings, "\n## "); to > 0 {
		findings = findings[:to]
	}
	if !strings.Contains(findings, "| gray | 1 | 0 | 0 | 1 | 1/2 = 50.0% [9.5%, 90.5%] | unknown: 1 PRESERVED not recorded |") {
		t.Errorf("findings by class pool the control or the null arm:\n%s", findings)
	}
	for _, want := range []string{
		"## Positive controls",
		"| c1 | control-endpoints-truthful | inv-1 | VIOLATED, any kind | VIOLATED | hit | hand-made |",
		"## Null arms by class",
		"| gray | 0 | 1 | 0/1 = 0.0% [0.0%, 79.3%] |",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestReportLaTeX(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "runs", "20261101T100000Z-disagree")
	control := strings.Replace(runRecord("c1", "control_breaks", "fault", "JUDGED", "", "VIOLATED"),
		`"labels":["class:gray"`, `"labels":["selfcheck","control:inv-1","class:gray"`, 1)
	writeTestFile(t, filepath.Join(dir, "verdicts.jsonl"),
		runRecord("f1", "pod_cut", "fault", "JUDGED", "", "PRESERVED")+"\n"+
			runRecord("f2", "pod_cut", "fault", "JUDGED", "", "VIOLATED")+"\n"+control+"\n")
	r := faultline(t, root, "report", "--format", "latex", dir)
	r.expect(t, exitOK)
	for _, want := range []string{
		// pod_cut ran twice: its flaky verdict in a column of its own.
		"\\begin{tabular}{lrrrrl}\n\\toprule\ninvariant & violated & counted & rate & 95\\% CI & flaky (violated of judged) \\\\\n\\midrule\n",
		"inv-1 & 1 & 2 & 50.0\\% & [9.5\\%, 90.5\\%] & pod\\_cut 1/2 \\\\\n",
		// Underscores are escaped; the control is no row of a findings table.
		"pod\\_cut & 1 & 2 & 50.0\\% & [9.5\\%, 90.5\\%] & inv-1 1/2 \\\\\n\\bottomrule\n\\end{tabular}\n",
		"pod\\_cut & inv-1 & 1 & 2 & 50.0\\% & [9.5\\%, 90.5\\%] & flaky & - & - \\\\\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("latex lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "control") {
		t.Errorf("latex findings tables hold the control:\n%s", r.stdout)
	}
}

func TestReportHTML(t *testing.T) {
	root, a, b := twoRunFolders(t)
	site := filepath.Join(root, "site")
	faultline(t, root, "report", "--format", "html", "-o", site, a, b).expect(t, exitOK)
	for _, f := range []string{"index.html", "rates.svg", "rates.png", "rates-by-scenario.svg", "rates-by-scenario.png", "rates.tex", "rates.csv", "runs/20261101T100000Z-disagree--a1.html"} {
		if _, err := os.Stat(filepath.Join(site, f)); err != nil {
			t.Errorf("site lacks %s: %v", f, err)
		}
	}

	// A folder of the pair drill gets the drills' side-by-side page,
	// linked from its runs' pages.
	pair := filepath.Join(root, "runs", "20261129T133551Z-drills")
	if err := os.CopyFS(pair, os.DirFS("../../suites/drills/report/testdata/pair-fast")); err != nil {
		t.Fatal(err)
	}
	drillSite := filepath.Join(root, "drill-site")
	faultline(t, root, "report", "--format", "html", "-o", drillSite, pair).expect(t, exitOK)
	page, err := os.ReadFile(filepath.Join(drillSite, "folders", filepath.Base(pair), "drill-pair.html"))
	if err != nil || !strings.Contains(string(page), `id="drill-pair-svg"`) {
		t.Errorf("the drill folder's site has no pair page with its drawing (%v)", err)
	}
	for _, f := range []string{"drill-pair.png", "drill-pair.svg"} {
		if _, err := os.Stat(filepath.Join(drillSite, "folders", filepath.Base(pair), f)); err != nil {
			t.Errorf("the pair page's %s is missing: %v", f, err)
		}
	}

	faultline(t, root, "report", "--format", "html", a).expect(t, exitUsage, "give it with -o DIR")
	faultline(t, root, "report", "--format", "html", "--by", "class", "-o", site, a).expect(t, exitUsage, "--by does not apply")
	file := filepath.Join(root, "rates.csv")
	writeTestFile(t, file, "keep")
	faultline(t, root, "report", "--format", "html", "-o", file, a).expect(t, exitError, file+" is a file, not a directory")
	empty := filepath.Join(root, "runs", "20261101T130000Z-empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(root, "site2")
	faultline(t, root, "report", "--format", "html", "-o", fresh, empty).expect(t, exitError, "has no verdicts.jsonl")
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a failed report wrote %s: %v", fresh, err)
	}
}
