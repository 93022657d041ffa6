package cleanup

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A namespace faultline makes is one the reset deletes: made with the
// label, or labelled where an earlier run left it without.
func TestEnsureOwnedNamespaceLabelsWhatTheResetDeletes(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "old"}})
	for _, name := range []string{"new", "old"} {
		if err := EnsureOwnedNamespace(ctx, kube, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	owned, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: OwnedSelector})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range owned.Items {
		names = append(names, ns.Name)
	}
	if len(names) != 2 {
		t.Errorf("namespaces the reset would delete: %v, want new and old", names)
	}
}
