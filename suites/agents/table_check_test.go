package agents_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane/invariants"

	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/suites/agents"
)

// TestTable checks the table without a lab: a valid table whose first
// scenario is the feasibility check (a positive control of
// service-routes-truthful), every scenario with both arms, a change, the
// paper's labels and a component, a ci set of at most six runs, a
// positive control for every invariant of the paper, and every settle
// one of the derived ones.
func TestTable(t *testing.T) {
	all := table()
	if err := scenario.ValidateTable(all); err != nil {
		t.Fatal(err)
	}
	if all[0].ID != "feasibility-kube-proxy-frozen" || !slices.Contains(all[0].ControlOf, invariants.ServiceRoutesTruthfulName) {
		t.Errorf("the first run is %s (control of %v), want the feasibility check controlling %s", all[0].ID, all[0].ControlOf, invariants.ServiceRoutesTruthfulName)
	}
	arms := map[string][]scenario.Arm{}
	ciRuns := 0
	for _, s := range all {
		arms[s.ID] = append(arms[s.ID], s.Arm)
		labels := s.AllLabels()
		if !slices.Contains(labels, "paper:agents") || !slices.Contains(labels, "topology:lab11") ||
			!slices.ContainsFunc(labels, func(l string) bool { return strings.HasPrefix(l, "component:") }) {
			t.Errorf("%s [%s]: labels %v lack paper:agents, topology:lab11 or a component", s.ID, s.Arm, labels)
		}
		if s.Change == nil {
			t.Errorf("%s: no change: a scenario of this paper watches the agents apply one", s.ID)
		}
		names := map[string]bool{}
		for _, inv := range s.Invariants {
			names[inv.Name()] = true
		}
		if !names[invariants.ServiceRoutesTruthfulName] || !names[invariants.PolicyEnforcedName] || !names[invariants.AgentHealthTruthfulName] {
			t.Errorf("%s: judges %v, want every invariant of the paper", s.ID, names)
		}
		if slices.Contains(labels, "ci") {
			ciRuns++
		}
	}
	for id, a := range arms {
		if len(a) != 2 || !slices.Contains(a, scenario.FaultArm) || !slices.Contains(a, scenario.NullArm) {
			t.Errorf("%s has arms %v, want one fault and one null arm", id, a)
		}
	}
	if ciRuns == 0 || ciRuns > 6 {
		t.Errorf("the ci set has %d runs, want 1 to 6", ciRuns)
	}
	// Every invariant of the paper has a positive control whose fault arm
	// must judge it VIOLATED, and each control judges what it controls.
	controlled := map[string]bool{}
	for _, s := range all {
		names := map[string]bool{}
		for _, inv := range s.Invariants {
			names[inv.Name()] = true
		}
		for _, inv := range s.ControlOf {
			controlled[inv] = true
			if !names[inv] {
				t.Errorf("%s is a control of %s but does not judge it", s.ID, inv)
			}
		}
	}
	for _, inv := range []string{invariants.ServiceRoutesTruthfulName, invariants.PolicyEnforcedName, invariants.AgentHealthTruthfulName,
		invariants.AgentsConvergedName, invariants.IsolatedFromStartName, invariants.DNSTruthfulName} {
		if !controlled[inv] {
			t.Errorf("no positive control of %s", inv)
		}
	}
	// A scenario whose fault is the textbook way to break an invariant
	// is that invariant's control, never a finding: a frozen policy
	// agent under a new deny (policy-enforced), or under a pod that
	// starts (isolated-from-start).
	for id, inv := range map[string]string{
		"policy-agent-frozen-deny-created":    invariants.PolicyEnforcedName,
		"policy-agent-frozen-newcomer-starts": invariants.IsolatedFromStartName,
	} {
		for _, s := range all {
			if s.ID == id && !slices.Contains(s.ControlOf, inv) {
				t.Errorf("%s [%s] is a control of %v, want of %s: its fault is the textbook way to break it", id, s.Arm, s.ControlOf, inv)
			}
		}
	}
	// Every settle is one of the derived ones (agents.Settle).
	derived := map[time.Duration]bool{}
	for _, c := range []agents.SettleCause{agents.AgentsResumed, agents.ListsRefused, agents.ConnectionsCut, agents.ServerRelisted} {
		derived[agents.Settle(c)] = true
	}
	for _, s := range all {
		if !derived[s.Settle] {
			t.Errorf("%s settles within %s, none of the derived settles", s.ID, s.Settle)
		}
	}
	for id, policies := range startPolicies {
		if _, ok := arms[id]; !ok || len(policies) == 0 {
			t.Errorf("startPolicies names %s (%d policies), which is not a scenario of the table", id, len(policies))
		}
	}
}

// The README's scenario table is the suite's: the same scenarios in
// table order, each with its role (a control names what it controls),
// and the run count it states.
func TestReadmeScenarioTableIsTheSuites(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	_, section, ok := strings.Cut(text, "\n## Scenarios\n")
	if !ok {
		t.Fatal("README has no Scenarios section")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	type row struct{ id, role string }
	var rows []row
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.TrimSpace(cells[1]) == "scenario" || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		rows = append(rows, row{strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])})
	}
	var want []row
	for _, s := range table() {
		if s.Arm != scenario.FaultArm {
			continue
		}
		role := "finding"
		if len(s.ControlOf) > 0 {
			role = "control"
		}
		want = append(want, row{s.ID, role})
	}
	if len(rows) != len(want) {
		t.Errorf("README lists %d scenarios, the table has %d", len(rows), len(want))
	}
	for i := 0; i < min(len(rows), len(want)); i++ {
		if rows[i].id != want[i].id || !strings.HasPrefix(rows[i].role, want[i].role) {
			t.Errorf("README row %d is %s (%s), the table's is %s (%s)", i+1, rows[i].id, rows[i].role, want[i].id, want[i].role)
		}
	}
	if flat := strings.Join(strings.Fields(section), " "); !strings.Contains(flat, fmt.Sprintf(" %d runs", 2*len(want))) {
		t.Errorf("README's Scenarios section does not state %d runs (%d scenarios, each with its null arm)", 2*len(want), len(want))
	}
}
