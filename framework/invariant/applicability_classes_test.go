package invariant_test

import (
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
)

// Every class of the fault library and of the positive controls declares
// what it can do, so that the reach rule decides from declarations, not
// from a class nobody thought about.
func TestEveryFaultClassDeclaresItsReach(t *testing.T) {
	for _, f := range []fault.Fault{
		faults.PowerOff("worker1"), faults.Kill("worker1", "kubelet"), faults.StopService("worker1", "kubelet"),
		faults.Freeze("worker1", "containerd"), faults.Isolate("worker1"),
		faults.Delay("cp1", []string{"etcd1"}, 100*time.Millisecond, 0), faults.Loss("cp1", []string{"etcd1"}, 50),
		faults.Throttle("cp2", []string{"etcd1"}, 64), faults.EtcdCompact(false), faults.EtcdNoSpace(),
		faults.ClockSkew("worker1", 30*time.Second), faults.PodNetworkCut("worker1"), faults.APIServerEtcdFork("cp2"),
		faults.BlackholeWatch("worker1"), controls.QuotaThenDelete(controls.Deployment{Namespace: "faultline", Name: "web"}),
	} {
		reaches, ok := invariant.ClassReach[string(f.Class())]
		if !ok {
			t.Errorf("fault %s: class %q declares no reach", f.Kind(), f.Class())
			continue
		}
		for _, r := range reaches {
			if r.Sources == "" || len(r.Ways) == 0 || r.Why == "" {
				t.Errorf("class %s: a reach must name its sources, its ways and why: %+v", f.Class(), r)
			}
		}
	}
}

// The classes an invariant asks LeaseHistoriesSplittable about are the
// fault library's and the controls'.
func TestLeaseHistoryClassesAreTheLibrarys(t *testing.T) {
	if invariant.SplitBrainClass != string(faults.APIServerEtcdFork("cp3").Class()) || invariant.OperatorActionClass != string(controls.ClassOperatorAction) {
		t.Errorf("invariant's classes %q and %q, the library's %q and %q", invariant.SplitBrainClass, invariant.OperatorActionClass, faults.ClassSplitBrain, controls.ClassOperatorAction)
	}
	if _, ok := (invariant.Input{FaultClasses: []string{string(faults.ClassProcessFreeze)}}).LeaseHistoriesSplittable(); ok {
		t.Error("a frozen process gives a Lease no second history")
	}
}

// The class an invariant asks ClocksSkewable about is the fault library's.
func TestClockSkewClassIsTheLibrarys(t *testing.T) {
	if invariant.ClockSkewClass != string(faults.ClassClockSkew) {
		t.Errorf("invariant.ClockSkewClass %q, the library's %q", invariant.ClockSkewClass, faults.ClassClockSkew)
	}
	in := invariant.Input{FaultClasses: []string{string(faults.ClassPartition), string(faults.ClockSkew("worker1", time.Second).Class())}}
	if !in.ClocksSkewable() || (invariant.Input{FaultClasses: []string{string(faults.ClassPartition)}}).ClocksSkewable() {
		t.Error("ClocksSkewable does not follow the classes")
	}
}
