package cleanup

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab/apiretry"
)

// OwnedNamespace is a namespace faultline creates, carrying OwnedLabel so
// that a cleanup reset deletes it.
func OwnedNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{OwnedLabel: "true"}}}
}

// EnsureOwnedNamespace creates the namespace as OwnedNamespace does (a
// create the API server dropped is asked again), and labels it OwnedLabel
// where it exists already without the label (made before namespaces
// carried it): a namespace the reset does not know as faultline's is
// never deleted, and what a run left in it would be found by the next.
func EnsureOwnedNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	if err := apiretry.Create(ctx, func() error {
		_, err := kube.CoreV1().Namespaces().Create(ctx, OwnedNamespace(name), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return LabelOwned(ctx, kube, name)
}

// LabelOwned labels the namespace OwnedLabel unless it carries it: one
// made before namespaces carried it, or from a manifest that lacks it.
func LabelOwned(ctx context.Context, kube kubernetes.Interface, name string) error {
	var ns *corev1.Namespace
	if err := apiretry.Do(ctx, apiretry.Backoff, apiretry.Dropped, func() (err error) {
		ns, err = kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("reading namespace %s: %w", name, err)
	}
	if ns.Labels[OwnedLabel] == "true" {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{OwnedLabel: "true"}}})
	if err != nil {
		return err
	}
	if err := apiretry.Do(ctx, apiretry.Backoff, apiretry.Dropped, func() error {
		_, err := kube.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("labelling namespace %s %s=true: %w", name, OwnedLabel, err)
	}
	return nil
}
