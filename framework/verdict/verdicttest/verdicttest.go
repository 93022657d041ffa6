// Package verdicttest builds the run records the record and report tests
// share, so that the verdict JUnit and the summary are tested on the same
// runs, and checks the judgements invariants' tests get. It links
// "testing": only tests import it.
package verdicttest

import (
	"strconv"
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

// Q is a quantity of unit u, scaling with the quantities per names.
func Q(v float64, u string, per ...string) verdict.Quantity {
	return verdict.Quantity{Value: v, Unit: u, Per: per}
}

// Rep is repetition rep of scenario's arm with the verdicts given, one per
// invariant in order, each with its quantities (nil for none).
func Rep(scenario, arm string, rep int, rv verdict.RunVerdict, invariants []string, verdicts []verdict.Verdict, quantities []map[string]verdict.Quantity) verdict.Run {
	var js []verdict.Judgement
	for i, v := range verdicts {
		j := J(invariants[i], v)
		if i < len(quantities) {
			j.Quantities = quantities[i]
		}
		js = append(js, j)
	}
	id := scenario + "-" + arm + "-rep" + strconv.Itoa(rep)
	r := Run(id, rv, js...)
	r.Scenario, r.Arm, r.Repetition = scenario, arm, rep
	r.Started = T0.Add(time.Duration(rep) * time.Minute)
	r.Ended = r.Started.Add(2 * time.Second)
	switch {
	case arm == "null":
		r.Role = verdict.RoleNull
	case strings.HasPrefix(scenario, "control-"):
		r.Role, r.ControlOf = verdict.RoleControl, []string{invariants[0]}
	default:
		r.Role = verdict.RoleFinding
	}
	return r
}

// The invariants RepeatedRuns judges.
const (
	Endpoints = "endpoints-truthful"
	Graceful  = "graceful-deletion"
	Acked     = "acknowledged-data-survives"
)

// RepeatedRuns: a suite run with repetitions, in rounds.
//   - pod-network-cut, fault arm, 3 repetitions (the third ABORTED once
//     and run again): endpoints-truthful VIOLATED, PRESERVED, VIOLATED
//     (flaky, 2 of 3), with the stretch it lasted (4, 6, 5 s);
//     graceful-deletion PRESERVED in each; acknowledged-data-survives
//     VIOLATED in each, with the appends lost (12, 6, 20), the seconds two
//     copies overlapped (3, 2, 4) and the append rate (2, 2, 2.5 /s), the
//     appends lost scaling with both (normalised 2, 1.5, 2).
//   - its null arm, 3 repetitions: PRESERVED but graceful-deletion's
//     third, INSUFFICIENT_DATA.
//   - kubelet-stopped, fault arm, 4 repetitions, the second
//     FAULT_INEFFECTIVE: endpoints-truthful PRESERVED in the judged three,
//     graceful-deletion PRESERVED, VIOLATED, PRESERVED (flaky, 1 of 3).
//   - control-endpoints, a positive control of endpoints-truthful, 2
//     repetitions: hit, then missed.
func RepeatedRuns() []verdict.Run {
	V, P, ID := verdict.Violated, verdict.Preserved, verdict.InsufficientData
	three := []string{Endpoints, Graceful, Acked}
	cut := func(rep int, e, g, a verdict.Verdict, stretch, lost, overlap, rate float64) verdict.Run {
		return Rep("pod-network-cut", "fault", rep, verdict.RunJudged, three, []verdict.Verdict{e, g, a}, []map[string]verdict.Quantity{
			{"stretch": Q(stretch, "s")}, nil,
			{"appends-lost": Q(lost, "appends", "overlap", "append-rate"), "overlap": Q(overlap, "s"), "append-rate": Q(rate, "appends/s")},
		})
	}
	null := func(rep int, g verdict.Verdict) verdict.Run {
		return Rep("pod-network-cut", "null", rep, verdict.RunJudged, three, []verdict.Verdict{P, g, P}, nil)
	}
	kubelet := func(rep int, rv verdict.RunVerdict, e, g verdict.Verdict) verdict.Run {
		return Rep("kubelet-stopped", "fault", rep, rv, three[:2], []verdict.Verdict{e, g}, nil)
	}
	control := func(rep int, e verdict.Verdict) verdict.Run {
		return Rep("control-endpoints", "fault", rep, verdict.RunJudged, three[:1], []verdict.Verdict{e}, nil)
	}
	aborted := Rep("pod-network-cut", "fault", 3, verdict.RunAborted, three, []verdict.Verdict{ID, ID, ID}, nil)
	aborted.RunID += "-aborted"
	return []verdict.Run{
		cut(1, V, P, V, 4, 12, 3, 2), null(1, P), kubelet(1, verdict.RunJudged, P, P), control(1, V),
		cut(2, P, P, V, 6, 6, 2, 2), null(2, P), kubelet(2, verdict.FaultIneffective, P, P), control(2, P),
		aborted, cut(3, V, P, V, 5, 20, 4, 2.5), null(3, ID), kubelet(3, verdict.RunJudged, P, V),
		kubelet(4, verdict.RunJudged, P, P),
	}
}
