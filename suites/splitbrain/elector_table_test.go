package splitbrain_test

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
)

// The elector's rows: each with its null arm, fenced rows judged by
// fencing-monotonic and unfenced ones not (it would be INSUFFICIENT_DATA
// there by definition), the frozen leader thawed inside its window.
func TestElectorScenarios(t *testing.T) {
	arms := map[string]int{}
	for _, sc := range table() {
		if !strings.HasPrefix(sc.ID, "elector-") {
			continue
		}
		arms[sc.ID]++
		judged := map[string]bool{}
		for _, inv := range sc.Invariants {
			judged[inv.Name()] = true
		}
		fenced := strings.HasSuffix(sc.ID, "-fenced")
		if !judged[invariant.SingleHistoryName] || judged[invariant.FencingMonotonicName] != fenced {
			t.Errorf("%s (%s): judged %v", sc.ID, sc.Arm, judged)
		}
		if !hasLabel(sc.Labels, "workload:elector") || !hasLabel(sc.Labels, "component:leader-election") {
			t.Errorf("%s: labels %v", sc.ID, sc.Labels)
		}
		if strings.Contains(sc.ID, "frozen") {
			if sc.Change == nil || sc.Change.After != electorFreeze || sc.Window <= sc.Change.After {
				t.Errorf("%s: the thaw %+v, window %s", sc.ID, sc.Change, sc.Window)
			}
		}
		if sc.Fault == nil || (sc.Arm != scenario.FaultArm && sc.Arm != scenario.NullArm) {
			t.Errorf("%s: arm %q, fault %v", sc.ID, sc.Arm, sc.Fault)
		}
	}
	for _, id := range []string{"elector-leader-frozen-unfenced", "elector-leader-frozen-fenced", "elector-forked-apiserver-unfenced", "elector-forked-apiserver-fenced"} {
		if arms[id] != 2 {
			t.Errorf("%s: %d arms, want the fault arm and the null arm", id, arms[id])
		}
	}
}
