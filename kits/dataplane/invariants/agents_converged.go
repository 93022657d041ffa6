package invariants

import (
	"fmt"
	"sort"
	"strings"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/verdict"
)

// AgentsConvergedName names the agents-converged invariant.
const AgentsConvergedName = "agents-converged"

// AgentsConverged: after heal, every node applies again what the API
// records, within the settle bound: its kube-proxy forwards the agents'
// test service to the ready endpoints an API server records, and every
// client pod's new connection to the target has the outcome the recorded
// policies give it.
//
// Reads what service-routes-truthful and policy-enforced read; it is
// judged on the settle sample (Final) with their marks: the first settle
// sample in which every node's mark holds, or the final one at the settle
// timeout.
//
// Fires when, in the sample judged, a node's rules or a connection's
// outcome still differ from an API server's record (the reason names
// each, with the rule dump beside a connection). INSUFFICIENT_DATA when,
// with no difference, a node's rules, a connection or the API could not
// be read in that sample, or the servers gave no one record (the settle
// loop samples again until its bound); or when either half (the routes,
// the connections) had nothing read at all: each needs evidence of its
// own, so a sample whose kube-proxy dumps all failed settles nothing.
//
// Why: the agents are level-triggered like every controller. A watch that
// was refused, broken or left behind a compaction must end in a new list,
// and the node's rules must follow it; an agent that resumes a watch from
// a compacted revision without listing again, or that never restarts its
// watch, keeps a stale node past heal, where nothing else will mend it.
//
// Exercised when an earlier sample since the fault shows a node or a
// connection differing from the API: there was something to converge
// from. VIOLATED is always exercised.
func AgentsConverged() invariant.Invariant { return agentsConverged{} }

type agentsConverged struct{}

func (agentsConverged) Name() string         { return AgentsConvergedName }
func (agentsConverged) Phase() verdict.Phase { return verdict.Convergence }
func (agentsConverged) Reads() []invariant.Reading {
	return append(serviceRoutes{}.Reads(), policyEnforced{}.Reads()...)
}

func (agentsConverged) Judge(in invariant.Input) verdict.Judgement {
	snaps := invariant.Ordered(in.Snapshots)
	if len(snaps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no settle sample to judge"}
	}
	final := snaps[len(snaps)-1].Taken
	routes, _, routeWhy := routeMarks(snaps)
	pm, policyWhy := policyMarks(snaps)
	// Each half needs evidence of its own: a sample in which every
	// kube-proxy dump failed settles nothing, whatever the connections
	// say, and the reverse.
	switch {
	case routeWhy != "" && policyWhy != "":
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "nothing the agents applied was read: " + routeWhy + "; " + policyWhy}
	case routeWhy != "":
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "the routes half has nothing to judge: " + routeWhy}
	case policyWhy != "":
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "the connection half has nothing to judge: " + policyWhy}
	}
	var subjects []subjectMarks
	for _, sm := range routes {
		sm.Name = "routes of " + sm.Name
		subjects = append(subjects, sm)
	}
	for _, sm := range pm.pairs {
		sm.Name = "connection " + sm.Name
		subjects = append(subjects, sm)
	}
	sort.Slice(subjects, func(i, j int) bool { return subjects[i].Name < subjects[j].Name })

	var differ, unknowns, held []string
	departed := ""
	for _, sm := range subjects {
		for _, s := range sm.Servers {
			for _, m := range sm.ByServer[s] {
				if !m.Taken.Equal(final) && m.State == invariant.Broken && departed == "" {
					departed = fmt.Sprintf("%s at %s: %s", sm.Name, invariant.Stamp(m.Taken), m.Detail)
				}
			}
		}
		last, ok := combinedAt(sm, final)
		switch {
		case !ok:
			unknowns = append(unknowns, sm.Name+": not read in the sample judged")
		case last.State == invariant.Broken:
			differ = append(differ, last.Detail)
		case last.State == invariant.Unknown:
			unknowns = append(unknowns, sm.Name+": "+last.Detail)
		default:
			held = append(held, sm.Name)
		}
	}
	exercise := "no sample since the fault showed a node or a connection differing from the API: nothing to converge from"
	if departed != "" {
		exercise = "differed from the API since the fault: " + departed
	}
	switch {
	case len(differ) > 0:
		reason := fmt.Sprintf("not converged at %s, after heal: %s", invariant.Stamp(final), strings.Join(differ, "; "))
		if len(unknowns) > 0 {
			reason += "; besides, unknown: " + strings.Join(unknowns, "; ")
		}
		return verdict.Judgement{Verdict: verdict.Violated, Reason: reason, At: final, Exercised: verdict.Exercised(), Exercise: exercise}
	case len(unknowns) > 0:
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: fmt.Sprintf("at %s nothing differed, but could not tell: %s", invariant.Stamp(final), strings.Join(unknowns, "; ")), At: final}
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, At: final, Exercise: exercise,
		Reason: fmt.Sprintf("at %s, after heal, every node applied what the API records: %s", invariant.Stamp(final), strings.Join(held, ", "))}
	if departed != "" {
		j.Exercised = verdict.Exercised()
	} else {
		j.Exercised = verdict.NotExercised()
	}
	return j
}
