//go:build lab

package e2eframework

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/faultline/faultline/fixtures/images"
)

// Image references no node has before the test: the first is loaded from
// an archive, the second never is.
const (
	archiveRef     = "faultline.example/e2e-archive:v1"
	neverLoadedRef = "faultline.example/e2e-archive:never-loaded"
)

// buildArchive packs the fixtures' pause program as an image named
// archiveRef alone, gzip-compressed, as a user's `docker save | gzip`
// would give it.
func buildArchive(ctx context.Context, t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	built, err := images.BuildWith(ctx, images.Options{OutDir: dir, Programs: []images.Program{{Name: "pause"}}})
	if err != nil {
		t.Fatal(err)
	}
	builtTag, err := name.NewTag(built[0].Ref, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(built[0].Tarball, &builtTag)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(archiveRef, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "e2e-archive.tar")
	if err := tarball.WriteToFile(plain, tag, img); err != nil {
		t.Fatal(err)
	}
	gz := plain + ".gz"
	if err := gzipFile(plain, gz); err != nil {
		t.Fatal(err)
	}
	return gz
}

func gzipFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	if _, err := io.Copy(zw, in); err != nil {
		out.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// pinnedPod runs image on one node, from the node's runtime only.
func pinnedPod(ns, podName, node, image string) *corev1.Pod {
	noToken := false
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			AutomountServiceAccountToken:  &noToken,
			TerminationGracePeriodSeconds: &grace,
			// The control-plane nodes are tainted; the image must run
			// on every node.
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:            "pause",
				Image:           image,
				ImagePullPolicy: corev1.PullNever,
			}},
		},
	}
}

// waitPod waits until match holds for the pod's first container, and
// says what it looked like last when it does not.
func waitPod(ctx context.Context, cfg *envconf.Config, pod *corev1.Pod, timeout time.Duration, what string, match func(corev1.ContainerStatus) bool) error {
	err := wait.For(conditions.New(cfg.Client().Resources()).ResourceMatch(pod, func(o k8s.Object) bool {
		p := o.(*corev1.Pod)
		return len(p.Status.ContainerStatuses) > 0 && match(p.Status.ContainerStatuses[0])
	}), wait.WithContext(ctx), wait.WithTimeout(timeout), wait.WithInterval(time.Second), wait.WithImmediate())
	if err != nil {
		return fmt.Errorf("pod %s on %s: %s within %s: %w (last seen: phase %s, containers %+v)",
			pod.Name, pod.Spec.NodeName, what, timeout, err, pod.Status.Phase, pod.Status.ContainerStatuses)
	}
	return nil
}

// An image archive loaded with the provider's LoadImageArchive reaches the
// runtime of every node: a pod of it runs on each with imagePullPolicy
// Never, while a pod of an image never loaded cannot start, since the lab
// pulls from no registry.
func TestALoadedImageArchiveRunsOnEveryNode(t *testing.T) {
	var (
		archive string
		ns      string
		nodes   []string
	)
	f := features.New("an image archive loaded into every node").
		WithLabel("provider", "image-loader").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			archive = buildArchive(ctx, t)
			var list corev1.NodeList
			if err := cfg.Client().Resources().List(ctx, &list); err != nil {
				t.Fatal(err)
			}
			for _, n := range list.Items {
				nodes = append(nodes, n.Name)
			}
			if len(nodes) == 0 {
				t.Fatal("the cluster has no nodes")
			}
			ns = envconf.RandomName("e2e-archive", 20)
			if err := cfg.Client().Resources().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("a pod of an image never loaded cannot start", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			pod := pinnedPod(ns, "never-loaded", nodes[0], neverLoadedRef)
			if err := cfg.Client().Resources().Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			if err := waitPod(ctx, cfg, pod, 2*time.Minute, "waiting with ErrImageNeverPull", func(s corev1.ContainerStatus) bool {
				return s.State.Waiting != nil && s.State.Waiting.Reason == "ErrImageNeverPull"
			}); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Assess("LoadImageArchive imports the archive into every node", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, _ := envfuncs.GetClusterFromContext(ctx, clusterName)
			loader, ok := c.(support.E2EClusterProviderWithImageLoader)
			if !ok {
				t.Fatalf("the provider %T loads no images", c)
			}
			if err := loader.LoadImageArchive(ctx, archive); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("a pod of the loaded image runs on every node, pulling nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var pods []*corev1.Pod
			for i, n := range nodes {
				pod := pinnedPod(ns, fmt.Sprintf("loaded-%d", i), n, archiveRef)
				if err := cfg.Client().Resources().Create(ctx, pod); err != nil {
					t.Fatal(err)
				}
				pods = append(pods, pod)
			}
			for _, pod := range pods {
				if err := waitPod(ctx, cfg, pod, 2*time.Minute, "running", func(s corev1.ContainerStatus) bool {
					return s.State.Running != nil
				}); err != nil {
					t.Error(err)
				}
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if ns == "" {
				return ctx
			}
			if err := cfg.Client().Resources().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Feature()

	testenv.Test(t, f)
}
