package static_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/internal/kubetest"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/cleanup"
	"github.com/faultline/faultline/lab/guard"
	"github.com/faultline/faultline/lab/static"
)

// Against a real kube-apiserver (and the real namespace controller): the
// guard, the marker, and a reset that deletes only faultline's namespaces.
// The cluster has no kubelet; the one node is registered by the test, and
// its Ready condition is what the test sets.
func TestResetAgainstARealAPIServer(t *testing.T) {
	cluster := kubetest.StartControlPlane(t, kubetest.Options{NamespaceController: true})
	kube := cluster.Client
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := &lab.Config{Name: "apiserver-test", Kind: static.Kind, Lab: true, Kubeconfig: cluster.Kubeconfig, StateDir: t.TempDir()}
	l := static.New(cfg, static.Options{})
	defer l.Close()

	registerNode(t, ctx, kube, "n1", corev1.ConditionTrue)
	owned := createNamespace(t, ctx, kube, "fl-run-1", true)
	kept := createNamespace(t, ctx, kube, "users-app", false)
	for _, ns := range []string{owned, kept} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "state"}, Data: map[string]string{"k": "v"}}
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Unmarked: refused, and nothing deleted.
	err := l.Reset(ctx)
	if !errors.Is(err, guard.ErrRefused) || !strings.Contains(err.Error(), "kubectl -n kube-system create configmap faultline-lab-marker") {
		t.Fatalf("Reset of an unmarked cluster: %v, want a refusal telling how to mark it", err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, owned, metav1.GetOptions{}); err != nil {
		t.Fatalf("a refused Reset touched namespace %s: %v", owned, err)
	}

	if err := guard.PlaceMarker(ctx, cfg, kube); err != nil {
		t.Fatal(err)
	}
	other := *cfg
	other.Name = "another-lab"
	if err := guard.Check(ctx, &other, kube); !errors.Is(err, guard.ErrRefused) {
		t.Fatalf("guard for another lab's name: %v, want a refusal", err)
	}

	if err := l.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, owned, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s after Reset: %v, want it gone", owned, err)
	}
	if _, err := kube.CoreV1().ConfigMaps(kept).Get(ctx, "state", metav1.GetOptions{}); err != nil {
		t.Fatalf("Reset touched %s, which is not faultline's: %v", kept, err)
	}
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Info().KubernetesVersion; got != v.GitVersion || got == "" {
		t.Fatalf("Info().KubernetesVersion = %q, want the API server's %q", got, v.GitVersion)
	}

	// A node that is not Ready keeps the cluster from a clean start.
	registerNode(t, ctx, kube, "n2", corev1.ConditionUnknown)
	err = cleanup.Reset(ctx, kube, 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "node n2 is not Ready") {
		t.Fatalf("Reset with a node not Ready: %v, want a timeout naming it", err)
	}
}

func registerNode(t *testing.T, ctx context.Context, kube kubernetes.Interface, name string, ready corev1.ConditionStatus) {
	t.Helper()
	n, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createNamespace(t *testing.T, ctx context.Context, kube kubernetes.Interface, name string, owned bool) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if owned {
		ns.Labels = map[string]string{cleanup.OwnedLabel: "true"}
	}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}
