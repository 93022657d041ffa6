//go:build lab

// These run against a real, marked cluster described by a static lab file:
//
//	FAULTLINE_STATIC_LAB=path/to/lab.yaml go test -tags lab ./lab/static/
//
// Without FAULTLINE_STATIC_LAB, TestMain brings up a local lab of their own
// and describes its cluster in a static lab file, as if it were someone's. They create and delete namespaces of their own only.
package static_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/cleanup"
	"github.com/faultline/faultline/lab/guard"
	"github.com/faultline/faultline/lab/static"
)

func realLab(t *testing.T) *static.Lab {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	path := os.Getenv("FAULTLINE_STATIC_LAB")
	if path == "" {
		t.Fatal("FAULTLINE_STATIC_LAB must name a static lab file for a running, marked cluster")
	}
	c, err := lab.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.(*static.Lab)
}

func TestRealClusterPassesTheGuard(t *testing.T) {
	l := realLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := guard.CheckKubeconfig(ctx, l.Config(), l.Config().Kubeconfig); err != nil {
		t.Fatal(err)
	}
	other := *l.Config()
	other.Name = "some-other-lab"
	err := guard.CheckKubeconfig(ctx, &other, other.Kubeconfig)
	if !errors.Is(err, guard.ErrRefused) {
		t.Fatalf("guard for a lab name the cluster is not marked with: %v, want a refusal", err)
	}
}

func TestRealClusterStatusReachesEveryHost(t *testing.T) {
	l := realLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.Hosts {
		if h.Power != "on" || strings.HasPrefix(h.Detail, "unreachable") {
			t.Errorf("host %s: power %s, %s", h.Name, h.Power, h.Detail)
		}
		t.Logf("host %s: services %+v %s", h.Name, h.Services, h.Detail)
	}
	if !st.Up {
		t.Errorf("status not up: %+v", st)
	}
}

func TestRealClusterResetDeletesOnlyFaultlinesNamespaces(t *testing.T) {
	l := realLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kube, err := l.Kube()
	if err != nil {
		t.Fatal(err)
	}
	suffix := fmt.Sprintf("%06d", rand.IntN(1000000))
	owned := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fl-reset-" + suffix, Labels: map[string]string{cleanup.OwnedLabel: "true"}}}
	kept := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fl-keep-" + suffix}}
	for _, ns := range []*corev1.Namespace{owned, kept} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		kube.CoreV1().Namespaces().Delete(context.Background(), kept.Name, metav1.DeleteOptions{})
		kube.CoreV1().Namespaces().Delete(context.Background(), owned.Name, metav1.DeleteOptions{})
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "state", Namespace: owned.Name}, Data: map[string]string{"k": "v"}}
	if _, err := kube.CoreV1().ConfigMaps(owned.Name).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := l.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, owned.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("faultline's namespace after Reset: %v, want it gone", err)
	}
	if _, err := kube.CoreV1().Namespaces().Get(ctx, kept.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("a namespace not faultline's was touched by Reset: %v", err)
	}
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Info().KubernetesVersion; got != v.GitVersion {
		t.Errorf("Info().KubernetesVersion = %q after Reset, want the API server's %q", got, v.GitVersion)
	}
	problems, err := cleanup.Problems(ctx, kube)
	if err != nil || len(problems) > 0 {
		t.Fatalf("after Reset: %s, %v", strings.Join(problems, "; "), err)
	}
}
