package invariant

import (
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

func podOn(uid, node string) evidence.PodValue {
	return evidence.PodValue{Exists: true, UID: uid, NodeName: node, Phase: "Running"}
}

func TestGracefulDeletionPreservedWhenContainersStopBeforeTheObjectGoes(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "10").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	r.Round(1).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "11").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": exited}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	// The replacement, same name, new UID, on worker2.
	r.Round(2).Value(cp1, evidence.PodObject, 0.1, podOn("u2", "worker2"), "14").Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "")
	r.Round(3).Value(cp1, evidence.PodObject, 0.1, podOn("u2", "worker2"), "14").Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "")
	expect(t, GracefulDeletion(), r.input(Window), verdict.Preserved, "none of the containers of u1 ran after it left the API")
}

func TestGracefulDeletionViolatedWhenTheOldContainersOutliveTheObject(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "10").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	r.Round(1).Value(cp2, evidence.PodObject, 0.1, evidence.PodValue{}, "").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	r.Round(2).Value(cp2, evidence.PodObject, 0.1, podOn("u2", "worker2"), "15").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	j := expect(t, GracefulDeletion(), r.input(Window), verdict.Violated, "pod u1 left the API", "apiserver/cp2 showed no pod", "still ran on worker1")
	// Round 1's runtime read began before cp2's read returned: it proves
	// nothing; round 2's read is the proof.
	if !j.At.Equal(sec(2)) {
		t.Errorf("at %s, want 2 s", Stamp(j.At))
	}
}

func TestGracefulDeletionByUIDNotByName(t *testing.T) {
	// The replacement runs under the same name on another node right after
	// the old object left: its containers are not the old pod's.
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "10").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	r.Round(1).Value(cp1, evidence.PodObject, 0.1, podOn("u2", "worker2"), "12").Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "")
	r.Round(2).Value(cp1, evidence.PodObject, 0.1, podOn("u2", "worker2"), "12").Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "")
	expect(t, GracefulDeletion(), r.input(Window), verdict.Preserved)
}

func TestGracefulDeletionForceDeletedPodIsExempt(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "10").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	r.Round(1).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	r.Round(2).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	in := r.input(Window)
	in.Timeline = evidence.Timeline{ForceDeletion(sec(0.5), "faultline", "stateful-0", "u1")}
	expect(t, GracefulDeletion(), in, verdict.Preserved, "exempt: u1 (force-deleted")
	// Another pod's force delete does not exempt this one.
	in.Timeline = evidence.Timeline{ForceDeletion(sec(0.5), "faultline", "stateful-0", "u9")}
	expect(t, GracefulDeletion(), in, verdict.Violated)
}

func TestGracefulDeletionInsufficientWhenTheNodeCannotBeReadAfter(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "10").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	r.Round(1).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "").Unreadable(cri1, q, 2, "ssh: i/o timeout").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	r.Round(3).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "").Unreadable(cri1, q, 2, "ssh: i/o timeout").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	expect(t, GracefulDeletion(), r.input(Window), verdict.InsufficientData, `u1 (on "worker1"`, "ssh: i/o timeout")
}

func TestGracefulDeletionInsufficientWithoutTheAPI(t *testing.T) {
	r := newRun(t)
	r.Round(0).Unreadable(cp1, evidence.PodObject, 1.5, "connection refused").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	expect(t, GracefulDeletion(), r.input(Window), verdict.InsufficientData, "no API server answered")
}

func TestGracefulDeletionIsExercisedOnlyWhenAnIncarnationLeavesTheAPI(t *testing.T) {
	left := newRun(t)
	left.Round(0).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "10").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	left.Round(1).Value(cp1, evidence.PodObject, 0.1, podOn("u2", "worker2"), "12").Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "")
	left.Round(2).Value(cp1, evidence.PodObject, 0.1, podOn("u2", "worker2"), "12").Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "")
	wantExercised(t, expect(t, GracefulDeletion(), left.input(Window), verdict.Preserved), true, "u1")

	stayed := newRun(t)
	for s := 0.0; s < 3; s++ {
		stayed.Round(s).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "10").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	}
	wantExercised(t, expect(t, GracefulDeletion(), stayed.input(Window), verdict.Preserved, "none left the API"), false, "none left the API")

	// A force-deleted pod is exempt: its leaving does not exercise the
	// graceful path.
	forced := newRun(t)
	forced.Round(0).Value(cp1, evidence.PodObject, 0.1, podOn("u1", "worker1"), "10").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	forced.Round(1).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	forced.Round(2).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "").Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
	in := forced.input(Window)
	in.Timeline = evidence.Timeline{ForceDeletion(sec(0.5), "faultline", "stateful-0", "u1")}
	wantExercised(t, expect(t, GracefulDeletion(), in, verdict.Preserved), false, "force-deleted")
	in.Timeline = nil
	wantExercised(t, expect(t, GracefulDeletion(), in, verdict.Violated), true, "u1")
}
