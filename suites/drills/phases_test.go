package drills

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

// A pod the kubelet finishes after the node's return holds its terminal
// phase for a moment before its deletion; the watch must stamp it.
func TestPhaseWatchStampsATerminalPhase(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "web-1", UID: "u1"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	cs := fake.NewClientset(pod)
	w, err := startPhaseWatch(cs, "apiserver/cp", Namespace)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	var got []evidence.Event
	waitFor := func(kind string) evidence.Event {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			got = append(got, w.drain()...)
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
	if _, err := cs.CoreV1().Pods(Namespace).UpdateStatus(context.Background(), failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := waitFor(KindPodPhase)
	if e.Subject != "pod/"+Namespace+"/web-1" || e.Source != "apiserver/cp" {
		t.Errorf("event about %s from %s", e.Subject, e.Source)
	}
	for _, want := range []string{"uid u1,", "Running → Failed", "web: ContainerStatusUnknown, exit 137"} {
		if !strings.Contains(e.Detail, want) {
			t.Errorf("detail %q lacks %q", e.Detail, want)
		}
	}
}

func TestPodStateSaysHowContainersEnded(t *testing.T) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "web-1", UID: "u1"},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "web", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0}}},
		}},
	}
	st := podState(p)
	if st.Phase != "Succeeded" || len(st.Terminated) != 1 || st.Terminated[0] != "web: Completed, exit 0" {
		t.Errorf("pod state %+v", st)
	}
}
