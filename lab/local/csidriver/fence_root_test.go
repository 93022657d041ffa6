//go:build root

package csidriver

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func controllerPublish(t *testing.T, l *lab, v *csi.Volume, node string) {
	t.Helper()
	_, err := l.ctrl.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
		VolumeId: v.VolumeId, NodeId: node, VolumeCapability: rwo()})
	must(t, err)
}

func controllerUnpublish(l *lab, v *csi.Volume, node string) error {
	_, err := l.ctrl.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: v.VolumeId, NodeId: node})
	return err
}

// writeFileSynced writes a file and fsyncs it (and its directory).
func writeFileSynced(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.Create(path)
	must(t, err)
	_, err = f.WriteString(data)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	d, err := os.Open(filepath.Dir(path))
	must(t, err)
	must(t, d.Sync())
	must(t, d.Close())
}

// imageSum is the SHA-256 of a volume's image as the storage holds it.
func imageSum(t *testing.T, l *lab, v *csi.Volume) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(l.store.ImagePath(v.VolumeId))
	must(t, err)
	return sha256.Sum256(b)
}

// Unpublishing a fenced volume from a node shuts its ext4 down: every
// read and write of the node's fails with EIO, what it had not fsynced
// never reaches the image, what it had is there for the next node, and
// the node can still unstage. Another volume's mount on the same node
// is left alone.
func TestFencedUnpublishShutsTheOldNodeOut(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-fenced", map[string]string{ParamFence: "true"})
	other := l.create(t, "pvc-other", nil)
	s1, target := l.path("w1", "globalmount"), l.path("w1", "pods", "a", "mount")
	so := l.path("w1", "other")

	controllerPublish(t, l, v, "worker1")
	must(t, stage(l.w1, v, s1, rwo()))
	must(t, publish(l.w1, v, s1, target, rwo(), false))
	must(t, stage(l.w1, other, so, rwo()))
	writeFileSynced(t, filepath.Join(target, "durable"), "fsynced")
	must(t, os.WriteFile(filepath.Join(target, "cached"), []byte("never fsynced"), 0o644))
	// A writer that keeps its file open across the fence.
	held, err := os.OpenFile(filepath.Join(target, "durable"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer held.Close()
	reader, err := os.Open(filepath.Join(target, "durable"))
	must(t, err)
	defer reader.Close()

	must(t, controllerUnpublish(l, v, "worker1"))
	if atts, _ := l.store.Attachments(v.VolumeId); len(atts) != 0 {
		t.Fatalf("still attached: %+v", atts)
	}
	fenced := imageSum(t, l, v)
	for _, dir := range []string{target, s1} {
		err := os.WriteFile(filepath.Join(dir, "after"), []byte("x"), 0o644)
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("writing a new file at %s after the fence: %v, want EIO", dir, err)
		}
		t.Logf("a new write at %s: %v", dir, err)
		_, err = os.ReadFile(filepath.Join(dir, "durable"))
		if !errors.Is(err, syscall.EIO) {
			t.Fatalf("reading at %s after the fence: %v, want EIO", dir, err)
		}
		t.Logf("a read at %s: %v", dir, err)
	}
	if _, err := held.WriteString("more"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("writing to a file held open across the fence: %v, want EIO", err)
	}
	if err := held.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync of a file held open across the fence: %v, want EIO", err)
	}
	must(t, held.Close())
	if _, err := reader.Read(make([]byte, 16)); !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading a file held open across the fence: %v, want EIO", err)
	}
	must(t, reader.Close())
	// The other volume's mount on the same node still works.
	writeFileSynced(t, filepath.Join(so, "f"), "alive")
	for _, p := range []string{s1, target, so} {
		mt, err := mountAt(p)
		must(t, err)
		if shutDown(mt) != (p != so) {
			t.Fatalf("%s: super options %q", p, mt.VFSOptions)
		}
	}
	// The node's driver will not serve the shut-down mount again.
	wantCode(t, stage(l.w1, v, s1, rwo()), codes.FailedPrecondition, "was shut down")
	wantCode(t, publish(l.w1, v, s1, l.path("w1", "pods", "b", "mount"), rwo(), false), codes.FailedPrecondition, "was shut down")

	// Again (csi-attacher retries): the mounts, already shut down, are
	// found again and the ioctl succeeds on them.
	must(t, controllerUnpublish(l, v, "worker1"))
	must(t, controllerUnpublish(l, v, ""))
	done, err := fenceNode(l.store, v.VolumeId, "worker1")
	must(t, err)
	slices.Sort(done)
	if want := []string{s1, target}; !slices.Equal(done, want) {
		t.Fatalf("fenced %v, want %v", done, want)
	}
	if done, err := fenceNode(l.store, v.VolumeId, "worker2"); err != nil || len(done) != 0 {
		t.Fatalf("fencing worker2, which has no mount of it: %v %v", done, err)
	}

	// The node cleans up as the kubelet would.
	must(t, unpublish(l.w1, v, target))
	must(t, unstage(l.w1, v, s1))
	if d := loopsOver(t, l, v); len(d) != 0 {
		t.Fatalf("unstaged, but loop devices remain over the image: %v", d)
	}
	if mt, _ := mountAt(s1); mt != nil {
		t.Fatalf("still mounted at %s: %+v", s1, mt)
	}
	must(t, unstage(l.w1, other, so))
	// Nothing of worker1's reached the image after the fence: not the
	// writes that failed, not its unmount (whose journal checkpoint
	// would write the committed metadata the fence already wrote).
	if imageSum(t, l, v) != fenced {
		t.Fatal("the image changed after the fence, before another node staged it")
	}

	// The next node finds what was fsynced and nothing the fenced node
	// held back.
	s2 := l.path("w2", "globalmount")
	controllerPublish(t, l, v, "worker2")
	must(t, stage(l.w2, v, s2, rwo()))
	if b, err := os.ReadFile(filepath.Join(s2, "durable")); err != nil || string(b) != "fsynced" {
		t.Fatalf("worker2 reads %q %v, want what worker1 fsynced", b, err)
	}
	b, err := os.ReadFile(filepath.Join(s2, "cached"))
	if err == nil && strings.Contains(string(b), "never fsynced") {
		t.Fatalf("worker1's unsynced write reached the image: %q", b)
	}
	t.Logf("worker1's unsynced file, as worker2 finds it: %q %v", b, err)
	writeFileSynced(t, filepath.Join(s2, "durable"), "worker2")
	must(t, unstage(l.w2, v, s2))
	must(t, controllerUnpublish(l, v, "worker2"))
	if out, err := exec.Command("e2fsck", "-fn", l.store.ImagePath(v.VolumeId)).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
	if left, err := FindLeftovers(l.store); err != nil || !left.Empty() {
		t.Fatalf("leftovers: %v %v", left, err)
	}
}

// Without fence, unpublishing leaves the old node's mount writing to the
// image, as before.
func TestUnfencedUnpublishLeavesTheNodeWriting(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-unfenced", nil)
	s1 := l.path("w1", "globalmount")
	controllerPublish(t, l, v, "worker1")
	must(t, stage(l.w1, v, s1, rwo()))
	must(t, controllerUnpublish(l, v, "worker1"))
	writeFileSynced(t, filepath.Join(s1, "after"), "still writing")
	if b, err := os.ReadFile(filepath.Join(s1, "after")); err != nil || string(b) != "still writing" {
		t.Fatalf("reading after an unfenced unpublish: %q %v", b, err)
	}
	must(t, unstage(l.w1, v, s1))
	if d := loopsOver(t, l, v); len(d) != 0 {
		t.Fatalf("loop devices remain: %v", d)
	}
}

// A fence that cannot reach a mount of the node's (here something else
// is mounted over it) fails naming the mount and keeps the volume
// published to the node, so that csi-attacher retries; the retry, once
// the mount is reachable, fences it.
func TestFenceThatCannotReachAMountKeepsTheRecord(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-hidden", map[string]string{ParamFence: "true"})
	s1 := l.path("w1", "globalmount")
	controllerPublish(t, l, v, "worker1")
	must(t, stage(l.w1, v, s1, rwo()))
	must(t, syscall.Mount("tmpfs", s1, "tmpfs", 0, "size=1m"))
	err := controllerUnpublish(l, v, "worker1")
	wantCode(t, err, codes.Internal, "shutting down the ext4 mount at "+s1+": the path reaches file system")
	t.Logf("unpublish with the mount covered: %v", err)
	if atts, _ := l.store.Attachments(v.VolumeId); len(atts) != 1 || atts[0].Node != "worker1" {
		t.Fatalf("a failed fence dropped the attachment: %+v", atts)
	}
	must(t, syscall.Unmount(s1, 0))
	if mt, _ := mountAt(s1); mt == nil || shutDown(mt) {
		t.Fatalf("the staged mount after the failed fence: %+v", mt)
	}
	must(t, controllerUnpublish(l, v, "worker1"))
	if mt, _ := mountAt(s1); mt == nil || !shutDown(mt) {
		t.Fatalf("the retry did not shut the mount down: %+v", mt)
	}
	if atts, _ := l.store.Attachments(v.VolumeId); len(atts) != 0 {
		t.Fatalf("still attached: %+v", atts)
	}
	must(t, unstage(l.w1, v, s1))
	if d := loopsOver(t, l, v); len(d) != 0 {
		t.Fatalf("loop devices remain: %v", d)
	}
}

// A read-only stage is fenced too: its reads fail.
func TestFencedUnpublishShutsAReadOnlyMount(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-fenced-ro", map[string]string{ParamFence: "true"})
	s1 := l.path("w1", "globalmount")
	controllerPublish(t, l, v, "worker1")
	must(t, stage(l.w1, v, s1, rwo()))
	writeFileSynced(t, filepath.Join(s1, "f"), "data")
	must(t, unstage(l.w1, v, s1))
	ro := mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY)
	must(t, stage(l.w1, v, s1, ro))
	if b, err := os.ReadFile(filepath.Join(s1, "f")); err != nil || string(b) != "data" {
		t.Fatalf("reading the read-only stage: %q %v", b, err)
	}
	must(t, controllerUnpublish(l, v, "worker1"))
	mt, err := mountAt(s1)
	must(t, err)
	if mt == nil || !mountReadOnly(mt) || !shutDown(mt) {
		t.Fatalf("the read-only mount after the fence: %+v", mt)
	}
	if _, err := os.ReadFile(filepath.Join(s1, "f")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading the read-only stage after the fence: %v, want EIO", err)
	}
	must(t, unstage(l.w1, v, s1))
	if d := loopsOver(t, l, v); len(d) != 0 {
		t.Fatalf("loop devices remain: %v", d)
	}
}
