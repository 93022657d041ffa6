package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/verdict"
)

func TestTheNineInvariants(t *testing.T) {
	all := All(testBounds)
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
		{"gray-network", EndpointsTruthfulName}, // a cut pod network can stop the pod's probes, so its containers restart
		{"clock-skew", SingleLeaderName},        // lease times written by skewed clocks
		{"gray-network", NoTimeTravelName},      // the informer re-lists through the pod network
	} {
		if reason, na := Applicability.Lookup(pair[0], pair[1]); na {
			t.Errorf("%s × %s is in the table (%s), but faults of that class reach what it reads", pair[0], pair[1], reason)
		}
	}
	for _, pair := range [][2]string{
		{"clock-skew", NoTimeTravelName},      // a skewed host's broken watches re-list
		{"gray-network", SingleLeaderName},    // endpoints and pod status change in the API
		{"operator-action", SingleLeaderName}, // a deletion changes what the API serves
		{"gray-agent", AcknowledgedWritesSurviveName},
	} {
		inv := byName(t, pair[1])
		if err := ClassReach.Admits(pair[0], inv); err == nil {
			t.Errorf("%s × %s: the reach rule admits a pair whose class reaches what it reads", pair[0], pair[1])
		}
	}
}

// testBounds gives every bounded invariant a bound, as a suite does.
var testBounds = Bounds{
	Agreement: map[evidence.Question]Bound{
		evidence.NodeReady: {Limit: 5 * time.Second, Why: "test"}, evidence.PodObject: {Limit: 5 * time.Second, Why: "test"}, evidence.ServiceEndpoints: {Limit: 5 * time.Second, Why: "test"},
	},
	Ordering:  Bound{Limit: 5 * time.Second, Why: "test"},
	Endpoints: 60 * time.Second,
}

func byName(t *testing.T, name string) Invariant {
	t.Helper()
	for _, inv := range All(testBounds) {
		if inv.Name() == name {
			return inv
		}
	}
	t.Fatalf("no invariant %q", name)
	return nil
}

// Every row is held to the rule that decides the table, from what the
// class declares it can do and what the invariant declares it reads.
func TestApplicabilityRowsObeyTheReachRule(t *testing.T) {
	for _, row := range Applicability {
		if err := ClassReach.Admits(row.FaultClass, byName(t, row.Invariant)); err != nil {
			t.Errorf("row %s × %s breaks the rule: %v", row.FaultClass, row.Invariant, err)
		}
	}
}

func TestTheReachRule(t *testing.T) {
	reaches := Reaches{
		"cri-only":  {{Sources: "cri", Ways: []Reach{ReachRestart}, Why: "restarts containers"}},
		"no-reach":  {},
		"reads-all": {{Sources: AnySource, Ways: []Reach{ReachUnreadable}, Why: "times reads out"}},
	}
	leader := SingleLeader() // reads controlplane/* and apiserver/*
	if err := reaches.Admits("cri-only", leader); err != nil {
		t.Errorf("a class reaching only runtimes reaches nothing single-leader reads, yet: %v", err)
	}
	if err := reaches.Admits("no-reach", leader); err != nil {
		t.Errorf("a class reaching nothing: %v", err)
	}
	err := reaches.Admits("cri-only", SingleCopy())
	if err == nil || !strings.Contains(err.Error(), "cri/*") || !strings.Contains(err.Error(), "restart") {
		t.Errorf("single-copy reads cri/*, which the class restarts: %v", err)
	}
	// Making a source unreadable is reaching it: the invariant's evidence
	// is what the fault took away.
	if err := reaches.Admits("reads-all", leader); err == nil {
		t.Error("a class that makes every source unreadable reaches single-leader")
	}
	if err := reaches.Admits("undeclared", leader); err == nil || !strings.Contains(err.Error(), "declares no reach") {
		t.Errorf("an undeclared class must be taken to reach everything: %v", err)
	}
}
