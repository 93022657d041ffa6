package cleanup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/lab/cleanup"
)

// These check which objects Reset deletes and what Problems reports, on
// client-go's in-memory clientset; lab/static/apiserver_test.go runs a reset
// against a real kube-apiserver and namespace controller.

func node(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

func namespace(name string, owned bool) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if owned {
		ns.Labels = map[string]string{cleanup.OwnedLabel: "true"}
	}
	return ns
}

func TestResetDeletesOnlyFaultlinesNamespaces(t *testing.T) {
	kube := fake.NewClientset(node("w1", corev1.ConditionTrue),
		namespace("fl-run-1", true), namespace("fl-run-2", true), namespace("users-app", false))
	if err := cleanup.Reset(context.Background(), kube, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	left, err := kube.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 1 || left.Items[0].Name != "users-app" {
		t.Fatalf("namespaces after reset: %v, want only users-app", left.Items)
	}
}

func TestProblemsNameWhatIsNotClean(t *testing.T) {
	now := metav1.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "writer-0", Namespace: "fl-run-1", DeletionTimestamp: &now, Finalizers: []string{"x"}}}
	kube := fake.NewClientset(node("w1", corev1.ConditionTrue), node("w2", corev1.ConditionUnknown),
		namespace("fl-run-1", true), namespace("users-app", false), pod)
	problems, err := cleanup.Problems(context.Background(), kube)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(problems, "; ")
	want := "node w2 is not Ready; namespace fl-run-1 has terminating pods writer-0"
	if got != want {
		t.Fatalf("Problems = %q, want %q", got, want)
	}
}

func TestResetTimesOutNamingTheProblem(t *testing.T) {
	kube := fake.NewClientset(node("w1", corev1.ConditionFalse))
	err := cleanup.Reset(context.Background(), kube, 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "node w1 is not Ready") {
		t.Fatalf("Reset with a NotReady node: %v, want a timeout naming it", err)
	}
}
