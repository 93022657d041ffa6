package csidriver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func wantCode(t *testing.T, err error, code codes.Code, says string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want code %s", err, code)
	}
	if says != "" && !strings.Contains(status.Convert(err).Message(), says) {
		t.Fatalf("got %q, want it to say %q", status.Convert(err).Message(), says)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newController(t *testing.T, k Kind) (*Controller, Store) {
	t.Helper()
	st := Store{Root: t.TempDir()}
	if k == KindBlock {
		if _, err := exec.LookPath("mkfs.ext4"); err != nil {
			t.Skip("mkfs.ext4 (e2fsprogs) is not installed")
		}
	}
	c, err := NewController(k, st, ControllerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

func createReq(name string, k Kind, req int64, params map[string]string) *csi.CreateVolumeRequest {
	mode := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	if k == KindBlock {
		mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	return &csi.CreateVolumeRequest{
		Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: req},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("", mode)}, Parameters: params,
	}
}

func TestControllerRefusesBadInput(t *testing.T) {
	c, _ := newController(t, KindDirectory)
	ctx := context.Background()
	_, err := c.CreateVolume(ctx, &csi.CreateVolumeRequest{VolumeCapabilities: []*csi.VolumeCapability{mountCap("", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}})
	wantCode(t, err, codes.InvalidArgument, "name is empty")
	_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v"})
	wantCode(t, err, codes.InvalidArgument, "no volume capabilities")
	_, err = c.CreateVolume(ctx, createReq("v", KindDirectory, 0, map[string]string{"speed": "fast"}))
	wantCode(t, err, codes.InvalidArgument, "unknown parameter(s) speed")
	r := createReq("v", KindDirectory, 0, nil)
	r.VolumeContentSource = &csi.VolumeContentSource{}
	_, err = c.CreateVolume(ctx, r)
	wantCode(t, err, codes.InvalidArgument, "content source")
	_, err = c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{})
	wantCode(t, err, codes.InvalidArgument, "volume ID is empty")
	_, err = c.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: VolumeID(KindDirectory, "nope"),
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)}})
	wantCode(t, err, codes.NotFound, "no such volume")
	_, err = c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: VolumeID(KindDirectory, "v"), NodeId: "n"})
	wantCode(t, err, codes.Unimplemented, "attachRequired: false")
}

func TestDirectoryVolumesAreIdempotent(t *testing.T) {
	c, st := newController(t, KindDirectory)
	ctx := context.Background()
	a, err := c.CreateVolume(ctx, createReq("pvc-a", KindDirectory, 1000, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreateVolume(ctx, createReq("pvc-a", KindDirectory, 1000, nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.Volume.VolumeId != b.Volume.VolumeId || a.Volume.CapacityBytes != 1000 || b.Volume.CapacityBytes != 1000 {
		t.Fatalf("two creates of one name: %v and %v", a.Volume, b.Volume)
	}
	fi, err := os.Stat(st.DataDir(a.Volume.VolumeId))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o777 {
		t.Fatalf("data directory: %v %v", fi, err)
	}
	_, err = c.CreateVolume(ctx, createReq("pvc-a", KindDirectory, 2000, nil))
	wantCode(t, err, codes.AlreadyExists, "holds 1000 bytes")
	_, err = c.CreateVolume(ctx, createReq("pvc-a", KindDirectory, 1000, map[string]string{ParamPVCName: "other"}))
	wantCode(t, err, codes.AlreadyExists, "other parameters")

	// A file a pod wrote goes with the volume.
	if err := os.WriteFile(filepath.Join(st.DataDir(a.Volume.VolumeId), "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: a.Volume.VolumeId}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(st.VolumeDir(a.Volume.VolumeId)); !os.IsNotExist(err) {
		t.Fatalf("the volume is still there: %v", err)
	}
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "not-ours"}); err != nil {
		t.Errorf("deleting an ID of another form: %v", err)
	}
	entries, _ := os.ReadDir(st.VolumesRoot())
	if len(entries) != 0 {
		t.Errorf("left in the volumes directory: %v", entries)
	}
}

func TestUnfinishedVolumesAreSweptAtStart(t *testing.T) {
	st := Store{Root: t.TempDir()}
	left := filepath.Join(st.VolumesRoot(), creatingPrefix+VolumeID(KindDirectory, "x")+"-123")
	if err := os.MkdirAll(filepath.Join(left, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := NewController(KindDirectory, st, ControllerOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("a crashed create's directory is still there: %v", err)
	}
}

func TestBlockVolumesHoldExt4AndAttachToOneNode(t *testing.T) {
	c, st := newController(t, KindBlock)
	ctx := context.Background()
	resp, err := c.CreateVolume(ctx, createReq("pvc-b", KindBlock, 20*mib, map[string]string{ParamMMP: "true", ParamMMPUpdateInterval: "1"}))
	if err != nil {
		t.Fatal(err)
	}
	v := resp.Volume
	if v.CapacityBytes != 20*mib || v.VolumeContext["mmp"] != "true" || v.VolumeContext["fsType"] != "ext4" {
		t.Fatalf("volume %v", v)
	}
	fi, err := os.Stat(st.ImagePath(v.VolumeId))
	if err != nil || fi.Size() != 20*mib {
		t.Fatalf("image: %v %v", fi, err)
	}
	if dumpe2fs, err := exec.LookPath("dumpe2fs"); err == nil {
		out, err := exec.Command(dumpe2fs, "-h", st.ImagePath(v.VolumeId)).CombinedOutput()
		if err != nil {
			t.Fatalf("dumpe2fs: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "mmp") || !strings.Contains(string(out), "MMP update interval:      1") {
			t.Errorf("the image's superblock shows no MMP with a 1 s interval:\n%s", out)
		}
	}

	rw := mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
	pub := func(node string, ro bool) error {
		_, err := c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.VolumeId, NodeId: node, VolumeCapability: rw, Readonly: ro})
		return err
	}
	wantCode(t, pub("worker1", false), codes.NotFound, `node "worker1" has not reached the storage`)
	for _, n := range []string{"worker1", "worker2"} {
		if err := st.RegisterNode(n, ""); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.VolumeId, NodeId: "worker1"})
	wantCode(t, err, codes.InvalidArgument, "no volume capability")
	_, err = c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: VolumeID(KindBlock, "nope"), NodeId: "worker1", VolumeCapability: rw})
	wantCode(t, err, codes.NotFound, "no such volume")
	if err := pub("worker1", false); err != nil {
		t.Fatal(err)
	}
	if err := pub("worker1", false); err != nil {
		t.Fatalf("publishing again to the same node: %v", err)
	}
	wantCode(t, pub("worker1", true), codes.AlreadyExists, "readonly=false")
	wantCode(t, pub("worker2", false), codes.FailedPrecondition, "published to node worker1")
	_, err = c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.VolumeId})
	wantCode(t, err, codes.FailedPrecondition, "published to node(s) worker1")
	atts, err := st.Attachments(v.VolumeId)
	if err != nil || len(atts) != 1 || atts[0].Node != "worker1" || atts[0].AccessMode != "SINGLE_NODE_WRITER" {
		t.Fatalf("attachments %+v %v", atts, err)
	}

	for range 2 {
		if _, err := c.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.VolumeId, NodeId: "worker1"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub("worker2", false); err != nil {
		t.Fatalf("publishing to worker2 once worker1 let go: %v", err)
	}
	// An empty node ID unpublishes from every node.
	if _, err := c.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.VolumeId}); err != nil {
		t.Fatal(err)
	}
	if atts, _ := st.Attachments(v.VolumeId); len(atts) != 0 {
		t.Fatalf("still attached: %+v", atts)
	}
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.VolumeId}); err != nil {
		t.Fatal(err)
	}

	_, err = c.CreateVolume(ctx, createReq("pvc-rwx", KindBlock, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	r := createReq("pvc-rwx2", KindBlock, 0, nil)
	r.VolumeCapabilities[0].AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	_, err = c.CreateVolume(ctx, r)
	wantCode(t, err, codes.InvalidArgument, "one node at a time")
}

func TestValidateVolumeCapabilities(t *testing.T) {
	c, _ := newController(t, KindDirectory)
	ctx := context.Background()
	resp, err := c.CreateVolume(ctx, createReq("v", KindDirectory, 0, nil))
	if err != nil {
		t.Fatal(err)
	}
	ok, err := c.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: resp.Volume.VolumeId,
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}})
	if err != nil || ok.Confirmed == nil {
		t.Fatalf("%v %v", ok, err)
	}
	no, err := c.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: resp.Volume.VolumeId,
		VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)}})
	if err != nil || no.Confirmed != nil || !strings.Contains(no.Message, "no file system") {
		t.Fatalf("%v %v", no, err)
	}
}

// A fenced volume's unpublish looks for the node's mounts under the mount
// root its driver recorded: with none recorded it cannot tell them from
// other nodes', so it fails and keeps the volume published; with one and
// no mount of the volume under it, the node is simply unpublished.
func TestFencedUnpublishNeedsTheNodesMountRoot(t *testing.T) {
	c, st := newController(t, KindBlock)
	ctx := context.Background()
	resp, err := c.CreateVolume(ctx, createReq("pvc-fenced", KindBlock, 0, map[string]string{ParamFence: "true"}))
	if err != nil {
		t.Fatal(err)
	}
	v := resp.Volume
	if v.VolumeContext[ParamFence] != "true" {
		t.Fatalf("volume context %v", v.VolumeContext)
	}
	rec, err := st.Get(v.VolumeId)
	if err != nil || rec.Parameters[ParamFence] != "true" {
		t.Fatalf("record %+v %v", rec, err)
	}
	rw := mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
	pub := func(node string) {
		t.Helper()
		if _, err := c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.VolumeId, NodeId: node, VolumeCapability: rw}); err != nil {
			t.Fatal(err)
		}
	}
	unpub := func(node string) error {
		_, err := c.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v.VolumeId, NodeId: node})
		return err
	}
	must(t, st.RegisterNode("rootless", ""))
	pub("rootless")
	wantCode(t, unpub("rootless"), codes.Internal, "node rootless recorded no mount root")
	if atts, _ := st.Attachments(v.VolumeId); len(atts) != 1 || atts[0].Node != "rootless" {
		t.Fatalf("a failed fence dropped the attachment: %+v", atts)
	}
	// The node comes back with a mount root (as the node driver does at
	// start), and holds no mount of the volume.
	must(t, st.RegisterNode("rootless", t.TempDir()))
	for range 2 {
		must(t, unpub("rootless"))
	}
	if atts, _ := st.Attachments(v.VolumeId); len(atts) != 0 {
		t.Fatalf("still attached: %+v", atts)
	}
	// A node that never reached the storage has nothing to fence.
	must(t, unpub("never-seen"))

	n, err := NewNode(KindBlock, st, "worker1", NodeOptions{})
	must(t, err)
	_, err = n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.VolumeId, StagingTargetPath: filepath.Join(t.TempDir(), "s"), VolumeCapability: rw})
	wantCode(t, err, codes.FailedPrecondition, "no mount root, so its mounts cannot be fenced")
	root := t.TempDir()
	n, err = NewNode(KindBlock, st, "worker1", NodeOptions{MountRoot: root})
	must(t, err)
	if got, err := st.NodeMountRoot("worker1"); err != nil || got != root {
		t.Fatalf("recorded mount root %q %v, want %q", got, err, root)
	}
	_, err = n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.VolumeId, StagingTargetPath: filepath.Join(t.TempDir(), "s"), VolumeCapability: rw})
	wantCode(t, err, codes.FailedPrecondition, "not under the node's mount root")
	if _, err := NewNode(KindBlock, st, "worker1", NodeOptions{MountRoot: "rel"}); err == nil {
		t.Fatal("a relative mount root was accepted")
	}
}
