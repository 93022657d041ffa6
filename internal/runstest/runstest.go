// Package runstest builds the run records the record and report tests
// share, so that the verdict JUnit and the summary are tested on the same
// runs.
package runstest

import (
	"strings"
	"time"

	"github.com/faultline/faultline/framework/verdict"
)

// T0 is when every run here starts.
var T0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// Run is a run of suite "s" on a local lab with the judgements given; a
// run that is not JUDGED says why.
func Run(id string, rv verdict.RunVerdict, js ...verdict.Judgement) verdict.Run {
	return verdict.Run{RunID: id, Suite: "s", Scenario: "sc-" + id, Arm: "fault", Started: T0, Ended: T0.Add(2 * time.Second),
		RunVerdict: rv, RunReason: map[bool]string{true: "", false: "probe saw nothing"}[rv == verdict.RunJudged], Judgements: js,
		Lab: verdict.LabInfo{Name: "pair", Kind: "local"}, GitCommit: "abc", ConfigHash: "sha256:00"}
}

// J is a safety judgement of inv with verdict v.
func J(inv string, v verdict.Verdict) verdict.Judgement {
	return verdict.Judgement{Invariant: inv, Phase: verdict.Safety, Verdict: v, Reason: "because " + strings.ToLower(string(v))}
}

// RolesRuns: a finding, its null arm with a false alarm, a control that
// hits, an old-style control (labels only) that misses, and a finding
// whose violation names its kind.
func RolesRuns() []verdict.Run {
	finding := Run("f", verdict.RunJudged,
		verdict.Judgement{Invariant: "endpoints-truthful", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "kept out", Exercised: verdict.Exercised(), Exercise: "worker1's address left the endpoints"},
		verdict.Judgement{Invariant: "graceful-deletion", Phase: verdict.Safety, Verdict: verdict.Preserved, Reason: "none left the API", Exercised: verdict.NotExercised(), Exercise: "no pod left the API"})
	finding.Scenario, finding.Role = "pod-network-cut", verdict.RoleFinding
	finding.Load = []verdict.Load{{At: T0, One: 0.5, Five: 0.4, Fifteen: 0.3}, {At: T0.Add(time.Minute), One: 3.2, Five: 1.1, Fifteen: 0.6}}
	finding.Effect = &verdict.EffectCoverage{Probes: 10, Observed: 7, Failed: 1, Required: 0.5}
	null := Run("n", verdict.RunJudged, J("endpoints-truthful", verdict.Violated), J("graceful-deletion", verdict.Preserved))
	null.Scenario, null.Arm, null.Role = "pod-network-cut", "null", verdict.RoleNull
	ctl := Run("c", verdict.RunJudged, J("endpoints-truthful", verdict.Violated), J("graceful-deletion", verdict.Violated))
	ctl.Scenario, ctl.Role, ctl.ControlOf = "control-endpoints-truthful", verdict.RoleControl, []string{"endpoints-truthful"}
	old := Run("o", verdict.RunJudged, J("single-copy", verdict.Preserved))
	old.Scenario, old.Labels = "control-single-copy", []string{"selfcheck", "control:single-copy"}
	writer := Run("w", verdict.RunJudged, verdict.Judgement{Invariant: "acknowledged-writes-survive", Phase: verdict.Convergence, Verdict: verdict.Violated, Reason: "read 41 of 42", Violation: "stale-read", Exercised: verdict.Exercised(), During: "settle"})
	writer.Scenario = "writer-cut"
	return []verdict.Run{finding, null, ctl, old, writer}
}
