package csidriver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func TestNodeRefusesBadInput(t *testing.T) {
	st := Store{Root: t.TempDir()}
	ctx := context.Background()
	if _, err := NewNode(KindBlock, st, "Not A Node", NodeOptions{}); err == nil {
		t.Fatal("a node ID that is no node name was accepted")
	}
	n, err := NewNode(KindBlock, st, "worker1", NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.NodeKnown("worker1") || st.NodeKnown("worker2") {
		t.Fatal("the node is not recorded in the export path")
	}
	rw := mountCap("", csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER)
	id := VolumeID(KindBlock, "nope")
	dir := t.TempDir()

	_, err = n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{StagingTargetPath: dir, VolumeCapability: rw})
	wantCode(t, err, codes.InvalidArgument, "volume ID is empty")
	_, err = n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, VolumeCapability: rw})
	wantCode(t, err, codes.InvalidArgument, "staging target path is empty")
	_, err = n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: "rel/path", VolumeCapability: rw})
	wantCode(t, err, codes.InvalidArgument, "not absolute")
	_, err = n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: dir})
	wantCode(t, err, codes.InvalidArgument, "no volume capability")
	_, err = n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: dir, VolumeCapability: rw})
	wantCode(t, err, codes.NotFound, "no such volume")
	_, err = n.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: VolumeID(KindDirectory, "x"), StagingTargetPath: dir, VolumeCapability: rw})
	wantCode(t, err, codes.NotFound, "is a directory volume, this is the block driver")
	_, err = n.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id})
	wantCode(t, err, codes.InvalidArgument, "staging target path is empty")
	if _, err := n.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: dir}); err != nil {
		t.Errorf("unstaging what is not staged: %v", err)
	}

	target := filepath.Join(dir, "target")
	_, err = n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: rw})
	wantCode(t, err, codes.InvalidArgument, "staging target path is empty")
	_, err = n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: dir, VolumeCapability: rw})
	wantCode(t, err, codes.InvalidArgument, "target path is empty")
	_, err = n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: dir, TargetPath: target})
	wantCode(t, err, codes.InvalidArgument, "no volume capability")
	_, err = n.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: dir, TargetPath: target, VolumeCapability: rw})
	wantCode(t, err, codes.NotFound, "no such volume")
	_, err = n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id})
	wantCode(t, err, codes.InvalidArgument, "target path is empty")
	// Unpublishing what is not published removes nothing that is not
	// there, and succeeds.
	if _, err := n.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Errorf("unpublishing what is not published: %v", err)
	}

	d, err := NewNode(KindDirectory, st, "worker1", NodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: dir, VolumeCapability: rw})
	wantCode(t, err, codes.Unimplemented, "not staged")
	_, err = d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: VolumeID(KindDirectory, "x"), TargetPath: target,
		VolumeCapability: mountCap("", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER, "data=journal")})
	wantCode(t, err, codes.InvalidArgument, "takes flags only")
}

func TestNodeInfoAndCapabilities(t *testing.T) {
	st := Store{Root: t.TempDir()}
	ctx := context.Background()
	for _, k := range Kinds {
		n, err := NewNode(k, st, "worker3", NodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info, err := n.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
		if err != nil || info.NodeId != "worker3" || info.AccessibleTopology != nil {
			t.Errorf("%s: %v %v", k, info, err)
		}
		caps, err := n.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		stage := false
		for _, c := range caps.Capabilities {
			if c.GetRpc().GetType() == csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME {
				stage = true
			}
		}
		if stage != (k == KindBlock) {
			t.Errorf("%s: STAGE_UNSTAGE_VOLUME advertised: %v", k, stage)
		}
	}
	b, err := os.ReadFile(filepath.Join(st.Root, "nodes", "worker3"))
	if err != nil || !strings.Contains(string(b), `"node":"worker3"`) {
		t.Errorf("node record: %s %v", b, err)
	}
}
