package watch

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/framework/evidence"
)

const namespace = "c1"

// A pod the kubelet finishes after the node's return holds its terminal
// phase for a moment before its deletion; the watch must stamp it.
func TestPhaseWatchStampsATerminalPhase(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "web-1", UID: "u1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	cs := fake.NewClientset(pod)
	w, err := StartPodPhases(cs, "apiserver/cp", namespace)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []evidence.Event
	waitFor := func(kind string) evidence.Event {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			got = append(got, w.Drain()...)
			for _, e := range got {
				if e.Kind == kind {
					return e
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %s event; got %+v", kind, got)
		return evidence.Event{}
	}
	waitFor(KindPodPhaseWatching)
	failed := pod.DeepCopy()
	failed.Status.Phase = corev1.PodFailed
	failed.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", ExitCode: 137}}}}
	if _, err := cs.CoreV1().Pods(namespace).UpdateStatus(context.Background(), failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := waitFor(KindPodPhase)
	if e.Subject != "pod/"+namespace+"/web-1" || e.Source != "apiserver/cp" {
		t.Errorf("event about %s from %s", e.Subject, e.Source)
	}
	for _, want := range []string{"uid u1,", "Running → Failed", "web: ContainerStatusUnknown, exit 137"} {
		if !strings.Contains(e.Detail, want) {
			t.Errorf("detail %q lacks %q", e.Detail, want)
		}
	}
}

func TestTerminatedOfSaysHowContainersEnded(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
		{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0}}},
		{Name: "side", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}},
	}}}
	if got := TerminatedOf(p); len(got) != 2 || got[0] != "web: Completed, exit 0" || got[1] != "init: none, exit 2" {
		t.Errorf("TerminatedOf = %q", got)
	}
}
