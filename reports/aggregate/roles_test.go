package aggregate

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/verdict"
)

var rolesStart = time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)

func judgement(inv string, v verdict.Verdict, exercised *bool, kind string) verdict.Judgement {
	return verdict.Judgement{Invariant: inv, Phase: verdict.Safety, Verdict: v, Reason: strings.ToLower(string(v)) + " by hand", Exercised: exercised, Violation: kind}
}

// ciLikeRuns is a ci set in small: two finding runs of pod-network-cut,
// its null arm, the control that injects the same fault
// (control-endpoints-truthful, recorded with a role and controlOf), an old
// record of a control known only by its labels, and a writer scenario
// whose two violations are of different kinds.
func ciLikeRuns() []verdict.Run {
	base := func(id, scenario, arm string, labels []string, js ...verdict.Judgement) verdict.Run {
		return verdict.Run{RunID: id, Suite: "disagree", Scenario: scenario, Arm: arm, Labels: labels,
			Started: rolesStart, Ended: rolesStart.Add(time.Minute), RunVerdict: verdict.RunJudged, Judgements: js,
			Lab: verdict.LabInfo{Name: "lab11", Kind: "local", TimerProfile: "fast"}}
	}
	gray := []string{"class:gray", "arm:fault"}
	cut1 := base("cut-1", "pod-network-cut", "fault", gray,
		judgement("endpoints-truthful", verdict.Preserved, verdict.Exercised(), ""),
		judgement("graceful-deletion", verdict.Preserved, verdict.NotExercised(), ""))
	cut1.Role = verdict.RoleFinding
	cut1.Load = []verdict.Load{{At: rolesStart, One: 0.5, Five: 0.4, Fifteen: 0.3}, {At: rolesStart.Add(time.Minute), One: 3.2, Five: 1.1, Fifteen: 0.6}}
	cut1.Effect = &verdict.EffectCoverage{Probes: 10, Observed: 7, Failed: 1, Required: 0.5}
	cut2 := base("cut-2", "pod-network-cut", "fault", gray,
		judgement("endpoints-truthful", verdict.Violated, verdict.Exercised(), ""),
		judgement("graceful-deletion", verdict.Preserved, verdict.NotExercised(), ""))
	cut2.Role = verdict.RoleFinding
	null := base("cut-null", "pod-network-cut", "null", []string{"class:gray", "arm:null"},
		judgement("endpoints-truthful", verdict.Violated, nil, ""),
		judgement("graceful-deletion", verdict.Preserved, verdict.NotExercised(), ""))
	null.Role = verdict.RoleNull
	ctl := base("ctl-ep", "control-endpoints-truthful", "fault", []string{"selfcheck", "class:gray", "arm:fault"},
		judgement("endpoints-truthful", verdict.Violated, verdict.Exercised(), ""),
		judgement("graceful-deletion", verdict.Violated, verdict.Exercised(), ""))
	ctl.Role, ctl.ControlOf = verdict.RoleControl, []string{"endpoints-truthful"}
	// Written before roles were recorded: a control only by its labels.
	oldCtl := base("ctl-sc", "control-single-copy", "fault", []string{"selfcheck", "control:single-copy", "class:crash-stop", "arm:fault"},
		judgement("single-copy", verdict.Preserved, nil, ""),
		judgement("endpoints-truthful", verdict.Preserved, nil, ""))
	writer := base("w-1", "writer-cut", "fault", []string{"class:gray", "arm:fault"},
		judgement("acknowledged-writes-survive", verdict.Violated, verdict.Exercised(), "lost-write"))
	writer2 := base("w-2", "writer-cut", "fault", []string{"class:gray", "arm:fault"},
		judgement("acknowledged-writes-survive", verdict.Violated, verdict.Exercised(), "stale-read"))
	writer3 := base("w-3", "writer-cut", "fault", []string{"class:gray", "arm:fault"},
		judgement("acknowledged-writes-survive", verdict.Preserved, nil, ""))
	return []verdict.Run{cut1, cut2, null, ctl, oldCtl, writer, writer2, writer3}
}

func writeRecords(t *testing.T, runs []verdict.Run) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "20261103T090000Z-disagree")
	var b strings.Builder
	for _, r := range runs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	writeFile(t, filepath.Join(dir, VerdictsFile), b.String())
	return dir
}

func markdown(t *testing.T, rep *Report) string {
	t.Helper()
	var out bytes.Buffer
	if err := WriteMarkdown(&out, rep); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// section is the text from the heading that starts with title to the next
// heading of the same level.
func section(t *testing.T, md, title string) string {
	t.Helper()
	i := strings.Index(md, "\n"+title)
	if i < 0 {
		t.Fatalf("no section %q in:\n%s", title, md)
	}
	rest := md[i+1:]
	level := rest[:strings.Index(rest, " ")+1]
	if j := strings.Index(rest[1:], "\n"+level); j >= 0 {
		return rest[:j+1]
	}
	return rest
}

func rateCell(violated, preserved int) string {
	return verdict.Rate{Violated: violated, Preserved: preserved}.String()
}

func TestControlsAreNeverPooledIntoFindings(t *testing.T) {
	rep := build(t, nil, writeRecords(t, ciLikeRuns()))
	md := markdown(t, rep)

	findings := section(t, md, "## Findings by invariant")
	for _, bad := range []string{"control-", "ctl-", "single-copy"} {
		if strings.Contains(findings, bad) {
			t.Errorf("the findings table holds a control (%q):\n%s", bad, findings)
		}
	}
	// endpoints-truthful: 1 violated of 2 finding runs, not 2 of 4 with
	// the control and the null arm pooled in.
	want := "| endpoints-truthful | 1 | 1 | 0 | 0 | " + rateCell(1, 1) + " | " + rateCell(1, 1) + " |"
	if !strings.Contains(findings, want) {
		t.Errorf("findings lack %q:\n%s", want, findings)
	}
	bySc := section(t, md, "## Findings by scenario")
	if strings.Contains(bySc, "control-") || !strings.Contains(bySc, "| pod-network-cut |") {
		t.Errorf("findings by scenario:\n%s", bySc)
	}

	controls := section(t, md, "## Positive controls")
	for _, w := range []string{
		"| ctl-ep | control-endpoints-truthful | endpoints-truthful | VIOLATED, any kind | VIOLATED | hit | violated by hand |",
		// An old record: the control is known from its control: label.
		"| ctl-sc | control-single-copy | single-copy | VIOLATED, any kind | PRESERVED | missed | preserved by hand |",
		"1 hit, 1 missed, 0 VIOLATED of another kind",
	} {
		if !strings.Contains(controls, w) {
			t.Errorf("controls lack %q:\n%s", w, controls)
		}
	}
	// The control's verdict of an invariant it does not control is counted
	// nowhere, and the report says it leaves such verdicts out.
	if strings.Contains(controls, "graceful-deletion") || !strings.Contains(controls, "2 verdicts of control runs on invariants they do not control") {
		t.Errorf("controls' other verdicts:\n%s", controls)
	}
	if !strings.Contains(findings, "| graceful-deletion | 0 |") {
		t.Errorf("findings count the control's graceful-deletion VIOLATED:\n%s", findings)
	}

	nulls := section(t, md, "## Null arms by invariant")
	if !strings.Contains(nulls, "| endpoints-truthful | 1 | 0 | "+rateCell(1, 0)+" |") || !strings.Contains(nulls, "false alarm") {
		t.Errorf("null arms:\n%s", nulls)
	}
}

func TestTablesSayTheyPoolScenarios(t *testing.T) {
	rep := build(t, [][]string{{"class"}, {"invariant", "scenario"}}, writeRecords(t, ciLikeRuns()))
	md := markdown(t, rep)
	byClass := section(t, md, "## Findings by class")
	if !strings.Contains(byClass, "pools the runs of several scenarios") {
		t.Errorf("by class must say it pools scenarios:\n%s", byClass)
	}
	// The control injects the fault pod-network-cut does, with the same
	// class; it must not sit beside it.
	if !strings.Contains(byClass, "| gray | 3 | 1 | 2 | 1 |") {
		t.Errorf("by class, gray: want 3 violated, 1 exercised, 2 unexercised and 1 unrecorded PRESERVED from the finding runs only:\n%s", byClass)
	}
	cross := section(t, md, "## Findings by invariant, scenario")
	if strings.Contains(cross, "pools the runs of several scenarios") {
		t.Errorf("a table keyed by scenario pools none:\n%s", cross)
	}
}

func TestExercisedAndViolationKindsAreApart(t *testing.T) {
	rep := build(t, [][]string{{"invariant"}}, writeRecords(t, ciLikeRuns()))
	md := markdown(t, rep)
	findings := section(t, md, "## Findings by invariant")
	for _, w := range []string{
		"preserved (exercised) | preserved (not exercised) | preserved (not recorded) | rate (all counted) | rate (exercised) |",
		// graceful-deletion: never exercised; the exercised rate has nothing to count.
		"| graceful-deletion | 0 | 0 | 2 | 0 | " + rateCell(0, 2) + " | – |",
		// The writer's violations, told apart by kind.
		// One PRESERVED did not record whether it was exercised: leaving it
		// out would make the exercised rate 2/2.
		"| acknowledged-writes-survive | 2 | 0 | 0 | 1 | " + rateCell(2, 1) + " | unknown: 1 PRESERVED not recorded | lost-write 1, stale-read 1 |",
	} {
		if !strings.Contains(findings, w) {
			t.Errorf("findings lack %q:\n%s", w, findings)
		}
	}
	if !strings.Contains(md, "rate (exercised) = violated / (violated + exercised PRESERVED)") {
		t.Errorf("the report must say what each rate is:\n%s", md)
	}
}

func TestRunsListingShowsLoadAndEffect(t *testing.T) {
	rep := build(t, nil, writeRecords(t, ciLikeRuns()))
	runs := section(t, markdown(t, rep), "## Runs")
	for _, w := range []string{
		"| run | scenario | arm | role | run verdict | load 1/5/15 min (start → end) | effect seen (required share) | record |",
		"| cut-1 | pod-network-cut | fault | finding | JUDGED | 0.50/0.40/0.30 → 3.20/1.10/0.60 | 7/10 probes = 70% (1 failed); required 50% |",
		"| ctl-sc | control-single-copy | fault | control | JUDGED | (not recorded) | (not recorded) |",
		"| cut-null | pod-network-cut | null | null | JUDGED |",
	} {
		if !strings.Contains(runs, w) {
			t.Errorf("runs listing lacks %q:\n%s", w, runs)
		}
	}
}

func TestCSVKeepsRolesApart(t *testing.T) {
	rep := build(t, [][]string{{"invariant"}}, writeRecords(t, ciLikeRuns()))
	var out bytes.Buffer
	if err := WriteCSV(&out, rep); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"role", "arm", "invariant", "scenario", "violated", "preserved", "preserved_exercised", "preserved_not_exercised", "preserved_not_recorded", "rate", "exercised_rate", "violation_kinds", "run_id", "expected", "verdict", "outcome"} {
		if _, ok := col[h]; !ok {
			t.Fatalf("csv header lacks %s: %v", h, recs[0])
		}
	}
	get := func(rec []string, h string) string { return rec[col[h]] }
	found := map[string]bool{}
	for _, rec := range recs[1:] {
		key := get(rec, "by") + "/" + get(rec, "role") + "/" + get(rec, "invariant")
		switch key {
		case "invariant/finding/endpoints-truthful":
			if get(rec, "violated") != "1" || get(rec, "preserved") != "1" || get(rec, "preserved_exercised") != "1" || get(rec, "rate") != "0.500000" {
				t.Errorf("finding row %v", rec)
			}
		case "invariant/null/endpoints-truthful":
			if get(rec, "violated") != "1" || get(rec, "arm") != "null" {
				t.Errorf("null row %v", rec)
			}
		case "invariant/finding/acknowledged-writes-survive":
			if get(rec, "violation_kinds") != "lost-write:1;stale-read:1" || get(rec, "preserved_not_recorded") != "1" || get(rec, "exercised_rate") != "" {
				t.Errorf("writer row %v", rec)
			}
		case "control/control/endpoints-truthful":
			if get(rec, "run_id") != "ctl-ep" || get(rec, "expected") != "VIOLATED" || get(rec, "verdict") != "VIOLATED" || get(rec, "outcome") != "hit" || get(rec, "scenario") != "control-endpoints-truthful" {
				t.Errorf("control row %v", rec)
			}
		case "control/control/single-copy":
			if get(rec, "outcome") != "missed" {
				t.Errorf("old control row %v", rec)
			}
		case "invariant/finding/single-copy":
			t.Errorf("a control's invariant is a finding row: %v", rec)
		}
		found[key] = true
	}
	for _, k := range []string{"invariant/finding/endpoints-truthful", "invariant/null/endpoints-truthful", "control/control/endpoints-truthful", "control/control/single-copy"} {
		if !found[k] {
			t.Errorf("csv has no row %s:\n%v", k, recs)
		}
	}
}

// An application control's fault arm is in tables of its own, beside the
// findings and never pooled with them, and in the CSV with its role.
func TestApplicationControlsAreTablesOfTheirOwn(t *testing.T) {
	runs := ciLikeRuns()
	app := runs[0]
	app.RunID, app.Scenario, app.Role, app.Labels = "app-1", "pod-network-cut-correct-app", verdict.RoleApplication, []string{"class:gray", "arm:fault", verdict.LabelApplicationControl}
	app.Judgements = []verdict.Judgement{judgement("endpoints-truthful", verdict.Violated, verdict.Exercised(), "")}
	old := app
	old.RunID, old.Role = "app-2", ""
	rep := build(t, [][]string{{"invariant"}}, writeRecords(t, append(runs, app, old)))
	md := markdown(t, rep)
	findings := section(t, md, "## Findings by invariant")
	want := "| endpoints-truthful | 1 | 1 | 0 | 0 | " + rateCell(1, 1) + " |"
	if !strings.Contains(findings, want) {
		t.Errorf("findings pool the application controls (want %q):\n%s", want, findings)
	}
	apps := section(t, md, "## Application controls by invariant")
	if !strings.Contains(apps, "| endpoints-truthful | 2 | 0 |") || !strings.Contains(apps, "never pooled with the findings") {
		t.Errorf("application controls:\n%s", apps)
	}
	if !strings.Contains(md, "2 application-control runs") {
		t.Errorf("the roles line does not count the application controls:\n%s", md)
	}
	var out bytes.Buffer
	if err := WriteCSV(&out, rep); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows[1:] {
		if r[1] == verdict.RoleApplication && r[3] == "endpoints-truthful" && r[5] == "2" {
			found = true
		}
	}
	if !found {
		t.Errorf("no CSV row of the application controls: %v", rows)
	}
}
