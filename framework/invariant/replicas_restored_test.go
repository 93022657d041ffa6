package invariant

import (
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

const dep = evidence.DeploymentReplicas

func deployment(ready, spec int32) evidence.DeploymentValue {
	return evidence.DeploymentValue{Exists: true, Replicas: spec, ReadyReplicas: ready, AvailableReplicas: ready, UpdatedReplicas: spec}
}

func TestReplicasRestoredPreservedWhenReadyIsBackToSpec(t *testing.T) {
	r := newRun(t)
	r.round(0).value(cp1, dep, 0.1, deployment(3, 3), "50").value(cp2, dep, 0.1, deployment(3, 3), "50")
	expect(t, ReplicasRestored(), r.input(Final), verdict.Preserved, "3 of 3 replicas ready")
}

func TestReplicasRestoredViolatedWhenReplicasStayShort(t *testing.T) {
	r := newRun(t)
	r.round(0).value(cp1, dep, 0.1, deployment(2, 3), "70").unreadable(cp2, dep, 1.5, "timeout")
	expect(t, ReplicasRestored(), r.input(Final), verdict.Violated, "apiserver/cp1 shows 2 of 3 replicas ready")

	gone := newRun(t)
	gone.round(0).value(cp1, dep, 0.1, evidence.DeploymentValue{}, "")
	expect(t, ReplicasRestored(), gone.input(Final), verdict.Violated, "no test Deployment")
}

func TestReplicasRestoredTheFreshestServerDecides(t *testing.T) {
	// cp2 answered from an older state; cp1's newer answer is the truth now.
	r := newRun(t)
	r.round(0).value(cp1, dep, 0.1, deployment(3, 3), "90").value(cp2, dep, 0.1, deployment(1, 3), "80")
	expect(t, ReplicasRestored(), r.input(Final), verdict.Preserved, "apiserver/cp1")

	// Only the last snapshot is judged: an earlier short one does not count.
	settle := newRun(t)
	settle.round(0).value(cp1, dep, 0.1, deployment(1, 3), "80")
	settle.round(5).value(cp1, dep, 0.1, deployment(3, 3), "95")
	expect(t, ReplicasRestored(), settle.input(Final), verdict.Preserved)
}

func TestReplicasRestoredInsufficientWhenUnreadableOrUndecidable(t *testing.T) {
	r := newRun(t)
	r.round(0).unreadable(cp1, dep, 1.5, "connection refused").unreadable(cp2, dep, 1.5, "connection refused")
	expect(t, ReplicasRestored(), r.input(Final), verdict.InsufficientData, "connection refused")

	split := newRun(t)
	split.round(0).value(cp1, dep, 0.1, deployment(3, 3), "").value(cp2, dep, 0.1, deployment(1, 3), "")
	expect(t, ReplicasRestored(), split.input(Final), verdict.InsufficientData, "cannot say which is newer")
}
