package drills

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
