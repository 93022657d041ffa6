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
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/fixtures/program"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/cleanup"
	"github.com/faultline/faultline/lab/guard"
	"github.com/faultline/faultline/lab/labcheck"
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

// The lab's storage, read as the static lab reads it: a file a pod wrote
// on a claim of the shared class is refused while the claim is not marked
// quiesced, then read through a reader pod once it is and nothing mounts
// it; the writer's history went to the store the lab runs, which Reset
// emptied before.
func TestRealClusterReadsAVolumeThroughAReaderPod(t *testing.T) {
	l := realLab(t)
	info, err := l.StorageInfo()
	if errors.Is(err, lab.ErrUnsupported) {
		t.Skip("the lab file has no storage section")
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := l.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	kube, err := l.Kube()
	if err != nil {
		t.Fatal(err)
	}
	ns := "fl-vol-" + fmt.Sprintf("%06d", rand.IntN(1000000))
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{cleanup.OwnedLabel: "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	class := info.SharedClass
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
		},
	}
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const appends, prefix = 12, "/faultline/static-test/"
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	writer := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "ledger", Image: images.Ref("ledger"), ImagePullPolicy: corev1.PullIfNotPresent,
				Args: []string{"--dir=/data", "--file=ledger.log", "--interval=50ms", fmt.Sprintf("--appends=%d", appends),
					"--history-endpoints=" + strings.Join(info.HistoryEndpoints, ","), "--history-prefix=" + prefix},
				Env: []corev1.EnvVar{
					{Name: program.EnvPodName, ValueFrom: field("metadata.name")},
					{Name: program.EnvPodUID, ValueFrom: field("metadata.uid")},
					{Name: program.EnvNodeName, ValueFrom: field("spec.nodeName")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, writer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pvName string
	waitFor(t, ctx, "the writer to finish", func() (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "writer", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Status.Phase == corev1.PodFailed {
			t.Fatalf("the writer failed: %+v", p.Status)
		}
		return p.Status.Phase == corev1.PodSucceeded, string(p.Status.Phase)
	})
	pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvName = pvc.Spec.VolumeName
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil || pv.Spec.CSI == nil {
		t.Fatalf("volume %s: %v", pvName, err)
	}
	handle := pv.Spec.CSI.VolumeHandle

	if _, err := l.ReadVolumeFile(ctx, handle, "ledger.log"); err == nil || !strings.Contains(err.Error(), lab.QuiescedClaimAnnotation) {
		t.Fatalf("read before the claim is marked: %v, want a refusal naming %s", err, lab.QuiescedClaimAnnotation)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, lab.QuiescedClaimAnnotation, time.Now().UTC().Format(time.RFC3339))
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "data", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	var f lab.VolumeFile
	waitFor(t, ctx, "the volume read through a reader pod", func() (bool, string) {
		f, err = l.ReadVolumeFile(ctx, handle, "ledger.log")
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	// Records, not lines: a record's length and checksum are binary and
	// may hold a newline byte of their own.
	if c := ledgerlog.Scan(f.Data); len(c.Entries) != appends || len(c.Damage) != 0 || len(f.MountedOn) != 0 {
		t.Errorf("read %d whole records and %d damaged stretches (%q), mounted on %v; want the writer's %d appends, nothing mounted", len(c.Entries), len(c.Damage), f.Path, f.MountedOn, appends)
	}
	t.Logf("read %d bytes: %s", len(f.Data), f.Path)
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Errorf("pods after the read: %d, %v; want only the writer (the reader deleted)", len(pods.Items), err)
	}
	store, err := clientv3.New(clientv3.Config{Endpoints: info.HistoryEndpoints, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	resp, err := store.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count == 0 {
		t.Errorf("the writer's history in the store at %v: %d keys, %v", info.HistoryEndpoints, resp.Count, err)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, done func() (bool, string)) {
	t.Helper()
	var last string
	for {
		ok, why := done()
		if ok {
			return
		}
		last = why
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %s", what, last)
		case <-time.After(time.Second):
		}
	}
}

// With ssh.sudo, the login is not root and every command runs as root
// through sudo, as on a fleet whose admins log in as themselves.
func TestRealClusterCommandsRunThroughSudo(t *testing.T) {
	l := realLab(t)
	if !l.Config().SSH.Sudo {
		t.Skip("the lab file logs in without sudo")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, h := range l.Hosts() {
		res, err := h.Run(ctx, `echo "$(id -u) $SUDO_USER"`)
		if err != nil || strings.TrimSpace(res.Stdout) != "0 "+l.Config().SSH.User {
			t.Errorf("%s: %q %v, want uid 0 through sudo by %s", h.Name(), res.Stdout, err, l.Config().SSH.User)
		}
	}
}

// faultline lab check on the real cluster: what the static lab over a
// local lab offers and lacks, found reading only.
func TestRealClusterCheck(t *testing.T) {
	l := realLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := labcheck.Check(ctx, l)
	var b strings.Builder
	r.Write(&b)
	t.Log("\n" + b.String())
	want := map[string]labcheck.Status{
		labcheck.Marker: labcheck.Met, labcheck.SSH: labcheck.Met, labcheck.Root: labcheck.Met,
		labcheck.IPTables: labcheck.Met, labcheck.CRI: labcheck.Met, labcheck.ProxyRules: labcheck.Met,
		labcheck.PolicyRules: labcheck.Met, labcheck.Forwarding: labcheck.Met, labcheck.APIServers: labcheck.Met,
		labcheck.Version130: labcheck.Met, labcheck.AuthzConfig: labcheck.Met, labcheck.Services: labcheck.Met,
		// What the static lab cannot do whatever the cluster.
		labcheck.Power: labcheck.NotMet, labcheck.EtcdAccess: labcheck.NotMet, labcheck.KubeletAccess: labcheck.NotMet,
		labcheck.FSCheck: labcheck.NotMet,
		// The local lab's hosts are namespaces of one kernel.
		labcheck.OwnClock: labcheck.NotMet,
	}
	if l.Config().Storage != nil {
		want[labcheck.Storage] = labcheck.Met
	}
	if len(l.Config().Kubernetes.AgentKubeconfigs) > 0 {
		want[labcheck.AgentIDs], want[labcheck.AgentConfigs] = labcheck.Met, labcheck.Met
	}
	for id, st := range want {
		if got := r.Findings[id]; got.Status != st {
			t.Errorf("%s: %s (%s), want %s", id, got.Status, got.Detail, st)
		}
	}
}

// A lab file's service command manages the hosts' services through SSH:
// a worker's kube-proxy stopped, seen stopped, started, seen running.
func TestRealClusterServicesThroughTheServiceCommand(t *testing.T) {
	l := realLab(t)
	if l.Config().SSH.ServiceCommand == "" {
		t.Skip("the lab file names no service command")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	workers := lab.HostsWithRole(l, lab.RoleWorker)
	if len(workers) == 0 {
		t.Fatal("no worker")
	}
	h := workers[0]
	state := func() string {
		states, err := h.Services(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if s.Name == lab.ServiceKubeProxy {
				return s.State
			}
		}
		t.Fatalf("%s lists no %s: %+v", h.Name(), lab.ServiceKubeProxy, states)
		return ""
	}
	if s := state(); s != "running" {
		t.Fatalf("%s before: %s", lab.ServiceKubeProxy, s)
	}
	if err := h.StopService(ctx, lab.ServiceKubeProxy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.StartService(context.Background(), lab.ServiceKubeProxy) })
	if s := state(); s != "stopped" {
		t.Errorf("%s after stop: %s", lab.ServiceKubeProxy, s)
	}
	if err := h.StartService(ctx, lab.ServiceKubeProxy); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != "running" {
		t.Errorf("%s after start: %s", lab.ServiceKubeProxy, s)
	}
	if err := h.StopService(ctx, "no-such-service"); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("stopping a service the host does not run: %v, want unsupported", err)
	}
}

// What a refused watch needs, read through SSH as on a fleet, is what the
// local lab under the static one knows of itself: each API server's
// authorization configuration (from its command line) and each worker's
// agents' identities (from the kubeconfigs the lab file names).
func TestRealClusterAgentIdentitiesAndAuthorizationConfig(t *testing.T) {
	l := realLab(t)
	if underLocal == nil {
		t.Skip("the static lab file describes a cluster these tests did not bring up")
	}
	for _, h := range l.Hosts() {
		if h.HasRole(lab.RoleControlPlane) {
			got, err := l.AuthorizationConfigFile(h.Name())
			want, werr := underLocal.AuthorizationConfigFile(h.Name())
			if err != nil || werr != nil || got != want {
				t.Errorf("%s: authorization configuration %q (%v), the local lab's %q (%v)", h.Name(), got, err, want, werr)
			}
		}
		if !h.HasRole(lab.RoleWorker) {
			continue
		}
		for _, agent := range []string{lab.ServiceKubeProxy, lab.ServicePolicyAgent} {
			got, err := l.AgentIdentity(h.Name(), agent)
			want, werr := underLocal.AgentIdentity(h.Name(), agent)
			if err != nil || werr != nil || got.User != want.User || !slices.Equal(got.Groups, want.Groups) {
				t.Errorf("%s's %s: %+v (%v), the local lab's %+v (%v)", h.Name(), agent, got, err, want, werr)
			}
		}
	}
}
