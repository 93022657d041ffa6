//go:build root

package csidriver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/faultline/faultline/lab/local/csidriver/internal/roottest"
	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
)

// lab is an export path and two nodes reaching it, as the storage host
// and two workers of the local lab are.
type lab struct {
	dir    string
	store  Store
	ctrl   *Controller
	w1, w2 *Node
}

func newLab(t *testing.T, k Kind) *lab {
	t.Helper()
	dir := roottest.Dir(t)
	st := Store{Root: filepath.Join(dir, "export")}
	if err := os.Mkdir(st.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if k == KindBlock {
		if _, err := exec.LookPath("mkfs.ext4"); err != nil {
			t.Skip("mkfs.ext4 (e2fsprogs) is not installed")
		}
	}
	c, err := NewController(k, st, ControllerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Each node's mounts lie under its own directory, as each worker's
	// lie under its kubelet root.
	for _, w := range []string{"w1", "w2"} {
		if err := os.Mkdir(filepath.Join(dir, w), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w1, err := NewNode(k, st, "worker1", NodeOptions{MountRoot: filepath.Join(dir, "w1")})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := NewNode(k, st, "worker2", NodeOptions{MountRoot: filepath.Join(dir, "w2")})
	if err != nil {
		t.Fatal(err)
	}
	return &lab{dir: dir, store: st, ctrl: c, w1: w1, w2: w2}
}

func (l *lab) path(p ...string) string { return filepath.Join(append([]string{l.dir}, p...)...) }

func (l *lab) create(t *testing.T, name string, params map[string]string) *csi.Volume {
	t.Helper()
	k := l.ctrl.kind
	resp, err := l.ctrl.CreateVolume(context.Background(), createReq(name, k, 0, params))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Volume
}

func rwo() *csi.VolumeCapability {
	return mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER)
}

func stage(n *Node, v *csi.Volume, staging string, c *csi.VolumeCapability) error {
	_, err := n.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: v.VolumeId, StagingTargetPath: staging, VolumeCapability: c, VolumeContext: v.VolumeContext})
	return err
}

func unstage(n *Node, v *csi.Volume, staging string) error {
	_, err := n.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: v.VolumeId, StagingTargetPath: staging})
	return err
}

func publish(n *Node, v *csi.Volume, staging, target string, c *csi.VolumeCapability, ro bool) error {
	_, err := n.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.VolumeId, StagingTargetPath: staging, TargetPath: target, VolumeCapability: c, Readonly: ro, VolumeContext: v.VolumeContext})
	return err
}

func unpublish(n *Node, v *csi.Volume, target string) error {
	_, err := n.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.VolumeId, TargetPath: target})
	return err
}

// loopsOver are the loop devices over a volume's image.
func loopsOver(t *testing.T, l *lab, v *csi.Volume) []string {
	t.Helper()
	devs, err := loopdev.List(l.store.ImagePath(v.VolumeId))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range devs {
		out = append(out, d.Path)
	}
	return out
}

func TestBlockVolumeStagesPublishesAndGoes(t *testing.T) {
	l := newLab(t, KindBlock)
	ctx := context.Background()
	v := l.create(t, "pvc-life", nil)
	staging, target, roTarget := l.path("w1", "globalmount"), l.path("w1", "pods", "a", "mount"), l.path("w1", "pods", "b", "mount")
	must(t, os.MkdirAll(staging, 0o750))

	must(t, stage(l.w1, v, staging, rwo()))
	mt, err := mountAt(staging)
	if err != nil || mt == nil || mt.FSType != "ext4" || !strings.HasPrefix(mt.Source, "/dev/loop") {
		t.Fatalf("staged mount %+v %v", mt, err)
	}
	devs := loopsOver(t, l, v)
	if len(devs) != 1 || devs[0] != mt.Source {
		t.Fatalf("loop devices over the image %v, mounted from %s", devs, mt.Source)
	}
	must(t, stage(l.w1, v, staging, rwo()))
	if d := loopsOver(t, l, v); len(d) != 1 {
		t.Fatalf("staging again made another loop device: %v", d)
	}
	ro := mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY)
	wantCode(t, stage(l.w1, v, staging, ro), codes.AlreadyExists, "read-only=false")

	must(t, publish(l.w1, v, staging, target, rwo(), false))
	must(t, publish(l.w1, v, staging, target, rwo(), false))
	wantCode(t, publish(l.w1, v, staging, target, rwo(), true), codes.AlreadyExists, "read-only=false")
	must(t, os.WriteFile(filepath.Join(target, "f"), []byte("ledger"), 0o644))
	if b, err := os.ReadFile(filepath.Join(staging, "f")); err != nil || string(b) != "ledger" {
		t.Fatalf("the staged mount does not show what the pod wrote: %q %v", b, err)
	}
	must(t, publish(l.w1, v, staging, roTarget, rwo(), true))
	if err := os.WriteFile(filepath.Join(roTarget, "g"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("writing to a read-only publish: %v", err)
	}

	wantCode(t, unstage(l.w1, v, staging), codes.FailedPrecondition, "unpublish first")
	// No attachment is recorded, but the kernel shows the image in use.
	_, err = l.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.VolumeId})
	wantCode(t, err, codes.FailedPrecondition, "still in use by "+devs[0])

	for _, tp := range []string{target, roTarget} {
		must(t, unpublish(l.w1, v, tp))
		must(t, unpublish(l.w1, v, tp))
		if _, err := os.Stat(tp); !os.IsNotExist(err) {
			t.Fatalf("the target %s is still there: %v", tp, err)
		}
	}
	must(t, unstage(l.w1, v, staging))
	if d := loopsOver(t, l, v); len(d) != 0 {
		t.Fatalf("unstaged, but loop devices remain over the image: %v", d)
	}
	if mt, _ := mountAt(staging); mt != nil {
		t.Fatalf("still mounted at %s: %+v", staging, mt)
	}
	must(t, unstage(l.w1, v, staging))

	// What was written survived the unmount, and the file system is clean.
	if out, err := exec.Command("e2fsck", "-fn", l.store.ImagePath(v.VolumeId)).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
	must(t, stage(l.w1, v, staging, rwo()))
	if b, err := os.ReadFile(filepath.Join(staging, "f")); err != nil || string(b) != "ledger" {
		t.Fatalf("after staging again: %q %v", b, err)
	}
	must(t, unstage(l.w1, v, staging))
	_, err = l.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.VolumeId})
	must(t, err)
	if left, err := FindLeftovers(l.store); err != nil || !left.Empty() {
		t.Fatalf("leftovers: %v %v", left, err)
	}
}

func TestUnstageLeavesOtherMountsAlone(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-other", nil)
	staging := l.path("w1", "globalmount")
	must(t, os.MkdirAll(staging, 0o750))
	// Something else mounted at the staging path: a tmpfs.
	must(t, syscall.Mount("tmpfs", staging, "tmpfs", 0, "size=1m"))
	wantCode(t, unstage(l.w1, v, staging), codes.FailedPrecondition, "not this volume: left alone")
	wantCode(t, stage(l.w1, v, staging, rwo()), codes.AlreadyExists, "tmpfs")
	if mt, _ := mountAt(staging); mt == nil || mt.FSType != "tmpfs" {
		t.Fatalf("the tmpfs is gone: %+v", mt)
	}
	must(t, syscall.Unmount(staging, 0))

	// A loop device over another image, mounted at the staging path.
	other := l.create(t, "pvc-other-2", nil)
	must(t, stage(l.w1, other, staging, rwo()))
	wantCode(t, unstage(l.w1, v, staging), codes.FailedPrecondition, "not over this volume's image")
	if d := loopsOver(t, l, other); len(d) != 1 {
		t.Fatalf("the other volume's loop device: %v", d)
	}
	must(t, unstage(l.w1, other, staging))
}

// Two nodes staging one block volume get a loop device each and an ext4
// mount each, so what one node writes the other does not see: each keeps
// its own cache of the disk, as two hosts over one shared disk would.
func TestTwoNodesHaveTheirOwnCaches(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-two", nil)
	s1, s2 := l.path("w1", "globalmount"), l.path("w2", "globalmount")
	must(t, stage(l.w1, v, s1, rwo()))
	must(t, stage(l.w2, v, s2, rwo()))
	devs := loopsOver(t, l, v)
	m1, _ := mountAt(s1)
	m2, _ := mountAt(s2)
	if len(devs) != 2 || m1 == nil || m2 == nil || m1.Source == m2.Source || !slices.Contains(devs, m1.Source) || !slices.Contains(devs, m2.Source) {
		t.Fatalf("loop devices %v, mounts %+v and %+v", devs, m1, m2)
	}
	names := func(dir string) []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	before := names(s2) // worker2 reads the directory (and caches it)
	f, err := os.Create(filepath.Join(s1, "from-worker1"))
	must(t, err)
	must(t, f.Sync())
	f.Close()
	fd, err := syscall.Open(s1, syscall.O_RDONLY, 0)
	must(t, err)
	must(t, unix.Syncfs(fd))
	syscall.Close(fd)
	if got := names(s2); slices.Contains(got, "from-worker1") {
		t.Fatalf("worker2 sees worker1's file at once (%v, before %v): the caches are shared", got, before)
	}
	must(t, unstage(l.w2, v, s2))
	must(t, unstage(l.w1, v, s1))
	if d := loopsOver(t, l, v); len(d) != 0 {
		t.Fatalf("loop devices remain: %v", d)
	}
}

// With multi-mount protection the second node's mount fails while the
// first holds the file system, and succeeds once it let go.
func TestMultiMountProtectionRefusesASecondNode(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-mmp", map[string]string{ParamMMP: "true", ParamMMPUpdateInterval: "1"})
	s1, s2 := l.path("w1", "globalmount"), l.path("w2", "globalmount")
	start := time.Now()
	must(t, stage(l.w1, v, s1, rwo()))
	t.Logf("an MMP mount took %s", time.Since(start).Round(time.Second))
	start = time.Now()
	wantCode(t, stage(l.w2, v, s2, rwo()), codes.FailedPrecondition, "multi-mount protection")
	t.Logf("the refused mount took %s", time.Since(start).Round(time.Second))
	if d := loopsOver(t, l, v); len(d) != 1 {
		t.Fatalf("the refused stage left its loop device: %v", d)
	}
	must(t, unstage(l.w1, v, s1))
	must(t, stage(l.w2, v, s2, rwo()))
	must(t, unstage(l.w2, v, s2))
}

func TestDirectoryVolumeIsOneDirectoryForEveryNode(t *testing.T) {
	l := newLab(t, KindDirectory)
	v := l.create(t, "pvc-shared", nil)
	rwx := mountCap("", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	t1, t2, t3 := l.path("w1", "pods", "a", "mount"), l.path("w2", "pods", "b", "mount"), l.path("w2", "pods", "c", "mount")
	must(t, publish(l.w1, v, "", t1, rwx, false))
	must(t, publish(l.w1, v, "", t1, rwx, false))
	must(t, publish(l.w2, v, "", t2, rwx, false))
	must(t, publish(l.w2, v, "", t3, mountCap("", csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY), false))
	wantCode(t, publish(l.w2, v, "", t3, rwx, false), codes.AlreadyExists, "read-only=true")

	must(t, os.WriteFile(filepath.Join(t1, "record"), []byte("1"), 0o644))
	if b, err := os.ReadFile(filepath.Join(t2, "record")); err != nil || string(b) != "1" {
		t.Fatalf("worker2 does not see worker1's write: %q %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(t3, "x"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("a read-only publish took a write: %v", err)
	}
	// File locks are the kernel's: a lock taken through one node's mount
	// holds against the other's, as NFS with a working lock manager.
	f1, err := os.OpenFile(filepath.Join(t1, "record"), os.O_RDWR, 0)
	must(t, err)
	defer f1.Close()
	f2, err := os.OpenFile(filepath.Join(t2, "record"), os.O_RDWR, 0)
	must(t, err)
	defer f2.Close()
	must(t, syscall.Flock(int(f1.Fd()), syscall.LOCK_EX))
	if err := syscall.Flock(int(f2.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("worker2 took a lock worker1 holds: %v", err)
	}
	f1.Close()
	f2.Close()

	left, err := FindLeftovers(l.store)
	if err != nil || len(left.Mounts) != 3 {
		t.Fatalf("leftovers with three publishes: %v %v", left, err)
	}
	for _, tp := range []string{t1, t2, t3} {
		n := l.w1
		if tp != t1 {
			n = l.w2
		}
		must(t, unpublish(n, v, tp))
		if _, err := os.Stat(tp); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", tp, err)
		}
	}
	if left, err := FindLeftovers(l.store); err != nil || !left.Empty() {
		t.Fatalf("leftovers: %v %v", left, err)
	}
	_, err = l.ctrl.DeleteVolume(context.Background(), &csi.DeleteVolumeRequest{VolumeId: v.VolumeId})
	must(t, err)
}

func TestFindLeftoversSeesEveryNode(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-left", nil)
	s1, t1 := l.path("w1", "globalmount"), l.path("w1", "pods", "a", "mount")
	must(t, stage(l.w1, v, s1, rwo()))
	must(t, publish(l.w1, v, s1, t1, rwo(), false))
	left, err := FindLeftovers(l.store)
	if err != nil || len(left.LoopDevices) != 1 || !slices.Equal(left.Mounts, []string{t1, s1}) {
		t.Fatalf("leftovers %v %v", left, err)
	}
	if !strings.Contains(left.String(), left.LoopDevices[0].Path) {
		t.Errorf("%s", left)
	}
	must(t, unpublish(l.w1, v, t1))
	must(t, unstage(l.w1, v, s1))
	if left, err := FindLeftovers(l.store); err != nil || !left.Empty() {
		t.Fatalf("leftovers: %v %v", left, err)
	}
}
