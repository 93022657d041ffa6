package static

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/labtest"
)

// mountTable is the machine's mount table as the test's hosts see it: one
// file every host reads in place of /proc/self/mountinfo, as the local
// lab's hosts share one.
type mountTable struct {
	mu   sync.Mutex
	path string
}

func (m *mountTable) set(t *testing.T, mounts ...string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for i, mp := range mounts {
		fmt.Fprintf(&b, "%d 30 0:%d / %s rw,relatime shared:1 - ext4 /dev/loop%d rw\n", 40+i, 50+i, mp, i)
	}
	if err := os.WriteFile(m.path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ranMu guards the shellNodes' command logs: the static lab asks its
// workers in parallel.
var ranMu sync.Mutex

// shellNode runs a command with this machine's sh, reading the test's
// mount table; down, it cannot be reached.
type shellNode struct {
	name   string
	roles  []lab.Role
	mounts *mountTable
	down   bool
	ran    *[]string
}

func (h shellNode) Name() string            { return h.name }
func (h shellNode) Roles() []lab.Role       { return h.roles }
func (h shellNode) HasRole(r lab.Role) bool { return len(h.roles) > 0 && h.roles[0] == r }
func (h shellNode) Address() string         { return "127.0.0.1" }
func (h shellNode) Run(ctx context.Context, cmd string) (lab.Result, error) {
	if h.down {
		return lab.Result{}, fmt.Errorf("connecting to %s: %w", h.name, syscall.EHOSTUNREACH)
	}
	if h.ran != nil {
		ranMu.Lock()
		*h.ran = append(*h.ran, h.name+": "+cmd)
		ranMu.Unlock()
	}
	cmd = strings.ReplaceAll(cmd, "/proc/self/mountinfo", h.mounts.path)
	return labtest.Sh(ctx, cmd)
}
func (shellNode) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, lab.ErrUnsupported
}
func (shellNode) StopService(context.Context, string) error            { return lab.ErrUnsupported }
func (shellNode) StartService(context.Context, string) error           { return lab.ErrUnsupported }
func (shellNode) Signal(context.Context, string, syscall.Signal) error { return lab.ErrUnsupported }
func (shellNode) Services(context.Context) ([]lab.ServiceState, error) {
	return nil, lab.ErrUnsupported
}
func (shellNode) PowerOff(context.Context) error { return lab.ErrUnsupported }
func (shellNode) PowerOn(context.Context) error  { return lab.ErrUnsupported }

const (
	testNS     = "faultline-split"
	testClaim  = "data-ledger-0"
	testPV     = "pvc-0a1b"
	testHandle = "vol-0a1b"
	testDriver = "csi.example.com"
)

// storageFixture is a static lab with storage over three workers whose
// kubelet roots are directories of the test, and a fake API whose reader
// pods run on worker2: creating one mounts its volume under worker2's
// root and holds the file the test put there.
type storageFixture struct {
	t       *testing.T
	lab     *Lab
	kube    *fake.Clientset
	mounts  *mountTable
	roots   map[string]string
	content []byte // the volume's ledger.log; nil: no such file
	creates int
	ran     []string
}

func newStorageFixture(t *testing.T, annotated bool) *storageFixture {
	dir := t.TempDir()
	f := &storageFixture{t: t, mounts: &mountTable{path: filepath.Join(dir, "mountinfo")}, roots: map[string]string{}}
	f.mounts.set(t)
	cfg := &lab.Config{Name: "fleet", Kind: Kind, Lab: true, Storage: &lab.StorageSettings{
		SharedClass: "shared", History: lab.HistoryStore{Endpoints: []string{"http://127.0.0.1:1"}}, ReaderImage: lab.DefaultReaderImage,
	}}
	for _, n := range []string{"worker1", "worker2", "worker3"} {
		f.roots[n] = filepath.Join(dir, n, "kubelet")
		cfg.Hosts = append(cfg.Hosts, lab.HostConfig{Name: n, Roles: []lab.Role{lab.RoleWorker}, KubeletRootDir: f.roots[n]})
	}
	cfg.Hosts = append(cfg.Hosts, lab.HostConfig{Name: "cp1", Roles: []lab.Role{lab.RoleControlPlane}})
	f.lab = New(cfg, Options{})
	for _, hc := range cfg.Hosts {
		f.lab.testHosts = append(f.lab.testHosts, shellNode{name: hc.Name, roles: hc.Roles, mounts: f.mounts, ran: &f.ran})
	}

	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: testClaim, Namespace: testNS, UID: "claim-uid"}}
	if annotated {
		pvc.Annotations = map[string]string{lab.QuiescedClaimAnnotation: "2026-12-06T09:00:00Z"}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: testPV},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: testHandle}},
			ClaimRef:               &corev1.ObjectReference{Namespace: testNS, Name: testClaim, UID: "claim-uid"},
		},
	}
	f.kube = fake.NewClientset(pvc, pv)
	f.kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		f.creates++
		p.UID = types.UID(fmt.Sprintf("reader-uid-%d", f.creates))
		p.Spec.NodeName = "worker2"
		p.Status.Phase = corev1.PodRunning
		mount := filepath.Join(f.roots["worker2"], "pods", string(p.UID), "volumes", "kubernetes.io~csi", testPV, "mount")
		if err := os.MkdirAll(mount, 0o755); err != nil {
			t.Fatal(err)
		}
		if f.content != nil {
			if err := os.WriteFile(filepath.Join(mount, "ledger.log"), f.content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f.mounts.set(t, mount)
		return false, nil, nil
	})
	f.kube.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		f.mounts.set(t)
		return false, nil, nil
	})
	f.lab.kubeOnce.Do(func() { f.lab.kube = f.kube })
	return f
}

func (f *storageFixture) read() (lab.VolumeFile, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return f.lab.ReadVolumeFile(ctx, testHandle, "ledger.log")
}

func (f *storageFixture) readerPods() int {
	pods, err := f.kube.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return len(pods.Items)
}

// A quiesced claim nothing mounts is read through a reader pod: the file
// as the volume holds it, nothing mounted when the read began, and the
// pod gone after. A second read gives the same file without a new pod.
func TestReadVolumeFileThroughAReaderPod(t *testing.T) {
	f := newStorageFixture(t, true)
	f.content = []byte("1 a\n2 b\n\x00binary\xff")
	got, err := f.read()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(got.Data) != string(f.content) || len(got.MountedOn) != 0 || !strings.Contains(got.Path, "worker2") {
		t.Errorf("read %+v, want the file's %q as read on worker2, nothing mounted", got, f.content)
	}
	if f.creates != 1 || f.readerPods() != 0 {
		t.Errorf("%d reader pods created, %d left; want one, deleted", f.creates, f.readerPods())
	}
	again, err := f.read()
	if err != nil || string(again.Data) != string(f.content) || f.creates != 1 {
		t.Errorf("second read: %+v %v after %d pods; want the kept file without a new pod", again, err, f.creates)
	}
	p := *readerPod(testNS, testClaim, lab.DefaultReaderImage, []string{"worker1"})
	if v := p.Spec.Volumes[0].PersistentVolumeClaim; v == nil || !v.ReadOnly || !p.Spec.Containers[0].VolumeMounts[0].ReadOnly {
		t.Errorf("the reader pod does not mount its claim read-only: %+v", p.Spec)
	}
}

// A file the volume does not hold is a definite answer, not a failed read.
func TestReadVolumeFileOfAVolumeWithoutTheFile(t *testing.T) {
	f := newStorageFixture(t, true)
	_, err := f.read()
	if !errors.Is(err, lab.ErrNoSuchFile) {
		t.Fatalf("read: %v, want lab.ErrNoSuchFile", err)
	}
	if f.readerPods() != 0 {
		t.Errorf("reader pod left")
	}
}

// A volume some worker mounts (a pod's mount, or the staging mount under
// its kubelet root) is not read: the hosts are named, and no reader pod
// is started. A mount of another volume, or under another root, is not
// the volume's.
func TestReadVolumeFileRefusesAMountedVolume(t *testing.T) {
	f := newStorageFixture(t, true)
	for _, tc := range []struct {
		name   string
		mounts []string
		want   []string
	}{
		{"a pod's mount", []string{filepath.Join(f.roots["worker1"], "pods", "p1", "volumes", "kubernetes.io~csi", testPV, "mount")}, []string{"worker1"}},
		{"the staging mount", []string{filepath.Join(f.roots["worker3"], "plugins", "kubernetes.io", "csi", testDriver, sha256Hex(testHandle), "globalmount")}, []string{"worker3"}},
		{"the staging mount before v1.2x", []string{filepath.Join(f.roots["worker1"], "plugins", "kubernetes.io", "csi", "pv", testPV, "globalmount")}, []string{"worker1"}},
		{"both", []string{
			filepath.Join(f.roots["worker1"], "pods", "p1", "volumes", "kubernetes.io~csi", testPV, "mount"),
			filepath.Join(f.roots["worker3"], "pods", "p2", "volumes", "kubernetes.io~csi", testPV, "mount"),
		}, []string{"worker1", "worker3"}},
		{"another volume", []string{filepath.Join(f.roots["worker1"], "pods", "p1", "volumes", "kubernetes.io~csi", "pvc-other", "mount")}, nil},
		{"under no kubelet root of the lab", []string{filepath.Join("/elsewhere", "pods", "p1", "volumes", "kubernetes.io~csi", testPV, "mount")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.mounts.set(t, tc.mounts...)
			f.creates = 0
			f.content = []byte("x")
			got, err := f.read()
			if tc.want == nil {
				if err != nil || f.creates != 1 {
					t.Errorf("read %v with %d reader pods, want it read", err, f.creates)
				}
				f.lab.volumes.forget()
				return
			}
			if err == nil || !strings.Contains(err.Error(), "is mounted on "+strings.Join(tc.want, ", ")) {
				t.Errorf("read %v, want a refusal naming %v", err, tc.want)
			}
			if strings.Join(got.MountedOn, ",") != strings.Join(tc.want, ",") || f.creates != 0 {
				t.Errorf("MountedOn %v with %d reader pods, want %v and none", got.MountedOn, f.creates, tc.want)
			}
		})
	}
}

// A worker that cannot be asked leaves the mounts unknown: the read
// fails naming it, and nothing is started.
func TestReadVolumeFileFailsWhenAWorkerDoesNotAnswer(t *testing.T) {
	f := newStorageFixture(t, true)
	for i, h := range f.lab.testHosts {
		if h.Name() == "worker3" {
			n := h.(shellNode)
			n.down = true
			f.lab.testHosts[i] = n
		}
	}
	_, err := f.read()
	if err == nil || !strings.Contains(err.Error(), "cannot tell whether worker3 mounts it") || f.creates != 0 {
		t.Errorf("read %v with %d reader pods; want the unknown mount named and no pod", err, f.creates)
	}
}

// A claim not marked quiesced, or one a pod still uses, is not read: the
// reader pod would compete with the workload for the volume.
func TestReadVolumeFileWaitsForTheQuiescedMark(t *testing.T) {
	f := newStorageFixture(t, false)
	_, err := f.read()
	if err == nil || !strings.Contains(err.Error(), lab.QuiescedClaimAnnotation) || f.creates != 0 {
		t.Errorf("unmarked claim: %v with %d reader pods; want a refusal naming the mark", err, f.creates)
	}
	f = newStorageFixture(t, true)
	user := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ledger-0", Namespace: testNS}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{
		Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: testClaim}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if err := f.kube.Tracker().Add(user); err != nil {
		t.Fatal(err)
	}
	_, err = f.read()
	if err == nil || !strings.Contains(err.Error(), "pod faultline-split/ledger-0 still uses claim") || f.creates != 0 {
		t.Errorf("claim in use: %v with %d reader pods; want a refusal naming the pod", err, f.creates)
	}
}

// A lab file without storage has none to offer.
func TestNoStorageSectionIsUnsupported(t *testing.T) {
	l := New(&lab.Config{Name: "fleet", Kind: Kind}, Options{})
	if _, err := l.StorageInfo(); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("StorageInfo: %v, want unsupported", err)
	}
	if _, err := l.ReadVolumeFile(context.Background(), "h", "f"); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("ReadVolumeFile: %v, want unsupported", err)
	}
}

func TestSizedOutputChecksTheSize(t *testing.T) {
	if d, err := sizedOutput("3\nab\n"); err != nil || string(d) != "ab\n" {
		t.Errorf("%q %v", d, err)
	}
	for _, bad := range []string{"", "3", "x\nabc", "4\nabc", "2\nabc"} {
		if _, err := sizedOutput(bad); err == nil {
			t.Errorf("sizedOutput(%q) accepted", bad)
		}
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// A read whose deadline leaves no time for a reader pod (a sampler's
// round) starts none: it fails at once, and a file read earlier with time
// to spare (quiesce's) is given from what was kept.
func TestReadVolumeFileStartsNoReaderPodWithoutTimeForIt(t *testing.T) {
	f := newStorageFixture(t, true)
	f.content = []byte("kept\n")
	short, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := f.lab.ReadVolumeFile(short, testHandle, "ledger.log"); err == nil || f.creates != 0 {
		t.Fatalf("read with 5s left: %v with %d reader pods, want a refusal and none", err, f.creates)
	}
	if got, err := f.read(); err != nil || string(got.Data) != "kept\n" {
		t.Fatalf("read with time: %+v %v", got, err)
	}
	short, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := f.lab.ReadVolumeFile(short, testHandle, "ledger.log"); err != nil || string(got.Data) != "kept\n" || f.creates != 1 {
		t.Errorf("read with 5s left after a kept read: %+v %v (%d pods)", got, err, f.creates)
	}
}
