package reports

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
)

var rolesRuns = verdicttest.RolesRuns

func TestSummaryKeepsRolesApart(t *testing.T) {
	s := Summary("disagree", rolesRuns(), nil)
	from, to := strings.Index(s, "## Findings"), strings.Index(s, "\n## Positive controls")
	if from < 0 || to < from {
		t.Fatalf("summary has no findings section before its controls:\n%s", s)
	}
	rates := s[from:to]
	if strings.Contains(rates, "single-copy") || !strings.Contains(rates, "| endpoints-truthful | 0 | 1 | 0 | 0 | 0/1 = 0.0% [") {
		t.Errorf("findings rates pool a control or the null arm:\n%s", rates)
	}
	for _, want := range []string{
		"| graceful-deletion | 0 | 0 | 1 | 0 | 0/1 = 0.0% [0.0%, 79.3%] | 0/0 (no counted verdicts) |",
		"| acknowledged-writes-survive | 1 | 0 | 0 | 0 | 1/1 = 100.0% [20.7%, 100.0%] | 1/1 = 100.0% [20.7%, 100.0%] | stale-read 1 |",
		"## Positive controls",
		"| c | control-endpoints-truthful | endpoints-truthful | VIOLATED, any kind | VIOLATED | hit | because violated |",
		"| o | control-single-copy | single-copy | VIOLATED, any kind | PRESERVED | missed | because preserved |",
		"## Null arms",
		"| endpoints-truthful | 1 | 0 | 1/1 = 100.0% [20.7%, 100.0%] |",
		// Runs: role, load and effect coverage.
		"| run | scenario | arm | role | run verdict | spec | seconds | load 1/5/15 min (start → end) | effect seen (required share) |",
		"| f | pod-network-cut | fault | finding | JUDGED | - | 2.0 | 0.50/0.40/0.30 → 3.20/1.10/0.60 | 7/10 probes = 70% (1 failed); required 50% |",
		"| o | control-single-copy | fault | control | JUDGED | - | 2.0 | (not recorded) | (not recorded) |",
		// Per run: exercised, the part of the run, the kind of violation.
		"### control-endpoints-truthful [fault, control]: JUDGED",
		"Positive control of endpoints-truthful (any kind): expected VIOLATED.",
		"| graceful-deletion | safety | PRESERVED | no: no pod left the API | - | none left the API |",
		"| acknowledged-writes-survive | convergence | VIOLATED (stale-read) | yes | settle | read 41 of 42 |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// A stale read that lost no write is PRESERVED and counts as such, but the
// anomaly it recorded is shown beside the violation kinds, never dropped.
func TestTallyShowsAnomaliesItDoesNotCount(t *testing.T) {
	var tally Tally
	tally.Add(verdict.Judgement{Invariant: "acknowledged-writes-survive", Verdict: verdict.Preserved, Exercised: verdict.Exercised(), Anomalies: []string{"stale-read"}})
	tally.Add(verdict.Judgement{Invariant: "acknowledged-writes-survive", Verdict: verdict.Violated, Violation: "lost-write"})
	if tally.Violated != 1 || tally.Preserved != 1 {
		t.Fatalf("counted %d violated, %d preserved, want 1 and 1", tally.Violated, tally.Preserved)
	}
	if got, want := tally.ViolationKinds(), "lost-write 1, stale-read (seen, not counted) 1"; got != want {
		t.Errorf("violation kinds %q, want %q", got, want)
	}
	if got, want := tally.ViolationKindsField(), "lost-write:1;stale-read (seen, not counted):1"; got != want {
		t.Errorf("violation kinds field %q, want %q", got, want)
	}
}

// An application control's fault arm (a correct application under a
// finding's fault) is reported in a section of its own, never in the
// findings' rates.
func TestSummaryKeepsApplicationControlsOutOfTheFindings(t *testing.T) {
	app := verdicttest.Run("a", verdict.RunJudged, verdicttest.J("single-writer-at-storage", verdict.Violated), verdicttest.J("acknowledged-data-survives", verdict.Preserved))
	app.Scenario, app.Role, app.Labels = "ledger-locked-force-deleted", verdict.RoleApplication, []string{verdict.LabelApplicationControl}
	// Written without a role: its label says it.
	old := verdicttest.Run("b", verdict.RunJudged, verdicttest.J("single-writer-at-storage", verdict.Violated))
	old.Scenario, old.Labels = "ledger-locked-force-deleted", []string{verdict.LabelApplicationControl}
	s := Summary("splitbrain", append(rolesRuns(), app, old), nil)
	from, to := strings.Index(s, "## Findings"), strings.Index(s, "\n## Positive controls")
	if from < 0 || to < from {
		t.Fatalf("summary has no findings section before its controls:\n%s", s)
	}
	if rates := s[from:to]; strings.Contains(rates, "single-writer-at-storage") || strings.Contains(rates, "acknowledged-data-survives") {
		t.Errorf("findings rates pool an application control:\n%s", rates)
	}
	for _, want := range []string{
		"- roles: 2 finding, 2 control, 2 application control, 1 null arm",
		"## Application controls",
		"| single-writer-at-storage | 2 | 0 | 2/2 = 100.0% [",
		"| acknowledged-data-survives | 0 | 1 | 0/1 = 0.0% [",
		"### ledger-locked-force-deleted [fault, application-control",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

// A control that names the violation kinds it is built to make is hit
// only by a VIOLATED of one of them: another kind is "other kind", whose
// reason names the kind got and the kind needed. The report says which
// kinds count, "any kind" where the control names none.
func TestControlChecksCountOnlyTheKindsAControlNames(t *testing.T) {
	storage := func(id, kind string, kinds []string) verdict.Run {
		j := verdicttest.J("storage-integrity", verdict.Violated)
		j.Violation = kind
		r := verdicttest.Run(id, verdict.RunJudged, j)
		r.Scenario, r.Role, r.ControlOf = "control-filesystem-damaged-block", verdict.RoleControl, []string{"storage-integrity"}
		if kinds != nil {
			r.ControlKinds = map[string][]string{"storage-integrity": kinds}
		}
		return r
	}
	fs := []string{"filesystem-damaged"}
	runs := []verdict.Run{storage("hit", "filesystem-damaged", fs), storage("ledger", "ledger-damaged", fs), storage("any", "ledger-damaged", nil)}
	for i, want := range []struct {
		outcome  ControlOutcome
		expected string
	}{{ControlHit, "VIOLATED, of kind filesystem-damaged"}, {ControlOtherKind, "VIOLATED, of kind filesystem-damaged"}, {ControlHit, "VIOLATED, any kind"}} {
		c := ControlChecks(runs[i])
		if len(c) != 1 || c[0].Outcome != want.outcome || c[0].ExpectedText() != want.expected {
			t.Errorf("%s: %+v, want %s expecting %q", runs[i].RunID, c, want.outcome, want.expected)
		}
	}
	if got := ControlChecks(runs[1])[0].Reason(); !strings.HasPrefix(got, "VIOLATED of kind ledger-damaged, not of the kind the control is built to break (filesystem-damaged): because violated") {
		t.Errorf("reason %q", got)
	}
	s := Summary("splitbrain", runs, nil)
	for _, want := range []string{
		"| ledger | control-filesystem-damaged-block | storage-integrity | VIOLATED, of kind filesystem-damaged | VIOLATED (ledger-damaged) | other kind | VIOLATED of kind ledger-damaged",
		"| any | control-filesystem-damaged-block | storage-integrity | VIOLATED, any kind | VIOLATED (ledger-damaged) | hit |",
		"Positive control of storage-integrity (of kind filesystem-damaged): expected VIOLATED.",
		"Positive control of storage-integrity (any kind): expected VIOLATED.",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}

func TestEffectTextSaysTheShareOfTheWindow(t *testing.T) {
	e := &verdict.EffectCoverage{Probes: 1, Observed: 1, Required: 0.5, Window: verdict.Duration(40 * time.Second),
		Resolution: verdict.Duration(time.Second), Covered: 0.05}
	want := "1/1 probes = 100%; 5% of the 40s window attested (1s either side of what each look saw); required 50%"
	if got := EffectText(e); got != want {
		t.Errorf("EffectText = %q, want %q", got, want)
	}
}
