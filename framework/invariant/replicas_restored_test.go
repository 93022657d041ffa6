package invariant

import (
	"strings"
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
	r.Round(0).Value(cp1, dep, 0.1, deployment(3, 3), "50").Value(cp2, dep, 0.1, deployment(3, 3), "50")
	expect(t, ReplicasRestored(), r.input(Final), verdict.Preserved, "3 of 3 replicas ready")
}

func TestReplicasRestoredViolatedWhenReplicasStayShort(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, dep, 0.1, deployment(2, 3), "70").Unreadable(cp2, dep, 1.5, "timeout")
	expect(t, ReplicasRestored(), r.input(Final), verdict.Violated, "apiserver/cp1 shows 2 of 3 replicas ready")

	gone := newRun(t)
	gone.Round(0).Value(cp1, dep, 0.1, evidence.DeploymentValue{}, "")
	expect(t, ReplicasRestored(), gone.input(Final), verdict.Violated, "no test Deployment")
}

func TestReplicasRestoredTheFreshestServerDecides(t *testing.T) {
	// cp2 answered from an older state; cp1's newer answer is the truth now.
	r := newRun(t)
	r.Round(0).Value(cp1, dep, 0.1, deployment(3, 3), "90").Value(cp2, dep, 0.1, deployment(1, 3), "80")
	expect(t, ReplicasRestored(), r.input(Final), verdict.Preserved, "apiserver/cp1")

	// Only the last snapshot is judged: an earlier short one does not count.
	settle := newRun(t)
	settle.Round(0).Value(cp1, dep, 0.1, deployment(1, 3), "80")
	settle.Round(5).Value(cp1, dep, 0.1, deployment(3, 3), "95")
	expect(t, ReplicasRestored(), settle.input(Final), verdict.Preserved)
}

func TestReplicasRestoredInsufficientWhenUnreadableOrUndecidable(t *testing.T) {
	r := newRun(t)
	r.Round(0).Unreadable(cp1, dep, 1.5, "connection refused").Unreadable(cp2, dep, 1.5, "connection refused")
	expect(t, ReplicasRestored(), r.input(Final), verdict.InsufficientData, "connection refused")

	split := newRun(t)
	split.Round(0).Value(cp1, dep, 0.1, deployment(3, 3), "").Value(cp2, dep, 0.1, deployment(1, 3), "")
	expect(t, ReplicasRestored(), split.input(Final), verdict.InsufficientData, "cannot say which is newer")
}

func TestReplicasRestoredSaysWhetherReplicasFellShort(t *testing.T) {
	// The input holds earlier samples of the run: one of them was short.
	dipped := newRun(t)
	dipped.Round(0).Value(cp1, dep, 0.1, deployment(3, 3), "50")
	dipped.Round(5).Value(cp1, dep, 0.1, deployment(1, 3), "60")
	dipped.Round(9).Value(cp1, dep, 0.1, deployment(3, 3), "70")
	j := expect(t, ReplicasRestored(), dipped.input(Final), verdict.Preserved)
	wantExercised(t, j, true, "1 of 3", "apiserver/cp1")

	steadyRun := newRun(t)
	steadyRun.Round(0).Value(cp1, dep, 0.1, deployment(3, 3), "50")
	steadyRun.Round(9).Value(cp1, dep, 0.1, deployment(3, 3), "50")
	wantExercised(t, expect(t, ReplicasRestored(), steadyRun.input(Final), verdict.Preserved), false, "at spec in each of 1 earlier sample(s)")

	short := newRun(t)
	short.Round(0).Value(cp1, dep, 0.1, deployment(2, 3), "70")
	wantExercised(t, expect(t, ReplicasRestored(), short.input(Final), verdict.Violated), true)

	// Only the judged sample: nothing shows whether the replicas ever fell
	// short, and the judgement does not pretend to know.
	alone := newRun(t)
	alone.Round(0).Value(cp1, dep, 0.1, deployment(3, 3), "50")
	j = expect(t, ReplicasRestored(), alone.input(Final), verdict.Preserved)
	if j.Exercised != nil || !strings.Contains(j.Exercise, "not known") {
		t.Errorf("with only the judged sample, exercised must be left unknown and say so: %v %q", j.Exercised, j.Exercise)
	}
}

func TestReplicasRestoredATimeoutIsNeverAShortfall(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, dep, 0.1, deployment(3, 3), "90").Unreadable(cp2, dep, 2, "timeout: no answer within 2s")
	expect(t, ReplicasRestored(), r.input(Final), verdict.Preserved, "apiserver/cp1")
	none := newRun(t)
	none.Round(0).Unreadable(cp1, dep, 2, "timeout: no answer within 2s").Unreadable(cp2, dep, 2, "timeout: no answer within 2s")
	expect(t, ReplicasRestored(), none.input(Final), verdict.InsufficientData, "timeout")
}
