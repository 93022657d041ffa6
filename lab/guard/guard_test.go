package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/guard"
)

// These cover the guard's decisions against client-go's in-memory
// clientset; lab/static/apiserver_test.go runs them against a real
// kube-apiserver.

func labConfig(isLab bool) *lab.Config {
	return &lab.Config{Name: "pair", Kind: "static", Lab: isLab}
}

func marker(labName string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: guard.MarkerName, Namespace: guard.MarkerNamespace},
		Data:       map[string]string{guard.MarkerKey: labName},
	}
}

func TestConfigNotMarkedAsLabIsRefusedBeforeTheClusterIsAsked(t *testing.T) {
	kube := fake.NewClientset(marker("pair"))
	err := guard.Check(context.Background(), labConfig(false), kube)
	if !errors.Is(err, guard.ErrRefused) || !strings.Contains(err.Error(), "lab: true") {
		t.Fatalf("Check = %v, want a refusal naming `lab: true`", err)
	}
	if n := len(kube.Actions()); n != 0 {
		t.Fatalf("the cluster was asked %d times before the config was refused", n)
	}
}

func TestClusterWithoutMarkerIsRefused(t *testing.T) {
	err := guard.Check(context.Background(), labConfig(true), fake.NewClientset())
	if !errors.Is(err, guard.ErrRefused) {
		t.Fatalf("Check = %v, want a refusal", err)
	}
	for _, want := range []string{guard.MarkerName, "kubectl -n kube-system create configmap faultline-lab-marker --from-literal=lab=pair"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not mention %q", err, want)
		}
	}
}

func TestClusterMarkedForAnotherLabIsRefused(t *testing.T) {
	err := guard.Check(context.Background(), labConfig(true), fake.NewClientset(marker("lab11")))
	if !errors.Is(err, guard.ErrRefused) || !strings.Contains(err.Error(), `"lab11"`) {
		t.Fatalf("Check = %v, want a refusal naming the other lab", err)
	}
}

func TestMarkedLabPasses(t *testing.T) {
	if err := guard.Check(context.Background(), labConfig(true), fake.NewClientset(marker("pair"))); err != nil {
		t.Fatal(err)
	}
}

func TestPlaceMarkerThenCheckPasses(t *testing.T) {
	kube := fake.NewClientset()
	ctx := context.Background()
	if err := guard.PlaceMarker(ctx, labConfig(true), kube); err != nil {
		t.Fatal(err)
	}
	if err := guard.PlaceMarker(ctx, labConfig(true), kube); err != nil {
		t.Fatalf("placing the same marker twice: %v", err)
	}
	if err := guard.Check(ctx, labConfig(true), kube); err != nil {
		t.Fatal(err)
	}
	other := &lab.Config{Name: "racks", Lab: true}
	if err := guard.PlaceMarker(ctx, other, kube); err == nil || !strings.Contains(err.Error(), `"pair"`) {
		t.Fatalf("re-marking for another lab: %v, want a refusal naming the current one", err)
	}
	if err := guard.PlaceMarker(ctx, labConfig(false), fake.NewClientset()); !errors.Is(err, guard.ErrRefused) {
		t.Fatalf("marking for a config without lab: true: %v, want a refusal", err)
	}
}

func TestUnreadableKubeconfigIsAnError(t *testing.T) {
	err := guard.CheckKubeconfig(context.Background(), labConfig(true), "/nonexistent/kubeconfig")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Fatalf("CheckKubeconfig = %v, want an error naming the file", err)
	}
}
