package splitbrain_test

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/suites/splitbrain"
)

// Every locked-ledger row is an application control, judged by the
// ledger's invariants, with its null arm; every other row is not, and no
// naive row runs the locked ledger.
func TestApplicationControlsAreTheLockedLedgerRows(t *testing.T) {
	arms := map[string]int{}
	for _, sc := range table() {
		locked := hasLabel(sc.Labels, splitbrain.LabelLedgerMode+"locked")
		if strings.HasPrefix(sc.ID, "ledger-locked-") != locked || sc.ApplicationControl != locked {
			t.Errorf("%s: locked label %v, application control %v", sc.ID, locked, sc.ApplicationControl)
		}
		if !locked {
			continue
		}
		arms[sc.ID]++
		if !hasLabel(sc.AllLabels(), verdict.LabelApplicationControl) || len(sc.ControlOf) != 0 {
			t.Errorf("%s: labels %v, control of %v", sc.ID, sc.AllLabels(), sc.ControlOf)
		}
		if len(sc.Invariants) != 4 {
			t.Errorf("%s: judged by %d invariants, want the ledger's four", sc.ID, len(sc.Invariants))
		}
		naive := table()
		twin := strings.Replace(sc.ID, "ledger-locked-", "ledger-", 1)
		found := false
		for _, n := range naive {
			if n.ID == twin && n.Arm == sc.Arm && n.Fault.Kind() == sc.Fault.Kind() && n.Window == sc.Window {
				found = true
			}
		}
		if !found {
			t.Errorf("%s has no naive row %s with the same fault and window", sc.ID, twin)
		}
	}
	if len(arms) != 4 {
		t.Errorf("%d application controls, want 4: %v", len(arms), arms)
	}
	for id, n := range arms {
		if n != 2 {
			t.Errorf("%s: %d arms", id, n)
		}
	}
	if err := scenario.ValidateTable(table()); err != nil {
		t.Error(err)
	}
}
