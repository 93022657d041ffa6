package csidriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
)

// bindFlags are the per-mount flags a bind mount can carry (the others
// belong to the file system, set when a block volume is staged).
const bindFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC |
	unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME | unix.MS_STRICTATIME

// Node is the CSI node service of one kind on one node.
type Node struct {
	csi.UnimplementedNodeServer
	kind      Kind
	store     Store
	nodeID    string
	mountRoot string

	mu    sync.Mutex
	locks map[string]chan struct{}
}

// NodeOptions configures NewNode.
type NodeOptions struct {
	// MountRoot is the directory the node's staging and target paths lie
	// under (the kubelet's root); recorded in the export path so that the
	// controller can tell this node's mounts from other nodes' when it
	// fences one. A node without one cannot stage a fenced volume.
	MountRoot string
}

// NewNode is the node service of kind k on node nodeID over the export
// path st, as this node reaches it. It records the node in the export
// path, which is how the controller knows the node exists.
func NewNode(k Kind, st Store, nodeID string, o NodeOptions) (*Node, error) {
	if k.DriverName() == "" {
		return nil, fmt.Errorf("node: unknown kind %q", k)
	}
	if err := CheckNodeID(nodeID); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if err := st.Check(); err != nil {
		return nil, fmt.Errorf("node %s: %w", nodeID, err)
	}
	root := o.MountRoot
	if root != "" {
		if err := checkPath("mount root", root); err != nil {
			return nil, fmt.Errorf("node %s: %w", nodeID, err)
		}
		// The mount table names mount points by their resolved path.
		if r, err := filepath.EvalSymlinks(root); err == nil {
			root = r
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("node %s: mount root: %w", nodeID, err)
		}
	}
	if err := st.RegisterNode(nodeID, root); err != nil {
		return nil, fmt.Errorf("node %s: recording it in the export path: %w", nodeID, err)
	}
	return &Node{kind: k, store: st, nodeID: nodeID, mountRoot: root, locks: map[string]chan struct{}{}}, nil
}

// lock serializes the operations on one volume; a caller that gives up
// waiting gets Aborted, the code CSI gives to "an operation is pending".
func (n *Node) lock(ctx context.Context, method, id string) (func(), error) {
	n.mu.Lock()
	ch, ok := n.locks[id]
	if !ok {
		ch = make(chan struct{}, 1)
		n.locks[id] = ch
	}
	n.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, status.Errorf(codes.Aborted, "%s %s: another operation on the volume is still running", method, id)
	}
}

func (n *Node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	// No topology: every node reaches the storage.
	return &csi.NodeGetInfoResponse{NodeId: n.nodeID}, nil
}

func (n *Node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	types := []csi.NodeServiceCapability_RPC_Type{csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER}
	if n.kind == KindBlock {
		types = append(types, csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME)
	}
	resp := &csi.NodeGetCapabilitiesResponse{}
	for _, t := range types {
		resp.Capabilities = append(resp.Capabilities, &csi.NodeServiceCapability{
			Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}},
		})
	}
	return resp, nil
}

// volume reads the volume an ID names, as NodeStage and NodePublish need
// it: InvalidArgument when the ID is empty, NotFound when it is not this
// kind's or not there.
func (n *Node) volume(method, id string) (*Volume, error) {
	if id == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the volume ID is empty", method)
	}
	k, err := ParseVolumeID(id)
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "%s: %v", method, err)
	}
	if k != n.kind {
		return nil, status.Errorf(codes.NotFound, "%s: volume %s is a %s volume, this is the %s driver", method, id, k, n.kind)
	}
	v, err := n.store.Get(id)
	if errors.Is(err, ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "%s: %v", method, err)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return v, nil
}

func (n *Node) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	const m = "NodeStageVolume"
	if n.kind != KindBlock {
		return nil, status.Errorf(codes.Unimplemented, "%s: %s volumes are not staged", m, n.kind)
	}
	if req.GetVolumeId() == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the volume ID is empty", m)
	}
	staging := req.GetStagingTargetPath()
	if err := checkPath("staging target path", staging); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", m, req.GetVolumeId(), err)
	}
	vc := req.GetVolumeCapability()
	if vc == nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: no volume capability", m, req.GetVolumeId())
	}
	if err := checkCapability(n.kind, vc); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", m, req.GetVolumeId(), err)
	}
	v, err := n.volume(m, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	unlock, err := n.lock(ctx, m, v.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()

	flags, data, _ := mountFlags(vc.GetMount().GetMountFlags())
	ro := readOnlyMode(vc.GetAccessMode().GetMode()) || flags&unix.MS_RDONLY != 0
	if ro {
		flags |= unix.MS_RDONLY
	}
	image := n.store.ImagePath(v.ID)
	mt, err := mountAt(staging)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
	}
	if mt != nil {
		if err := stagedFrom(mt, image); err != nil {
			return nil, status.Errorf(codes.AlreadyExists, "%s %s: %s %v", m, v.ID, staging, err)
		}
		if shutDown(mt) {
			return nil, status.Errorf(codes.FailedPrecondition, "%s %s: %v", m, v.ID, errShutDown(staging))
		}
		if mountReadOnly(mt) != ro {
			return nil, status.Errorf(codes.AlreadyExists, "%s %s: already staged at %s with read-only=%v, asked read-only=%v", m, v.ID, staging, mountReadOnly(mt), ro)
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
	}
	if bp, _ := checkParameters(v.Kind, v.Parameters); bp.Fence {
		if err := n.checkFenceable(staging); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "%s %s: a fenced volume: %v", m, v.ID, err)
		}
	}
	dev, err := loopdev.Attach(image, loopdev.Options{ReadOnly: ro})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
	}
	// Once mounted the file system holds the device; closing it on a
	// failed mount detaches it (autoclear).
	defer dev.Close()
	if err := unix.Mount(dev.Path, staging, FSTypeExt4, flags, data); err != nil {
		if errors.Is(err, unix.EBUSY) {
			bp, _ := checkParameters(v.Kind, v.Parameters)
			if bp.MMP {
				return nil, status.Errorf(codes.FailedPrecondition, "%s %s: mounting ext4 from %s at %s: %v: multi-mount protection found the file system in use by another node", m, v.ID, dev.Path, staging, err)
			}
		}
		return nil, status.Errorf(codes.Internal, "%s %s: mounting ext4 from %s (over %s) at %s: %v", m, v.ID, dev.Path, image, staging, err)
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// checkFenceable says why a mount at staging could not be found by the
// controller's fence (which looks under the node's recorded mount root),
// or nil when it could.
func (n *Node) checkFenceable(staging string) error {
	if n.mountRoot == "" {
		return fmt.Errorf("node %s was started with no mount root, so its mounts cannot be fenced", n.nodeID)
	}
	real, err := filepath.EvalSymlinks(staging)
	if err != nil {
		return err
	}
	if !loopdev.Under(real, n.mountRoot) {
		return fmt.Errorf("staging path %s is not under the node's mount root %s, where fencing looks", real, n.mountRoot)
	}
	return nil
}

// stagedFrom says why a mount is not ext4 from a loop device over image,
// or nil when it is.
func stagedFrom(mt *mountinfo.Info, image string) error {
	if mt.FSType != FSTypeExt4 || !strings.HasPrefix(mt.Source, "/dev/loop") {
		return fmt.Errorf("holds a %s mount of %s, not this volume", mt.FSType, mt.Source)
	}
	h, err := loopdev.Hold(mt.Source, image)
	if err != nil {
		return fmt.Errorf("holds a mount of %s, not this volume's image: %w", mt.Source, err)
	}
	return h.Release()
}

// errShutDown says a staged file system was shut down (fenced when the
// volume was detached from the node): it serves no I/O until it is
// unstaged and staged again.
func errShutDown(staging string) error {
	return fmt.Errorf("the file system staged at %s was shut down (fenced when the volume was detached from this node); unstage it first", staging)
}

func (n *Node) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	const m = "NodeUnstageVolume"
	if n.kind != KindBlock {
		return nil, status.Errorf(codes.Unimplemented, "%s: %s volumes are not staged", m, n.kind)
	}
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the volume ID is empty", m)
	}
	staging := req.GetStagingTargetPath()
	if err := checkPath("staging target path", staging); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", m, id, err)
	}
	if _, err := ParseVolumeID(id); err != nil {
		return nil, status.Errorf(codes.NotFound, "%s: %v", m, err)
	}
	unlock, err := n.lock(ctx, m, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	mt, err := mountAt(staging)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, id, err)
	}
	if mt == nil {
		return &csi.NodeUnstageVolumeResponse{}, nil // not staged (any more)
	}
	image := n.store.ImagePath(id)
	if !strings.HasPrefix(mt.Source, "/dev/loop") {
		return nil, status.Errorf(codes.FailedPrecondition, "%s %s: %s holds a %s mount of %s, not this volume: left alone", m, id, staging, mt.FSType, mt.Source)
	}
	// Held across the unmount, so the device detached below is the one
	// checked, even if another node takes a loop device meanwhile.
	dev, err := loopdev.Hold(mt.Source, image)
	if errors.Is(err, loopdev.ErrNotBacked) {
		return nil, status.Errorf(codes.FailedPrecondition, "%s %s: %s holds a mount of %s, which is not over this volume's image: left alone (%v)", m, id, staging, mt.Source, err)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, id, err)
	}
	if others, err := otherMounts(mt, staging); err != nil {
		dev.Release()
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, id, err)
	} else if len(others) > 0 {
		dev.Release()
		return nil, status.Errorf(codes.FailedPrecondition, "%s %s: the file system on %s is still mounted at %s (unpublish first)", m, id, mt.Source, strings.Join(others, ", "))
	}
	if err := unix.Unmount(staging, 0); err != nil {
		dev.Release()
		code := codes.Internal
		if errors.Is(err, unix.EBUSY) {
			code = codes.FailedPrecondition
		}
		return nil, status.Errorf(code, "%s %s: unmounting %s: %v", m, id, staging, err)
	}
	if err := dev.Detach(); err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, id, err)
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// otherMounts are the mount points, other than at, of the file system
// mounted there (bind mounts of it included).
func otherMounts(mt *mountinfo.Info, at string) ([]string, error) {
	all, err := mountinfo.GetMounts(func(i *mountinfo.Info) (bool, bool) {
		return i.Major != mt.Major || i.Minor != mt.Minor || i.Mountpoint == at, false
	})
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	var out []string
	for _, i := range all {
		out = append(out, i.Mountpoint)
	}
	return out, nil
}

func (n *Node) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	const m = "NodePublishVolume"
	if req.GetVolumeId() == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the volume ID is empty", m)
	}
	target := req.GetTargetPath()
	if err := checkPath("target path", target); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", m, req.GetVolumeId(), err)
	}
	vc := req.GetVolumeCapability()
	if vc == nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: no volume capability", m, req.GetVolumeId())
	}
	if err := checkCapability(n.kind, vc); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", m, req.GetVolumeId(), err)
	}
	staging := req.GetStagingTargetPath()
	if n.kind == KindBlock {
		if err := checkPath("staging target path", staging); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", m, req.GetVolumeId(), err)
		}
	}
	flags, data, _ := mountFlags(vc.GetMount().GetMountFlags())
	if n.kind == KindDirectory && data != "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: mount options %q: a directory volume is a bind mount and takes flags only", m, req.GetVolumeId(), data)
	}
	v, err := n.volume(m, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	unlock, err := n.lock(ctx, m, v.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()

	src := n.store.DataDir(v.ID)
	if n.kind == KindBlock {
		mt, err := mountAt(staging)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
		}
		if mt == nil {
			return nil, status.Errorf(codes.FailedPrecondition, "%s %s: not staged at %s (NodeStageVolume first)", m, v.ID, staging)
		}
		if err := stagedFrom(mt, n.store.ImagePath(v.ID)); err != nil {
			return nil, status.Errorf(codes.FailedPrecondition, "%s %s: staging path %s %v", m, v.ID, staging, err)
		}
		if shutDown(mt) {
			return nil, status.Errorf(codes.FailedPrecondition, "%s %s: %v", m, v.ID, errShutDown(staging))
		}
		src = staging
	}
	ro := req.GetReadonly() || readOnlyMode(vc.GetAccessMode().GetMode()) || flags&unix.MS_RDONLY != 0
	flags &= bindFlags
	if ro {
		flags |= unix.MS_RDONLY
	}
	mt, err := mountAt(target)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
	}
	if mt != nil {
		same, err := sameFile(target, src)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
		}
		if !same {
			return nil, status.Errorf(codes.AlreadyExists, "%s %s: %s is already a mount point of something else (%s from %s)", m, v.ID, target, mt.FSType, mt.Source)
		}
		if mountReadOnly(mt) != ro {
			return nil, status.Errorf(codes.AlreadyExists, "%s %s: already published at %s with read-only=%v, asked read-only=%v", m, v.ID, target, mountReadOnly(mt), ro)
		}
		return &csi.NodePublishVolumeResponse{}, nil
	}
	if vc.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
		others, err := publishedAt(src, target, staging)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
		}
		if len(others) > 0 {
			return nil, status.Errorf(codes.FailedPrecondition, "%s %s: access mode SINGLE_NODE_SINGLE_WRITER, and the volume is already published at %s", m, v.ID, strings.Join(others, ", "))
		}
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
	}
	if err := bindMount(src, target, flags); err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// publishedAt are the mount points, other than the ones skipped, whose
// root is src: where this node has published the volume already. Only
// mounts of src's device are looked at, so no other file system (a hung
// FUSE mount among them) is touched.
func publishedAt(src string, skip ...string) ([]string, error) {
	var st unix.Stat_t
	if err := unix.Stat(src, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", src, err)
	}
	major, minor := int(unix.Major(st.Dev)), int(unix.Minor(st.Dev))
	all, err := mountinfo.GetMounts(func(i *mountinfo.Info) (bool, bool) {
		return i.Major != major || i.Minor != minor || slices.Contains(skip, i.Mountpoint), false
	})
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	var out []string
	for _, i := range all {
		if same, err := sameFile(i.Mountpoint, src); err == nil && same {
			out = append(out, i.Mountpoint)
		}
	}
	return out, nil
}

func (n *Node) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	const m = "NodeUnpublishVolume"
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the volume ID is empty", m)
	}
	target := req.GetTargetPath()
	if err := checkPath("target path", target); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", m, id, err)
	}
	if _, err := ParseVolumeID(id); err != nil {
		return nil, status.Errorf(codes.NotFound, "%s: %v", m, err)
	}
	unlock, err := n.lock(ctx, m, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := unmountAll(target); err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, id, err)
	}
	// The target is the driver's to remove (it made it).
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "%s %s: removing %s: %v", m, id, target, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
