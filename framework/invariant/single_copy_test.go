package invariant

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

const (
	cri1 = evidence.Source("cri/worker1")
	cri2 = evidence.Source("cri/worker2")
	cri3 = evidence.Source("cri/worker3")
	q    = evidence.PodRunningHere
)

func TestSingleCopyPreservedWhenThePodMovesAfterItStopped(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "").Value(cri3, q, 0.2, runtimeWith("", nil), "")
	r.Round(1).Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "").Value(cri3, q, 0.2, runtimeWith("", nil), "")
	r.Round(2).Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": exited}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "").Value(cri3, q, 0.2, runtimeWith("", nil), "")
	r.Round(3).Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "").Value(cri3, q, 0.2, runtimeWith("", nil), "")
	r.Round(4).Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "").Value(cri3, q, 0.2, runtimeWith("", nil), "")
	expect(t, SingleCopy(), r.input(Window), verdict.Preserved, "no moment", "cri/worker2 ran it in 2 of 5 reads")
}

func TestSingleCopyViolatedWhenTwoNodesRunItThroughTheSameSpan(t *testing.T) {
	r := newRun(t)
	// worker1 keeps the old copy (partitioned from the API, not from us);
	// worker2 starts the replacement while it still runs.
	for i, s := range []float64{0, 1, 2, 3} {
		rd := r.Round(s).Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri3, q, 0.2, runtimeWith("", nil), "")
		if i >= 2 {
			rd.Value(cri2, q, 0.3, runtimeWith("u2", map[string]string{"c2": running}), "")
		} else {
			rd.Value(cri2, q, 0.3, runtimeWith("", nil), "")
		}
	}
	j := expect(t, SingleCopy(), r.input(Window), verdict.Violated, "two nodes at once", "worker1", "worker2")
	// worker1's c1 ran throughout [0.2 s, 3 s]; worker2's first read of c2
	// ([2 s, 2.3 s]) lies inside it: the earliest proof.
	if !j.At.Equal(sec(2)) || !strings.Contains(j.Reason, "inside that span") {
		t.Errorf("violation at %s (%s), want the read of worker2 at 2 s inside worker1's span", Stamp(j.At), j.Reason)
	}
}

func TestSingleCopySameRoundOnTwoNodesIsNotProofOfTwoAtOnce(t *testing.T) {
	// The hand-over happened inside one round: worker1 was read while its
	// copy still ran, worker2 after its copy started. Different moments.
	r := newRun(t)
	r.Round(0).Value(cri1, q, 0.1, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.1, runtimeWith("", nil), "")
	r.Round(1).Value(cri1, q, 0.1, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.9, runtimeWith("u2", map[string]string{"c2": running}), "")
	r.Round(2).Value(cri1, q, 0.1, runtimeWith("", nil), "").Value(cri2, q, 0.1, runtimeWith("u2", map[string]string{"c2": running}), "")
	r.Round(3).Value(cri1, q, 0.1, runtimeWith("", nil), "").Value(cri2, q, 0.1, runtimeWith("u2", map[string]string{"c2": running}), "")
	// c1 is certain over [0.1, 1.0]; c2's first read spans [1.0, 1.9], not
	// inside it; c2 is certain from 1.9 on, after c1's last sighting.
	expect(t, SingleCopy(), r.input(Window), verdict.Preserved)
}

func TestSingleCopyRestartOnTheSameNodeIsNotTwoCopies(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cri1, q, 0.1, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.1, runtimeWith("", nil), "")
	// A new sandbox and container of the same pod on the same node, the old
	// one still listed as running in the same read.
	both := runtimeWith("u1", map[string]string{"c1": running})
	both.Containers = append(both.Containers, evidence.RuntimeContainer{ID: "c1b", Name: "app", SandboxID: "sb-u1b", PodUID: "u1", State: running})
	r.Round(1).Value(cri1, q, 0.1, both, "").Value(cri2, q, 0.1, runtimeWith("", nil), "")
	r.Round(2).Value(cri1, q, 0.1, both, "").Value(cri2, q, 0.1, runtimeWith("", nil), "")
	expect(t, SingleCopy(), r.input(Window), verdict.Preserved)
}

func TestSingleCopyInsufficientWhenARuntimeIsDarkWhileAnotherRunsThePod(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cri1, q, 0.1, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.1, runtimeWith("", nil), "")
	r.Round(1).Unreadable(cri1, q, 2, "timeout: no answer within 2s").Value(cri2, q, 0.1, runtimeWith("u2", map[string]string{"c2": running}), "")
	r.Round(3).Unreadable(cri1, q, 2, "timeout: no answer within 2s").Value(cri2, q, 0.1, runtimeWith("u2", map[string]string{"c2": running}), "")
	expect(t, SingleCopy(), r.input(Window), verdict.InsufficientData, "could have hidden", "cri/worker1 unreadable while cri/worker2 ran the pod", "timeout")
}

func TestSingleCopyInsufficientWhenNoRuntimeAnswers(t *testing.T) {
	r := newRun(t)
	r.Round(0).Unreadable(cri1, q, 1, "ssh: connection refused").Unreadable(cri2, q, 1, "ssh: connection refused")
	expect(t, SingleCopy(), r.input(Window), verdict.InsufficientData)
}

func TestSingleCopyNeverReadsTheAPI(t *testing.T) {
	for _, rd := range SingleCopy().Reads() {
		if rd.Sources != "cri/*" {
			t.Errorf("single-copy reads %s; it must read only container runtimes", rd.Sources)
		}
	}
}

func TestSingleCopyIsExercisedOnlyWhenThePodMoves(t *testing.T) {
	// Moved to worker2 under a new UID: exercised.
	moved := newRun(t)
	moved.Round(0).Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	moved.Round(1).Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	moved.Round(2).Value(cri1, q, 0.2, runtimeWith("", nil), "").Value(cri2, q, 0.2, runtimeWith("u2", map[string]string{"c2": running}), "")
	j := expect(t, SingleCopy(), moved.input(Window), verdict.Preserved)
	wantExercised(t, j, true, "worker1", "worker2")

	// Ran on worker1 throughout, one incarnation: the guarantee was never
	// challenged.
	still := newRun(t)
	for s := 0.0; s < 3; s++ {
		still.Round(s).Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.2, runtimeWith("", nil), "")
	}
	j = expect(t, SingleCopy(), still.input(Window), verdict.Preserved)
	wantExercised(t, j, false, "only on worker1")

	// A restart on the same node under the same UID is not a move either.
	restart := newRun(t)
	restart.Round(0).Value(cri1, q, 0.1, runtimeWith("u1", map[string]string{"c1": running}), "").Value(cri2, q, 0.1, runtimeWith("", nil), "")
	restart.Round(1).Value(cri1, q, 0.1, runtimeWith("u1", map[string]string{"c1": exited}), "").Value(cri2, q, 0.1, runtimeWith("", nil), "")
	restart.Round(2).Value(cri1, q, 0.1, runtimeWith("u1", map[string]string{"c1b": running}), "").Value(cri2, q, 0.1, runtimeWith("", nil), "")
	j = expect(t, SingleCopy(), restart.input(Window), verdict.Preserved)
	wantExercised(t, j, false)

	// The API created a replacement while the old copy still ran on worker1:
	// a second copy could have started, so the guarantee was challenged
	// even if no runtime ever ran it.
	in := still.input(Window)
	in.Timeline = evidence.Timeline{{At: sec(1.5), Source: "apiserver/cp1", Subject: "pod/faultline/stateful-0", Kind: "pod-created", Detail: "uid u2, replaces uid u1"}}
	j = expect(t, SingleCopy(), in, verdict.Preserved)
	wantExercised(t, j, true, "pod-created", "uid u2")
	// Another pod's creation, or one outside the input's span, is not.
	in.Timeline = evidence.Timeline{
		{At: sec(1.5), Source: "apiserver/cp1", Subject: "pod/faultline/web-5f7d-x2", Kind: "pod-created", Detail: "uid w9"},
		{At: sec(9), Source: "apiserver/cp1", Subject: "pod/faultline/stateful-0", Kind: "pod-created", Detail: "uid u2, replaces uid u1"},
	}
	j = expect(t, SingleCopy(), in, verdict.Preserved)
	wantExercised(t, j, false)

	// A creation a relisting delivered within the span, of a pod the
	// cluster created before it began, did not happen within the input;
	// one created within it did, whenever it was seen.
	replayed := evidence.Event{At: sec(1.5), Source: "apiserver/cp1", Subject: "pod/faultline/stateful-0", Kind: "pod-created", Detail: "uid u2", Replayed: true}.
		WithCluster(sec(-60), "metadata.creationTimestamp", evidence.Seconds)
	in.Timeline = evidence.Timeline{replayed}
	wantExercised(t, expect(t, SingleCopy(), in, verdict.Preserved), false)
	replayed = replayed.WithCluster(sec(1), "metadata.creationTimestamp", evidence.Seconds)
	replayed.At = sec(30)
	in.Timeline = evidence.Timeline{replayed}
	wantExercised(t, expect(t, SingleCopy(), in, verdict.Preserved), true, "replayed by a relisting")
}

func TestSingleCopyViolatedIsExercised(t *testing.T) {
	r := newRun(t)
	for i, s := range []float64{0, 1, 2, 3} {
		rd := r.Round(s).Value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
		if i >= 2 {
			rd.Value(cri2, q, 0.3, runtimeWith("u2", map[string]string{"c2": running}), "")
		} else {
			rd.Value(cri2, q, 0.3, runtimeWith("", nil), "")
		}
	}
	wantExercised(t, expect(t, SingleCopy(), r.input(Window), verdict.Violated), true)
}
