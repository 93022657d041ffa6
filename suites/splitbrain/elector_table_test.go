package splitbrain_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/scenario"
	storedinv "github.com/faultline/faultline/kits/storeddata/invariants"
	"github.com/faultline/faultline/lab"
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
		if !judged[storedinv.SingleHistoryName] || judged[storedinv.FencingMonotonicName] != fenced {
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

// hostCounter is a lab that counts the times its hosts were asked for;
// any other use of it panics.
type hostCounter struct {
	lab.Lab
	asked int
}

func (h *hostCounter) Hosts() []lab.Host { h.asked++; return nil }
func (h *hostCounter) Host(name string) (lab.Host, error) {
	h.asked++
	return nil, fmt.Errorf("no host %s", name)
}

// The thaw in the null arm of the frozen-leader scenarios has nothing to
// thaw, and asks no host: a search of every host for a marker, inside the
// window's last seconds on a loaded lab, cut those runs short.
func TestTheElectorThawAsksNoHostInTheNullArm(t *testing.T) {
	n := 0
	for _, sc := range table() {
		if !strings.HasPrefix(sc.ID, "elector-leader-frozen") || sc.Arm != scenario.NullArm {
			continue
		}
		n++
		l := &hostCounter{}
		if err := sc.Change.Make(t.Context(), l); err != nil {
			t.Errorf("%s: the null arm's change: %v", sc.ID, err)
		}
		if l.asked != 0 {
			t.Errorf("%s: the null arm's change asked the lab for its hosts %d times, want none", sc.ID, l.asked)
		}
	}
	if n != 2 {
		t.Fatalf("found %d frozen-leader null arms, want 2", n)
	}
}
