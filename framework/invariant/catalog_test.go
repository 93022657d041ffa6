package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/verdict"
)

func TestTheNineInvariants(t *testing.T) {
	all := All(Bounds{Staleness: 5 * time.Second, Endpoints: 60 * time.Second})
	if len(all) != 9 {
		t.Fatalf("%d invariants, want nine", len(all))
	}
	want := map[string]verdict.Phase{
		SingleCopyName: verdict.Safety, APIAgreementName: verdict.Safety, NoTimeTravelName: verdict.Safety,
		EndpointsTruthfulName: verdict.Safety, SingleLeaderName: verdict.Safety, GracefulDeletionName: verdict.Safety,
		AcknowledgedWritesSurviveName: verdict.Convergence, ReplicasRestoredName: verdict.Convergence, ConvergenceName: verdict.Convergence,
	}
	seen := map[string]bool{}
	for _, inv := range all {
		if seen[inv.Name()] {
			t.Errorf("%s twice", inv.Name())
		}
		seen[inv.Name()] = true
		if p, ok := want[inv.Name()]; !ok || p != inv.Phase() {
			t.Errorf("%s: phase %s, want %s", inv.Name(), inv.Phase(), p)
		}
		if len(inv.Reads()) == 0 {
			t.Errorf("%s declares nothing it reads", inv.Name())
		}
		// Over no evidence at all every invariant says so, never a verdict.
		if j := Judge(inv, Input{Moment: Window}); j.Verdict != verdict.InsufficientData {
			t.Errorf("%s over no evidence: %s (%s)", inv.Name(), j.Verdict, j.Reason)
		}
	}
}

// faultClasses are the classes of every fault the library registers.
func faultClasses(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range []fault.Fault{
		faults.PowerOff("worker1"), faults.Kill("worker1", "kubelet"), faults.StopService("worker1", "kubelet"),
		faults.Freeze("worker1", "containerd"), faults.Isolate("worker1"), faults.Delay("cp1", []string{"etcd1"}, 100*time.Millisecond, 0),
		faults.Loss("cp1", []string{"etcd1"}, 50), faults.EtcdCompact(false), faults.EtcdNoSpace(), faults.ClockSkew("worker1", 30*time.Second),
		faults.PodNetworkCut("worker1"),
	} {
		out[string(f.Class())] = true
	}
	return out
}

func TestApplicabilityTableNamesRealInvariantsAndClasses(t *testing.T) {
	if err := Applicability.Validate(Names()...); err != nil {
		t.Fatal(err)
	}
	classes := faultClasses(t)
	for _, row := range Applicability {
		if !classes[row.FaultClass] {
			t.Errorf("row %s × %s: no fault of the library has class %q (classes: %v)", row.FaultClass, row.Invariant, row.FaultClass, classes)
		}
		if len(strings.Fields(row.Reason)) < 8 {
			t.Errorf("row %s × %s: a reason of a few words cannot say why: %q", row.FaultClass, row.Invariant, row.Reason)
		}
	}
}

func TestApplicabilityIsConservative(t *testing.T) {
	// Faults that plainly reach what an invariant reads must never be
	// table rows: each pair here has a scenario that can break it.
	for _, pair := range [][2]string{
		{"crash-stop", SingleCopyName},       // worker power-off, replacement elsewhere
		{"partition", SingleCopyName},        // worker cut off from the control plane
		{"partition", APIAgreementName},      // a server cut from etcd
		{"process-freeze", SingleLeaderName}, // a leader frozen holding its lease
		{"crash-stop", GracefulDeletionName}, // a kubelet gone with its pods
		{"etcd-no-space", AcknowledgedWritesSurviveName},
		{"gray-network", EndpointsTruthfulName}, // pod network cut, node Ready
		{"clock-skew", SingleLeaderName},        // lease times written by skewed clocks
		{"gray-network", NoTimeTravelName},      // the informer re-lists through the pod network
	} {
		if reason, na := Applicability.Lookup(pair[0], pair[1]); na {
			t.Errorf("%s × %s is in the table (%s), but faults of that class reach what it reads", pair[0], pair[1], reason)
		}
	}
	if _, na := Applicability.Lookup("clock-skew", NoTimeTravelName); !na {
		t.Error("clock-skew × no-time-travel: resourceVersions never come from a clock; the row is expected")
	}
}
