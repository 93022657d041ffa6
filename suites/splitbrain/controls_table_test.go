package splitbrain_test

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
)

// Each invariant of the paper has a lab control that must break it, with
// its null arm; the ledger damage leaves more than the default share of
// the window's probes after it.
func TestEveryInvariantHasAPositiveControl(t *testing.T) {
	controlled := map[string]int{}
	arms := map[string]int{}
	for _, sc := range table() {
		if !strings.HasPrefix(sc.ID, "control-") {
			if len(sc.ControlOf) > 0 {
				t.Errorf("%s controls %v but is not named a control", sc.ID, sc.ControlOf)
			}
			continue
		}
		arms[sc.ID]++
		if len(sc.ControlOf) == 0 || !hasLabel(sc.Labels, "selfcheck") {
			t.Errorf("%s: controls %v, labels %v", sc.ID, sc.ControlOf, sc.Labels)
		}
		for _, inv := range sc.ControlOf {
			controlled[inv]++
		}
		if strings.HasPrefix(sc.ID, "control-ledger-record-") {
			if sc.Change == nil || sc.Change.After*4 > sc.Window {
				t.Errorf("%s: the damage %+v in a %s window leaves fewer than three quarters of the probes after it", sc.ID, sc.Change, sc.Window)
			}
			if share := 1 - float64(sc.Change.After)/float64(sc.Window); share <= fault.EffectShareOf(sc.Fault) {
				t.Errorf("%s: %.2f of the probes can see the damage, the run needs %.2f", sc.ID, share, fault.EffectShareOf(sc.Fault))
			}
		}
	}
	for _, inv := range []string{invariant.StorageIntegrityName, invariant.SingleHistoryName, invariant.FencingMonotonicName} {
		if controlled[inv] == 0 {
			t.Errorf("no control of %s", inv)
		}
	}
	for id, n := range arms {
		if n != 2 {
			t.Errorf("%s: %d arms", id, n)
		}
	}
}
