package csidriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
)

// Sizes of block volumes.
const (
	mib = 1 << 20
	// DefaultBlockBytes is a block volume's size when the request names
	// none.
	DefaultBlockBytes = 64 * mib
	// MinBlockBytes is the smallest block volume: room for ext4's journal
	// and, with MMP, its block.
	MinBlockBytes = 16 * mib
)

// Controller is the CSI controller service of one kind. It runs where
// the export path is (the storage host).
type Controller struct {
	csi.UnimplementedControllerServer
	kind  Kind
	store Store
	mkfs  string
	now   func() time.Time
}

// ControllerOptions configures NewController.
type ControllerOptions struct {
	// Mkfs is mkfs.ext4 (default: found on PATH).
	Mkfs string
}

// NewController is the controller service of kind k over the export
// path st. It removes what a crashed create or delete left.
func NewController(k Kind, st Store, o ControllerOptions) (*Controller, error) {
	if k.DriverName() == "" {
		return nil, fmt.Errorf("controller: unknown kind %q", k)
	}
	if err := st.Check(); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c := &Controller{kind: k, store: st, now: time.Now}
	if k == KindBlock {
		mkfs := o.Mkfs
		if mkfs == "" {
			mkfs = "mkfs.ext4"
		}
		p, err := exec.LookPath(mkfs)
		if err != nil {
			return nil, fmt.Errorf("controller: block volumes need mkfs.ext4 (Debian package e2fsprogs): %w", err)
		}
		c.mkfs = p
	}
	unlock, err := st.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := st.SweepUnfinished(); err != nil {
		return nil, fmt.Errorf("controller: removing unfinished volumes: %w", err)
	}
	return c, nil
}

func (c *Controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	caps := []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	}
	if c.kind == KindBlock {
		caps = append(caps,
			csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
			csi.ControllerServiceCapability_RPC_PUBLISH_READONLY)
	}
	resp := &csi.ControllerGetCapabilitiesResponse{}
	for _, t := range caps {
		resp.Capabilities = append(resp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}},
		})
	}
	return resp, nil
}

// capacityFor is the size a volume gets for a request: block volumes
// are rounded up to whole MiB, no smaller than MinBlockBytes; a directory
// volume's size is what was asked and is not enforced (there is no quota).
func capacityFor(k Kind, r *csi.CapacityRange) (int64, error) {
	req, lim := r.GetRequiredBytes(), r.GetLimitBytes()
	if req < 0 || lim < 0 {
		return 0, status.Errorf(codes.InvalidArgument, "capacity range: negative bytes (required %d, limit %d)", req, lim)
	}
	if lim > 0 && req > lim {
		return 0, status.Errorf(codes.InvalidArgument, "capacity range: required %d bytes is more than the limit %d", req, lim)
	}
	if k == KindDirectory {
		if req == 0 {
			return lim, nil
		}
		return req, nil
	}
	want := req
	if want == 0 {
		want = DefaultBlockBytes
		if lim > 0 && lim < want {
			want = lim / mib * mib // the most whole MiB the limit holds
		}
	}
	want = max(want, MinBlockBytes)
	if want > (1<<63-1)-mib {
		return 0, status.Errorf(codes.OutOfRange, "capacity range: %d bytes is too large", want)
	}
	want = (want + mib - 1) / mib * mib
	if lim > 0 && want > lim {
		return 0, status.Errorf(codes.OutOfRange, "capacity range: a block volume takes whole MiB and at least %d bytes; %d bytes does not fit the limit %d", MinBlockBytes, want, lim)
	}
	return want, nil
}

func (c *Controller) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "CreateVolume: the name is empty")
	}
	if err := checkCapabilities(c.kind, req.GetVolumeCapabilities()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %s: %v", req.GetName(), err)
	}
	if req.GetVolumeContentSource() != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %s: a content source (snapshot or clone) is not served", req.GetName())
	}
	bp, err := checkParameters(c.kind, req.GetParameters())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "CreateVolume %s: %v", req.GetName(), err)
	}
	size, err := capacityFor(c.kind, req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	id := VolumeID(c.kind, req.GetName())
	unlock, err := c.store.Lock()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolume %s: %v", req.GetName(), err)
	}
	defer unlock()

	if v, err := c.store.Get(id); err == nil {
		if err := compatible(v, req, size); err != nil {
			return nil, status.Errorf(codes.AlreadyExists, "CreateVolume %s: volume %s exists and %v", req.GetName(), id, err)
		}
		return &csi.CreateVolumeResponse{Volume: c.csiVolume(v)}, nil
	} else if !errors.Is(err, ErrNotFound) {
		return nil, status.Errorf(codes.Internal, "CreateVolume %s: %v", req.GetName(), err)
	}

	v := &Volume{
		ID: id, Name: req.GetName(), Kind: c.kind, CapacityBytes: size,
		Parameters: maps.Clone(req.GetParameters()), Created: c.now().UTC(),
	}
	err = c.store.Create(v, func(dir string) error {
		if c.kind == KindDirectory {
			data := filepath.Join(dir, dataDir)
			if err := os.Mkdir(data, 0o777); err != nil {
				return err
			}
			// Writable by a pod of any user, as an NFS export with
			// no root squash would be; the umask would take it away.
			return os.Chmod(data, 0o777)
		}
		return c.makeImage(ctx, filepath.Join(dir, imageFile), size, bp)
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "CreateVolume %s: %v", req.GetName(), err)
	}
	return &csi.CreateVolumeResponse{Volume: c.csiVolume(v)}, nil
}

// compatible says why an existing volume does not answer a request for
// the same name, or nil when it does.
func compatible(v *Volume, req *csi.CreateVolumeRequest, size int64) error {
	if !maps.Equal(v.Parameters, req.GetParameters()) {
		return fmt.Errorf("was made with other parameters (%v, asked %v)", v.Parameters, req.GetParameters())
	}
	r := req.GetCapacityRange()
	if v.CapacityBytes < r.GetRequiredBytes() || (r.GetLimitBytes() > 0 && v.CapacityBytes > r.GetLimitBytes()) {
		return fmt.Errorf("holds %d bytes, outside the range asked (required %d, limit %d)", v.CapacityBytes, r.GetRequiredBytes(), r.GetLimitBytes())
	}
	if r.GetRequiredBytes() == 0 && r.GetLimitBytes() == 0 && v.CapacityBytes != size {
		return fmt.Errorf("holds %d bytes, not the default %d", v.CapacityBytes, size)
	}
	return nil
}

// makeImage writes a sparse image of size bytes and makes ext4 on it:
// no reserved blocks, the inode tables and journal written now (not by
// a kernel thread after each node's first mount), no discard.
func (c *Controller) makeImage(ctx context.Context, path string, size int64, bp blockParams) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("sizing the image: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	ext := []string{"lazy_itable_init=0", "lazy_journal_init=0", "nodiscard"}
	args := []string{"-q", "-F", "-m", "0"}
	if bp.MMP {
		args = append(args, "-O", "mmp")
		if bp.MMPUpdateInterval > 0 {
			ext = append(ext, "mmp_update_interval="+strconv.Itoa(bp.MMPUpdateInterval))
		}
	}
	args = append(args, "-E", strings.Join(ext, ","), path)
	cmd := exec.CommandContext(ctx, c.mkfs, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", c.mkfs, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (c *Controller) csiVolume(v *Volume) *csi.Volume {
	vc := map[string]string{"kind": string(v.Kind)}
	if v.Kind == KindBlock {
		vc["fsType"] = FSTypeExt4
		bp, _ := checkParameters(v.Kind, v.Parameters)
		vc[ParamMMP] = strconv.FormatBool(bp.MMP)
		vc[ParamFence] = strconv.FormatBool(bp.Fence)
	}
	return &csi.Volume{VolumeId: v.ID, CapacityBytes: v.CapacityBytes, VolumeContext: vc}
}

// volume reads the volume an ID names for this kind: InvalidArgument
// for an empty ID, NotFound for one of another form or kind, or absent.
func (c *Controller) volume(method, id string) (*Volume, error) {
	if id == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the volume ID is empty", method)
	}
	k, err := ParseVolumeID(id)
	if err != nil {
		return nil, status.Errorf(codes.NotFound, "%s: %v", method, err)
	}
	if k != c.kind {
		return nil, status.Errorf(codes.NotFound, "%s: volume %s is a %s volume, this is the %s driver", method, id, k, c.kind)
	}
	v, err := c.store.Get(id)
	if errors.Is(err, ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "%s: %v", method, err)
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", method, err)
	}
	return v, nil
}

func (c *Controller) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Error(codes.InvalidArgument, "DeleteVolume: the volume ID is empty")
	}
	if k, err := ParseVolumeID(id); err != nil || k != c.kind {
		// Not one of this driver's: there is nothing to delete, which
		// is what the spec asks to answer with success.
		return &csi.DeleteVolumeResponse{}, nil
	}
	unlock, err := c.store.Lock()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume %s: %v", id, err)
	}
	defer unlock()
	if _, err := c.store.Get(id); errors.Is(err, ErrNotFound) {
		return &csi.DeleteVolumeResponse{}, nil
	}
	if c.kind == KindBlock {
		atts, err := c.store.Attachments(id)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "DeleteVolume %s: %v", id, err)
		}
		if len(atts) > 0 {
			var nodes []string
			for _, a := range atts {
				nodes = append(nodes, a.Node)
			}
			return nil, status.Errorf(codes.FailedPrecondition, "DeleteVolume %s: published to node(s) %s", id, strings.Join(nodes, ", "))
		}
		// One kernel serves every node here, so a node's loop device
		// over the image can be seen even when its attachment is gone.
		devs, err := loopdev.List(c.store.ImagePath(id))
		if err != nil {
			return nil, status.Errorf(codes.Internal, "DeleteVolume %s: %v", id, err)
		}
		if len(devs) > 0 {
			var names []string
			for _, d := range devs {
				names = append(names, d.Path)
			}
			return nil, status.Errorf(codes.FailedPrecondition, "DeleteVolume %s: the image is still in use by %s", id, strings.Join(names, ", "))
		}
	}
	if err := c.store.Remove(id); err != nil {
		return nil, status.Errorf(codes.Internal, "DeleteVolume %s: %v", id, err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (c *Controller) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	v, err := c.volume("ValidateVolumeCapabilities", req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Errorf(codes.InvalidArgument, "ValidateVolumeCapabilities %s: no volume capabilities", v.ID)
	}
	if err := checkCapabilities(c.kind, req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	if _, err := checkParameters(c.kind, req.GetParameters()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: err.Error()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

func (c *Controller) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if c.kind != KindBlock {
		return nil, status.Errorf(codes.Unimplemented, "ControllerPublishVolume: %s volumes are not attached (attachRequired: false)", c.kind)
	}
	const m = "ControllerPublishVolume"
	if req.GetVolumeId() == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the volume ID is empty", m)
	}
	if req.GetNodeId() == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: the node ID is empty", m, req.GetVolumeId())
	}
	if req.GetVolumeCapability() == nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: no volume capability", m, req.GetVolumeId())
	}
	if err := checkCapability(c.kind, req.GetVolumeCapability()); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", m, req.GetVolumeId(), err)
	}
	unlock, err := c.store.Lock()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", m, err)
	}
	defer unlock()
	v, err := c.volume(m, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	node := req.GetNodeId()
	if !c.store.NodeKnown(node) {
		return nil, status.Errorf(codes.NotFound, "%s %s: node %q has not reached the storage (no node driver registered it)", m, v.ID, node)
	}
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()
	want := Attachment{Node: node, ReadOnly: req.GetReadonly(), AccessMode: mode.String(), Published: c.now().UTC()}
	atts, err := c.store.Attachments(v.ID)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
	}
	for _, a := range atts {
		if a.Node == node {
			if a.ReadOnly != want.ReadOnly || a.AccessMode != want.AccessMode {
				return nil, status.Errorf(codes.AlreadyExists, "%s %s: already published to node %s with readonly=%v %s (asked readonly=%v %s)",
					m, v.ID, node, a.ReadOnly, a.AccessMode, want.ReadOnly, want.AccessMode)
			}
			return &csi.ControllerPublishVolumeResponse{PublishContext: publishContext(a)}, nil
		}
	}
	// Block volumes serve one node at a time (checkCapability), as a
	// disk that attaches to one host does.
	if len(atts) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "%s %s: published to node %s; a block volume attaches to one node at a time", m, v.ID, atts[0].Node)
	}
	if err := c.store.Attach(v.ID, want); err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, v.ID, err)
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: publishContext(want)}, nil
}

// publishContext is what NodeStageVolume is told of the attachment.
func publishContext(a Attachment) map[string]string {
	return map[string]string{"attachedTo": a.Node}
}

func (c *Controller) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if c.kind != KindBlock {
		return nil, status.Errorf(codes.Unimplemented, "ControllerUnpublishVolume: %s volumes are not attached (attachRequired: false)", c.kind)
	}
	const m = "ControllerUnpublishVolume"
	id := req.GetVolumeId()
	if id == "" {
		return nil, status.Errorf(codes.InvalidArgument, "%s: the volume ID is empty", m)
	}
	if k, err := ParseVolumeID(id); err != nil || k != c.kind {
		return &csi.ControllerUnpublishVolumeResponse{}, nil // nothing of ours is published
	}
	unlock, err := c.store.Lock()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s: %v", m, err)
	}
	defer unlock()
	v, err := c.store.Get(id)
	if errors.Is(err, ErrNotFound) {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: %v", m, id, err)
	}
	bp, err := checkParameters(v.Kind, v.Parameters)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "%s %s: its record: %v", m, id, err)
	}
	nodes := []string{req.GetNodeId()}
	if req.GetNodeId() == "" { // from every node, as the spec asks
		atts, err := c.store.Attachments(id)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "%s %s: %v", m, id, err)
		}
		nodes = nodes[:0]
		for _, a := range atts {
			nodes = append(nodes, a.Node)
		}
	} else if CheckNodeID(req.GetNodeId()) != nil {
		return &csi.ControllerUnpublishVolumeResponse{}, nil // no such node can hold it
	}
	for _, n := range nodes {
		// Fenced before the record goes: a fence that fails keeps the
		// volume published to the node, so csi-attacher retries.
		if bp.Fence {
			if _, err := fenceNode(c.store, id, n); err != nil {
				return nil, status.Errorf(codes.Internal, "%s %s from %s: fencing the node: %v", m, id, n, err)
			}
		}
		if err := c.store.Detach(id, n); err != nil {
			return nil, status.Errorf(codes.Internal, "%s %s from %s: %v", m, id, n, err)
		}
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}
