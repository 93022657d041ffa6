package record

import (
	"slices"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
)

// ControlledInvariants names the invariants a control run must break: its
// controlOf field, or for records written before that field the
// "control:<invariant>" labels. Nil for a run that is not a control.
func ControlledInvariants(r verdict.Run) []string {
	if r.RunRole() != verdict.RoleControl {
		return nil
	}
	if len(r.ControlOf) > 0 {
		return r.ControlOf
	}
	var out []string
	for _, l := range r.Labels {
		if inv, ok := strings.CutPrefix(l, "control:"); ok && inv != "" && !slices.Contains(out, inv) {
			out = append(out, inv)
		}
	}
	return out
}
