package disagree_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
)

// TestTable checks the table without a lab: it is a valid table, the paper
// has its fourteen crash-stop and nine gray scenarios each with both arms
// and the paper's labels, and the ci set covers what CI must.
func TestTable(t *testing.T) {
	all := table()
	if err := scenario.ValidateTable(all); err != nil {
		t.Fatal(err)
	}
	if len(crashStop) != 14 || len(gray) != 9 {
		t.Errorf("%d crash-stop and %d gray scenarios, want 14 and 9", len(crashStop), len(gray))
	}
	arms := map[string][]scenario.Arm{}
	ci := map[string]bool{}
	for _, s := range all {
		arms[s.ID] = append(arms[s.ID], s.Arm)
		labels := s.AllLabels()
		has := func(prefix string) bool {
			return slices.ContainsFunc(labels, func(l string) bool { return strings.HasPrefix(l, prefix) })
		}
		if !slices.Contains(labels, "topology:lab11") || !has("component:") || !has("fault:") {
			t.Errorf("%s [%s]: labels %v lack topology:lab11, component: or fault:", s.ID, s.Arm, labels)
		}
		if !slices.Contains(labels, "selfcheck") && !slices.Contains(labels, "paper:disagree") {
			t.Errorf("%s: a paper scenario without paper:disagree: %v", s.ID, labels)
		}
		if slices.Contains(labels, "ci") {
			for _, l := range labels {
				ci[l] = true
			}
		}
	}
	for id, a := range arms {
		if !slices.Contains(a, scenario.FaultArm) || !slices.Contains(a, scenario.NullArm) {
			t.Errorf("%s has arms %v, want fault and null", id, a)
		}
	}
	for _, want := range []string{"class:crash-stop", "class:gray", "arm:null", "selfcheck"} {
		if !ci[want] {
			t.Errorf("the ci set has no %s run", want)
		}
	}
	for id := range ciRuns {
		if _, ok := arms[id]; !ok {
			t.Errorf("ciRuns names %s, which is not in the table", id)
		}
	}
}

// paperClassOf is the paper class each fault class of the fourteen
// crash-stop and timing scenarios belongs to: crash-stop where a host, a
// process or a link stops; timing where everything runs but late or on
// another clock; history where etcd's history is cut under live watches.
var paperClassOf = map[string]string{
	"crash-stop":   "crash-stop",
	"partition":    "crash-stop",
	"slow-network": "timing",
	"clock-skew":   "timing",
	"etcd-history": "history",
}

// paperClasses are the class: labels of paper 1's scenarios.
var paperClasses = []string{"crash-stop", "timing", "history", "gray"}

// TestEveryScenarioCarriesItsTrueClass checks that each paper scenario has
// exactly one paper class, and that the crash-stop and timing scenarios
// carry the one their fault's class calls for (a slow write or a skewed
// clock is not a crash-stop), while every gray scenario carries gray.
func TestEveryScenarioCarriesItsTrueClass(t *testing.T) {
	grayIDs := map[string]bool{}
	for _, s := range gray {
		grayIDs[s.ID] = true
	}
	for _, s := range table() {
		if slices.Contains(s.Labels, "selfcheck") {
			continue
		}
		labels := s.AllLabels()
		var got []string
		for _, c := range paperClasses {
			if slices.Contains(labels, "class:"+c) {
				got = append(got, c)
			}
		}
		want := "gray"
		if !grayIDs[s.ID] {
			var ok bool
			if want, ok = paperClassOf[string(s.Fault.Class())]; !ok {
				t.Errorf("%s: fault class %s has no paper class in paperClassOf", s.ID, s.Fault.Class())
				continue
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s [%s] (fault class %s): paper classes %v, want exactly [%s]", s.ID, s.Arm, s.Fault.Class(), got, want)
		}
	}
}

// TestPositiveControlsNameJudgedInvariants checks that every control
// names an invariant each scenario judges, that controls are self-checks,
// and that each of the nine invariants has one.
func TestPositiveControlsNameJudgedInvariants(t *testing.T) {
	controlled := map[string]bool{}
	for _, s := range table() {
		judged := map[string]bool{}
		for _, inv := range s.Invariants {
			judged[inv.Name()] = true
		}
		for _, inv := range s.ControlOf {
			if !judged[inv] {
				t.Errorf("%s [%s]: control of %q, an invariant the scenario does not judge", s.ID, s.Arm, inv)
			}
			if !slices.Contains(s.Labels, "selfcheck") {
				t.Errorf("%s [%s]: a positive control without the selfcheck label", s.ID, s.Arm)
			}
			if s.Arm == scenario.FaultArm {
				controlled[inv] = true
			}
		}
	}
	// Every one of the nine has one.
	for _, want := range []string{invariant.EndpointsTruthfulName, invariant.SingleCopyName, invariant.GracefulDeletionName,
		invariant.APIAgreementName, invariant.NoTimeTravelName, invariant.SingleLeaderName, invariant.AcknowledgedWritesSurviveName,
		invariant.ReplicasRestoredName, invariant.ConvergenceName} {
		if !controlled[want] {
			t.Errorf("no positive control for %s", want)
		}
	}
}

// TestLabelsAreAsBefore checks that the labels generated from the
// scenarios' fields (ci, control:, writer:, topology: from the shape) are
// those the table carried when they were written out by hand:
// testdata/labels.golden holds every scenario's labels, sorted, as the
// table gave them then. Every --label-filter selects what it did.
func TestLabelsAreAsBefore(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "labels.golden"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var got []string
	for _, s := range table() {
		ls := s.AllLabels()
		sort.Strings(ls)
		got = append(got, fmt.Sprintf("%s [%s]: %s", s.ID, s.Arm, strings.Join(ls, " ")))
	}
	if len(got) != len(want) {
		t.Fatalf("%d scenarios, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("labels changed:\n got %s\nwant %s", got[i], want[i])
		}
	}
}
