package aggregate

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/verdict"
)

// line writes one run record as a suite would, by hand rather than through
// verdict.Run, so the test also pins the file format.
func line(runID, scenario, arm, runVerdict, reason string, labels []string, profile string, judgements ...string) string {
	return fmt.Sprintf(`{"runID":%q,"suite":"disagree","scenario":%q,"arm":%q,"labels":[%s],"started":"2026-11-01T10:00:00Z","ended":"2026-11-01T10:05:00Z","runVerdict":%q,"runReason":%q,"judgements":[%s],"lab":{"name":"lab11","kind":"local","timerProfile":%q,"kubernetesVersion":"v1.36.3","etcdVersion":"v3.6.8"},"gitCommit":"abc123"}`,
		runID, scenario, arm, quoteAll(labels), runVerdict, reason, strings.Join(judgements, ","), profile)
}

func judge(invariant, v string) string {
	return fmt.Sprintf(`{"invariant":%q,"phase":"safety","verdict":%q,"reason":"hand-made"}`, invariant, v)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ",")
}

var (
	crashLabels = []string{"paper:disagree", "class:crash-stop", "fault:power-off", "component:kubelet", "arm:fault"}
	grayLabels  = []string{"paper:disagree", "class:gray", "fault:slow-etcd", "component:etcd", "component:apiserver", "arm:fault"}
	nullLabels  = []string{"paper:disagree", "class:crash-stop", "fault:power-off", "component:kubelet", "arm:null"}
)

// writeRuns lays out two run folders with known counts:
//
//	folder A: 10 judged fault runs of worker-power-off: single-copy 1 violated
//	          + 9 preserved; endpoints 5 violated + 5 preserved.
//	          3 judged null runs: single-copy 2 preserved + 1 detector
//	          invalid; endpoints 3 not applicable.
//	folder B: 10 judged fault runs of etcd-slow: single-copy 10 preserved;
//	          endpoints 10 insufficient data. 2 FAULT_INEFFECTIVE runs that
//	          each claim both invariants violated, and 1 ABORTED run with no
//	          judgements: none of these may count.
func writeRuns(t *testing.T) (a, b string) {
	t.Helper()
	root := t.TempDir()
	a, b = filepath.Join(root, "20261101T100000Z-disagree"), filepath.Join(root, "20261102T100000Z-disagree")
	var la, lb []string
	for i := 0; i < 10; i++ {
		sc, ep := "PRESERVED", "PRESERVED"
		if i == 0 {
			sc = "VIOLATED"
		}
		if i < 5 {
			ep = "VIOLATED"
		}
		la = append(la, line(fmt.Sprintf("a-%d", i), "worker-power-off", "fault", "JUDGED", "", crashLabels, "fast",
			judge("single-copy", sc), judge("endpoints-converge", ep)))
	}
	for i := 0; i < 3; i++ {
		sc := "PRESERVED"
		if i == 2 {
			sc = "DETECTOR_INVALID"
		}
		la = append(la, line(fmt.Sprintf("a-null-%d", i), "worker-power-off", "null", "JUDGED", "", nullLabels, "fast",
			judge("single-copy", sc), judge("endpoints-converge", "NOT_APPLICABLE")))
	}
	for i := 0; i < 10; i++ {
		lb = append(lb, line(fmt.Sprintf("b-%d", i), "etcd-slow", "fault", "JUDGED", "", grayLabels, "fast",
			judge("single-copy", "PRESERVED"), judge("endpoints-converge", "INSUFFICIENT_DATA")))
	}
	for i := 0; i < 2; i++ {
		lb = append(lb, line(fmt.Sprintf("b-fi-%d", i), "etcd-slow", "fault", "FAULT_INEFFECTIVE", "effect probe saw no slow write", grayLabels, "fast",
			judge("single-copy", "VIOLATED"), judge("endpoints-converge", "VIOLATED")))
	}
	lb = append(lb, "", line("b-ab", "etcd-slow", "fault", "ABORTED", "reset failed: etcd2 did not start", grayLabels, "fast"))
	writeFile(t, filepath.Join(a, VerdictsFile), strings.Join(la, "\n")+"\n")
	writeFile(t, filepath.Join(b, VerdictsFile), strings.Join(lb, "\n")+"\n")
	return a, b
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func build(t *testing.T, groupings [][]string, dirs ...string) *Report {
	t.Helper()
	in, err := ReadRunFolders(dirs)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(in, groupings)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func row(t *testing.T, tab Table, key ...string) Row {
	t.Helper()
	for _, r := range tab.Rows {
		if strings.Join(r.Key, "/") == strings.Join(key, "/") {
			return r
		}
	}
	var keys []string
	for _, r := range tab.Rows {
		keys = append(keys, strings.Join(r.Key, "/"))
	}
	t.Fatalf("%s: no row %v (rows: %v)", tab.Title(), key, keys)
	return Row{}
}

func TestByInvariantCountsAndIntervals(t *testing.T) {
	a, b := writeRuns(t)
	rep := build(t, nil, a, b)
	if rep.Records != 26 || rep.Judged != 23 || len(rep.Excluded) != 3 {
		t.Fatalf("records %d judged %d excluded %d, want 26 23 3", rep.Records, rep.Judged, len(rep.Excluded))
	}
	if len(rep.Findings) != 2 || rep.Findings[0].Title() != "Findings by invariant" || rep.Findings[1].Title() != "Findings by scenario" {
		t.Fatalf("default tables: %+v", rep.Findings)
	}
	if len(rep.NullArms) != 2 || rep.NullArms[0].Title() != "Null arms by invariant" {
		t.Fatalf("null-arm tables: %+v", rep.NullArms)
	}
	byInv := rep.Findings[0]

	sc := row(t, byInv, "fault", "single-copy")
	if sc.Tally.Violated != 1 || sc.Tally.Preserved != 19 || sc.Excluded != 2 || sc.Runs != 20 {
		t.Errorf("fault/single-copy: %+v, want 1 violated, 19 preserved, 2 excluded, 20 runs", sc)
	}
	// 1/20: bounds found independently of the closed form (see the
	// verdict package's reference values).
	lo, hi, ok := sc.Tally.Wilson()
	if !ok || math.Abs(lo-0.0088814) > 1e-6 || math.Abs(hi-0.2361312) > 1e-6 {
		t.Errorf("fault/single-copy interval [%f, %f], want [0.0088814, 0.2361312]", lo, hi)
	}

	ep := row(t, byInv, "fault", "endpoints-converge")
	if ep.Tally.Violated != 5 || ep.Tally.Preserved != 5 || ep.Tally.Other[verdict.InsufficientData] != 10 || ep.Excluded != 2 {
		t.Errorf("fault/endpoints-converge: %+v, want 5/10 with 10 insufficient data and 2 excluded", ep)
	}
	lo, hi, _ = ep.Tally.Wilson()
	if math.Abs(lo-0.2365931) > 1e-6 || math.Abs(hi-0.7634069) > 1e-6 {
		t.Errorf("fault/endpoints-converge interval [%f, %f], want [0.2365931, 0.7634069]", lo, hi)
	}

	// The null arm is in a table of its own, never pooled with findings.
	nullInv := rep.NullArms[0]
	nsc := row(t, nullInv, "null", "single-copy")
	if nsc.Tally.Violated != 0 || nsc.Tally.Preserved != 2 || nsc.Tally.Other[verdict.DetectorInvalid] != 1 || nsc.Runs != 3 {
		t.Errorf("null/single-copy: %+v", nsc)
	}
	nep := row(t, nullInv, "null", "endpoints-converge")
	if nep.Tally.N() != 0 || nep.Tally.Other[verdict.NotApplicable] != 3 {
		t.Errorf("null/endpoints-converge: %+v", nep)
	}
	if _, ok := nep.Tally.Value(); ok {
		t.Error("a row with nothing counted must have no rate")
	}
	if len(byInv.Rows) != 2 || len(nullInv.Rows) != 2 {
		t.Errorf("by invariant has %d finding and %d null-arm rows, want 2 and 2", len(byInv.Rows), len(nullInv.Rows))
	}
	// Both scenarios judged both invariants: the rows pool them, and say so.
	// Each scenario ran ten times, so single-copy's row pools the
	// repetitions of two scenarios, which are not trials of one thing: no
	// interval, and the table says why. endpoints-converge counted only
	// worker-power-off's runs, trials of one experiment.
	if len(byInv.Notes) != 2 || !strings.Contains(byInv.Notes[0], "several scenarios (up to 2 in one row)") || byInv.Notes[1] != PooledRepetitionsNote {
		t.Errorf("by invariant must say it pools scenarios and their repetitions, and nothing else: %v", byInv.Notes)
	}
	if !sc.Pool.PoolsRepetitions() || sc.Pool.Scenarios() != 2 || ep.Pool.PoolsRepetitions() {
		t.Errorf("pooled repetitions: single-copy %v (%d scenarios), endpoints-converge %v", sc.Pool.PoolsRepetitions(), sc.Pool.Scenarios(), ep.Pool.PoolsRepetitions())
	}
	if len(nullInv.Notes) != 0 {
		t.Errorf("one null-arm scenario needs no pooling note: %v", nullInv.Notes)
	}
	if len(rep.Findings[1].Notes) == 0 || !strings.Contains(rep.Findings[1].Notes[0], "several invariants") {
		t.Errorf("by scenario must say it pools invariants: %v", rep.Findings[1].Notes)
	}
}

func TestExcludedRunsAreListedWithWhy(t *testing.T) {
	a, b := writeRuns(t)
	rep := build(t, nil, a, b)
	got := map[string]string{}
	for _, r := range rep.Excluded {
		got[r.RunID] = string(r.RunVerdict) + ": " + r.RunReason + " @" + filepath.Base(r.File) + fmt.Sprint(":", r.Line)
	}
	want := map[string]string{
		"b-fi-0": "FAULT_INEFFECTIVE: effect probe saw no slow write @verdicts.jsonl:11",
		"b-fi-1": "FAULT_INEFFECTIVE: effect probe saw no slow write @verdicts.jsonl:12",
		"b-ab":   "ABORTED: reset failed: etcd2 did not start @verdicts.jsonl:14",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("excluded %s: got %q, want %q", id, got[id], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("excluded %v", got)
	}
}

func TestByLabelPrefix(t *testing.T) {
	a, b := writeRuns(t)
	rep := build(t, [][]string{{"class"}, {"component"}, {"invariant", "scenario"}}, a, b)

	byClass := rep.Findings[0]
	if byClass.Title() != "Findings by class" {
		t.Fatalf("title %q", byClass.Title())
	}
	crash := row(t, byClass, "fault", "crash-stop")
	if crash.Tally.Violated != 6 || crash.Tally.Preserved != 14 || crash.Runs != 10 {
		t.Errorf("fault/crash-stop: %+v, want 6/20 over 10 runs", crash)
	}
	gray := row(t, byClass, "fault", "gray")
	if gray.Tally.Violated != 0 || gray.Tally.Preserved != 10 || gray.Tally.Other[verdict.InsufficientData] != 10 || gray.Excluded != 4 {
		t.Errorf("fault/gray: %+v, want 0/10, 10 insufficient, 4 excluded", gray)
	}
	row(t, rep.NullArms[0], "null", "crash-stop")

	byComp := rep.Findings[1]
	for _, c := range []string{"etcd", "apiserver"} {
		r := row(t, byComp, "fault", c)
		if r.Tally.Preserved != 10 || r.Runs != 10 {
			t.Errorf("fault/%s: %+v: a run with two component labels counts in both rows", c, r)
		}
	}
	if !strings.Contains(strings.Join(byComp.Notes, " "), "more than one component: label") {
		t.Errorf("by component must say runs count in several rows: %v", byComp.Notes)
	}

	cross := rep.Findings[2]
	if strings.Join(cross.Columns, ",") != "arm,invariant,scenario" {
		t.Fatalf("columns %v", cross.Columns)
	}
	r := row(t, cross, "fault", "endpoints-converge", "worker-power-off")
	if r.Tally.Violated != 5 || r.Tally.Preserved != 5 {
		t.Errorf("fault/endpoints-converge/worker-power-off: %+v", r)
	}
	if len(cross.Rows) != 4 || len(rep.NullArms[2].Rows) != 2 {
		t.Errorf("cross tables have %d finding and %d null-arm rows, want 4 and 2", len(cross.Rows), len(rep.NullArms[2].Rows))
	}
}

func TestRunsWithoutTheLabelGoToNone(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, VerdictsFile), line("x", "s", "fault", "JUDGED", "", []string{"class:gray"}, "fast", judge("i", "VIOLATED"))+"\n"+
		line("y", "s", "fault", "JUDGED", "", []string{"fault:kill"}, "fast", judge("i", "PRESERVED"))+"\n")
	rep := build(t, [][]string{{"class"}}, dir)
	if r := row(t, rep.Findings[0], "fault", None); r.Tally.Preserved != 1 {
		t.Errorf("unlabelled run: %+v", r)
	}
	if rep.Findings[0].Rows[len(rep.Findings[0].Rows)-1].Key[1] != None {
		t.Error("(none) must sort last")
	}
}

func TestUnknownDimensionIsAnError(t *testing.T) {
	a, _ := writeRuns(t)
	in, err := ReadRunFolders([]string{a})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(in, [][]string{{"clas"}})
	if err == nil || !strings.Contains(err.Error(), "no run has a clas:<value> label") || !strings.Contains(err.Error(), "class, component, fault") {
		t.Fatalf("unknown dimension: %v", err)
	}
}

func TestMixedProfilesWarn(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, VerdictsFile), line("x", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "VIOLATED"))+"\n"+
		line("y", "s", "fault", "JUDGED", "", nil, "kubernetes-defaults", judge("i", "PRESERVED"))+"\n")
	rep := build(t, nil, dir)
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "2 timer profiles (fast, kubernetes-defaults)") || !strings.Contains(rep.Warnings[0], "--by profile") {
		t.Fatalf("warnings %v", rep.Warnings)
	}
	rep = build(t, [][]string{{"invariant", "profile"}}, dir)
	if r := row(t, rep.Findings[0], "fault", "i", "fast"); r.Tally.Violated != 1 || r.Tally.N() != 1 {
		t.Errorf("split by profile: %+v", r)
	}
}

func TestMalformedInputNamesFileAndLine(t *testing.T) {
	good := line("x", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "PRESERVED"))
	cases := []struct {
		name, content, want string
	}{
		{"truncated json", good + "\n\n" + `{"runID": "y", "scenario":` + "\n" + good + "\n", ":3: malformed run record"},
		{"misspelt verdict field", strings.Replace(good, `"verdict":`, `"verdikt":`, 1), ":1: incomplete run record: judgements[0].verdict is missing"},
		{"two values", good + " " + good + "\n", ":1: malformed run record: more than one JSON value"},
		{"unknown verdict", strings.Replace(good, "PRESERVED", "MAYBE", 1), `:1: malformed run record: verdict: "MAYBE" is not a verdict`},
		{"unknown run verdict", strings.Replace(good, `"JUDGED"`, `"FINE"`, 1), `:1: malformed run record: run verdict: "FINE"`},
		{"missing run verdict", strings.Replace(good, `"runVerdict":"JUDGED",`, "", 1), ":1: incomplete run record: runVerdict is missing"},
		{"missing verdict", strings.Replace(good, `"verdict":"PRESERVED",`, "", 1), ":1: incomplete run record: judgements[0].verdict is missing"},
		{"missing scenario", strings.Replace(good, `"scenario":"s",`, "", 1), ":1: incomplete run record: scenario is missing"},
		{"invariant judged twice", line("x", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "PRESERVED"), judge("i", "VIOLATED")),
			`:1: incomplete run record: judgements[1].invariant "i" was already judged in judgements[0]`},
		{"not json at all", "hello\n", ":1: malformed run record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, VerdictsFile)
			// Every line ends in a newline: an unterminated last line is a
			// record cut short, tested on its own.
			writeFile(t, file, c.content+"\n")
			_, err := ReadRunFolders([]string{dir})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), file+c.want) {
				t.Errorf("error %q does not contain %q", err, file+c.want)
			}
		})
	}
}

func TestFoldersMustExistAndBeGivenOnce(t *testing.T) {
	a, _ := writeRuns(t)
	if _, err := ReadRunFolders(nil); err == nil || !strings.Contains(err.Error(), "no run folders") {
		t.Errorf("no folders: %v", err)
	}
	empty := t.TempDir()
	if _, err := ReadRunFolders([]string{empty}); err == nil || !strings.Contains(err.Error(), "has no verdicts.jsonl") {
		t.Errorf("folder without records: %v", err)
	}
	if _, err := ReadRunFolders([]string{filepath.Join(empty, "nope")}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing folder: %v", err)
	}
	_, err := ReadRunFolders([]string{a, a})
	if err == nil || !strings.Contains(err.Error(), "was already read at") {
		t.Errorf("folder given twice: %v", err)
	}
	// A verdicts file may be given directly.
	in, err := ReadRunFolders([]string{filepath.Join(a, VerdictsFile)})
	if err != nil || len(in.Records) != 13 {
		t.Errorf("verdicts file given directly: %+v, %v", in, err)
	}
}

func TestParseGrouping(t *testing.T) {
	for in, want := range map[string]string{
		"invariant":           "invariant",
		"invariant,scenario":  "invariant|scenario",
		" class: , fault ":    "class|fault",
		"component":           "component",
		"arm,invariant,suite": "arm|invariant|suite",
	} {
		got, err := ParseGrouping(in)
		if err != nil || strings.Join(got, "|") != want {
			t.Errorf("ParseGrouping(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                    "empty dimension",
		"invariant,":          "empty dimension",
		"class:gray":          "not a dimension name",
		"invariant,invariant": "given twice",
	} {
		if _, err := ParseGrouping(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseGrouping(%q) error %v, want %q", in, err, want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	a, b := writeRuns(t)
	rep := build(t, nil, a, b)
	var out bytes.Buffer
	if err := WriteMarkdown(&out, rep); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{
		"26 run records from 2 run folders: 23 judged, 3 excluded",
		"- Timer profiles: fast",
		"- Kubernetes: v1.36.3",
		"## Findings by invariant",
		"| invariant | violated | preserved (exercised) | preserved (not exercised) | preserved (not recorded) | rate (all counted) | rate (exercised) | flaky (VIOLATED of judged) | insufficient data | not applicable | detector invalid | excluded | runs |",
		// Old records: no PRESERVED says whether it was exercised. Each
		// scenario ran ten times: single-copy's rate pools the
		// repetitions of two, and gets no interval.
		"| single-copy | 1 | 0 | 0 | 19 | 1/20 = 5.0% (pools the repetitions of 2 scenarios: no interval) | unknown: 19 PRESERVED not recorded | worker-power-off 1/10 | 0 | 0 | 0 | 2 | 20 |",
		"| endpoints-converge | 5 | 0 | 0 | 5 | 5/10 = 50.0% [23.7%, 76.3%] | unknown: 5 PRESERVED not recorded | worker-power-off 5/10 | 10 | 0 | 0 | 2 | 20 |",
		"## Stability over repetitions",
		"| worker-power-off | single-copy | 1 of 10 | 1/10 = 10.0% [1.8%, 40.4%] | **flaky** | - | 10 | - |",
		"| etcd-slow | single-copy | 0 of 10 | 0/10 = 0.0% [0.0%, 27.8%] | PRESERVED every time | FAULT_INEFFECTIVE 2, ABORTED 1 | 13 | - |",
		"| etcd-slow | endpoints-converge | 0 of 0 | - | not judged | INSUFFICIENT_DATA 10, FAULT_INEFFECTIVE 2, ABORTED 1 | 13 | - |",
		"## Findings by scenario",
		"## Positive controls\n\nEach control",
		"No control runs in these records.",
		"## Null arms by invariant",
		"| invariant | false alarms (VIOLATED) | preserved | false-alarm rate | flaky (VIOLATED of judged) | insufficient data | not applicable | detector invalid | excluded | runs |",
		"| endpoints-converge | 0 | 0 | – | - | 0 | 3 | 0 | 0 | 3 |",
		"| single-copy | 0 | 2 | 0/2 = 0.0% [0.0%, 65.8%] | - | 0 | 0 | 1 | 0 | 3 |",
		"## Null arms by scenario",
		"## Runs",
		"| a-0 | worker-power-off | fault | finding | JUDGED | (not recorded) | (not recorded) |",
		"## Excluded runs",
		"| b-ab | etcd-slow | fault | finding | ABORTED | reset failed: etcd2 did not start |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
}

func TestCSV(t *testing.T) {
	a, b := writeRuns(t)
	rep := build(t, [][]string{{"invariant"}, {"class"}}, a, b)
	var out bytes.Buffer
	if err := WriteCSV(&out, rep); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := strings.Join(recs[0], ",")
	if head != "by,role,arm,invariant,class,scenario,violated,preserved,preserved_exercised,preserved_not_exercised,preserved_not_recorded,counted,rate,ci95_low,ci95_high,exercised_counted,exercised_rate,exercised_ci95_low,exercised_ci95_high,violation_kinds,insufficient_data,not_applicable,detector_invalid,excluded,runs,run_id,expected,verdict,outcome,flaky,pooled_scenarios,stability,fault_ineffective,aborted,quantities" {
		t.Fatalf("header %s", head)
	}
	found := map[string]bool{}
	for _, r := range recs[1:] {
		found[strings.Join(r, ",")] = true
	}
	for _, want := range []string{
		// The repetitions of two scenarios pooled: the rate, no interval.
		"invariant,finding,fault,single-copy,,,1,19,0,0,19,20,0.050000,,,,,,,,0,0,0,2,20,,,,,worker-power-off single-copy:1/10,2,,,,",
		"invariant,null,null,endpoints-converge,,,0,0,0,0,0,0,,,,0,,,,,0,3,0,0,3,,,,,,,,,,",
		// 6/20 pools the invariants of one scenario: bounds by bisection of
		// the score statistic, as in the verdict package.
		"class,finding,fault,,crash-stop,,6,14,0,0,14,20,0.300000,0.145477,0.518973,,,,,,0,0,0,0,10,,,,,worker-power-off endpoints-converge:5/10;worker-power-off single-copy:1/10,,,,,",
		// Each scenario × arm × invariant over its repetitions.
		"stability,finding,fault,single-copy,,worker-power-off,1,9,,,,10,0.100000,0.017876,0.404150,,,,,,0,0,0,,10,,,,,,,flaky,0,0,",
		"stability,finding,fault,endpoints-converge,,etcd-slow,0,0,,,,0,,,,,,,,,10,0,0,,13,,,,,,,not judged,2,1,",
	} {
		if !found[want] {
			t.Errorf("csv lacks row %s\n%v", want, recs)
		}
	}
	if len(recs) != 1+4+3+6 {
		t.Errorf("csv has %d rows, want 14", len(recs))
	}
	var ex bytes.Buffer
	if err := WriteExcludedSummary(&ex, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ex.String(), "3 of 26 run records excluded") || !strings.Contains(ex.String(), "FAULT_INEFFECTIVE: effect probe saw no slow write") {
		t.Errorf("excluded summary:\n%s", ex.String())
	}
}

func TestParentOfRunFoldersIsNotARunFolder(t *testing.T) {
	a, _ := writeRuns(t)
	parent := filepath.Dir(a)
	_, err := ReadRunFolders([]string{parent})
	if err == nil || !strings.Contains(err.Error(), "is not a run folder but holds 2 of them") {
		t.Fatalf("parent folder: %v", err)
	}
}

func TestJudgedRunWithoutVerdictsWarns(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, VerdictsFile), line("x", "s", "fault", "JUDGED", "", nil, "fast")+"\n")
	rep := build(t, nil, dir)
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "run x (scenario s, ") || !strings.Contains(rep.Warnings[0], "records no verdicts") {
		t.Errorf("warnings %v", rep.Warnings)
	}
}

func TestByArmAlone(t *testing.T) {
	a, b := writeRuns(t)
	rep := build(t, [][]string{{"arm"}}, a, b)
	tab := rep.Findings[0]
	if tab.Title() != "Findings by arm" || len(tab.Columns) != 1 {
		t.Fatalf("by arm: %q %v", tab.Title(), tab.Columns)
	}
	// fault: 6 violated of 20 (A) + 0 of 10 (B); null: 0 of 2.
	if r := row(t, tab, "fault"); r.Tally.Violated != 6 || r.Tally.Preserved != 24 || r.Runs != 20 {
		t.Errorf("fault: %+v", r)
	}
	if r := row(t, rep.NullArms[0], "null"); r.Tally.Preserved != 2 || r.Tally.Other[verdict.NotApplicable] != 3 {
		t.Errorf("null: %+v", r)
	}
}

func TestCutShortLastLineIsLeftOutAndReported(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, VerdictsFile)
	good := line("x", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "VIOLATED"))
	writeFile(t, file, good+"\n\n"+`{"runID":"y","scenario":"s","arm":"fault","runVerd`)
	rep := build(t, nil, dir)
	if rep.Records != 1 || len(rep.CutShort) != 1 || rep.CutShort[0] != file+":3" {
		t.Fatalf("records %d, cut short %v", rep.Records, rep.CutShort)
	}
	var md, ex bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "1 last line cut short by a crash (no final newline) and left out: "+file+":3") {
		t.Errorf("markdown does not report the cut-short line:\n%s", md.String())
	}
	if err := WriteExcludedSummary(&ex, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ex.String(), "left out: "+file+":3") {
		t.Errorf("summary: %s", ex.String())
	}
}

func TestApplicabilityTablesAreReported(t *testing.T) {
	a, b := writeRuns(t)
	row1 := `{"faultClass":"partition","invariant":"clock-monotonic","reason":"a partition does not touch clocks"}`
	row2 := `{"faultClass":"clock-skew","invariant":"single-copy","reason":"engineered"}`
	writeFile(t, filepath.Join(a, "applicability.json"), "["+row1+"]")
	writeFile(t, filepath.Join(b, "applicability.json"), "["+row1+","+row2+"]")

	rep := build(t, nil, a, b)
	if len(rep.Applicability) != 2 || rep.Applicability[0].FaultClass != "clock-skew" || rep.Applicability[1].Reason != "a partition does not touch clocks" {
		t.Errorf("union %+v", rep.Applicability)
	}
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "2 different applicability tables") {
		t.Errorf("warnings %v", rep.Warnings)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| partition | clock-monotonic | a partition does not touch clocks |") {
		t.Errorf("markdown lacks the applicability row:\n%s", md.String())
	}

	// One table, a different reason for the same row, and a folder with none.
	writeFile(t, filepath.Join(b, "applicability.json"), `[{"faultClass":"partition","invariant":"clock-monotonic","reason":"other"}]`)
	c := filepath.Join(filepath.Dir(a), "third")
	writeFile(t, filepath.Join(c, VerdictsFile), line("c1", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "PRESERVED"))+"\n")
	rep = build(t, nil, a, b, c)
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), "give different reasons for fault class partition × invariant clock-monotonic") {
		t.Errorf("warnings %v", rep.Warnings)
	}
	if len(rep.NoApplicability) != 1 || rep.NoApplicability[0] != c {
		t.Errorf("folders without a table: %v", rep.NoApplicability)
	}

	writeFile(t, filepath.Join(b, "applicability.json"), `[{"faultClass":"partition"}]`)
	if _, err := ReadRunFolders([]string{b}); err == nil || !strings.Contains(err.Error(), "applicability.json: applicability row 0 needs faultClass and invariant") {
		t.Errorf("incomplete row: %v", err)
	}
	writeFile(t, filepath.Join(b, "applicability.json"), `{`)
	if _, err := ReadRunFolders([]string{b}); err == nil || !strings.Contains(err.Error(), "applicability.json: malformed applicability table") {
		t.Errorf("malformed table: %v", err)
	}
}

func TestUnknownFieldsAreIgnored(t *testing.T) {
	dir := t.TempDir()
	rec := strings.Replace(line("x", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "VIOLATED")), `"arm"`, `"newerField":{"a":1},"arm"`, 1)
	writeFile(t, filepath.Join(dir, VerdictsFile), rec+"\n")
	rep := build(t, nil, dir)
	if r := row(t, rep.Findings[0], "fault", "i"); r.Tally.Violated != 1 {
		t.Errorf("row %+v", r)
	}
}

func TestUnrecordedProfileIsNotPooledSilently(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, VerdictsFile), line("x", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "VIOLATED"))+"\n"+
		line("y", "s", "fault", "JUDGED", "", nil, "", judge("i", "PRESERVED"))+"\n")
	rep := build(t, nil, dir)
	if strings.Join(rep.Profiles, ",") != "(not recorded),fast" || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "2 timer profiles") {
		t.Errorf("profiles %v, warnings %v", rep.Profiles, rep.Warnings)
	}
}

func TestEmulatedFaultsAreListed(t *testing.T) {
	dir := t.TempDir()
	emulated := strings.Replace(line("x", "clock-skew-worker", "fault", "JUDGED", "", nil, "fast", judge("i", "PRESERVED")),
		`"gitCommit"`, `"faultKind":"clock-skew","emulation":"emulated: per-process vDSO skew","gitCommit"`, 1)
	writeFile(t, filepath.Join(dir, VerdictsFile), emulated+"\n"+line("y", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "PRESERVED"))+"\n")
	rep := build(t, nil, dir)
	if strings.Join(rep.Emulations, "|") != "clock-skew: emulated: per-process vDSO skew" {
		t.Errorf("emulations %q", rep.Emulations)
	}
	var out bytes.Buffer
	if err := WriteMarkdown(&out, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "- Emulated: clock-skew: emulated: per-process vDSO skew\n") {
		t.Errorf("markdown does not list the emulation:\n%s", out.String())
	}
}

// Runs judged again name their checker in the header; pooled with runs
// that were not, and with verdicts that could not be judged again, the
// report warns.
func TestRejudgedRunsSayWhoJudgedThemAgain(t *testing.T) {
	dir := t.TempDir()
	again := strings.TrimSuffix(line("x", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "VIOLATED")), "}") +
		`,"rejudged":{"at":"2026-11-01T10:00:00Z","gitCommit":"abc123","notRejudged":[{"invariant":"j","why":"no bound recorded"}]}}`
	writeFile(t, filepath.Join(dir, VerdictsFile), again+"\n"+line("y", "s", "fault", "JUDGED", "", nil, "fast", judge("i", "PRESERVED"))+"\n")
	rep := build(t, nil, dir)
	if !slices.Equal(rep.RejudgedBy, []string{"abc123"}) {
		t.Errorf("re-judged by %v", rep.RejudgedBy)
	}
	warnings := strings.Join(rep.Warnings, "\n")
	for _, want := range []string{"1 of these 2 runs were judged again (faultline rejudge) and the others were not", "could not be judged again and are in no row (j in 1 run)"} {
		if !strings.Contains(warnings, want) {
			t.Errorf("warnings lack %q: %v", want, rep.Warnings)
		}
	}
	var b strings.Builder
	if err := WriteMarkdown(&b, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "- Judged again by the checker at: abc123 (the commits above are the runs')") {
		t.Errorf("markdown header:\n%s", b.String())
	}
}
