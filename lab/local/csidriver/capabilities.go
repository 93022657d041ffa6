package csidriver

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// FSTypeExt4 is the one file system block volumes hold.
const FSTypeExt4 = "ext4"

// Block volume parameters (StorageClass parameters).
const (
	// ParamMMP turns on ext4 multi-mount protection ("true" or "false",
	// default false): mkfs.ext4 -O mmp. A node's mount then fails while
	// another node's mount keeps the MMP block fresh.
	ParamMMP = "mmp"
	// ParamMMPUpdateInterval is the MMP update interval in seconds
	// (1–300, default mke2fs's 5): mkfs.ext4 -E mmp_update_interval. A
	// mount that finds the block in use waits about twice this long.
	ParamMMPUpdateInterval = "mmpUpdateInterval"
	// ParamFence turns on fencing at unpublish ("true" or "false",
	// default false): ControllerUnpublishVolume shuts down the old node's
	// ext4 mounts of the volume, so its I/O fails and nothing more of it
	// reaches the image.
	ParamFence = "fence"
)

// The parameters a provisioner passes about the claim (external-
// provisioner's --extra-create-metadata names): kept in the record, so
// the export path says whose a volume is.
const (
	ParamPVCName      = "csi.storage.k8s.io/pvc/name"
	ParamPVCNamespace = "csi.storage.k8s.io/pvc/namespace"
	ParamPVName       = "csi.storage.k8s.io/pv/name"
)

var metadataParams = []string{ParamPVCName, ParamPVCNamespace, ParamPVName}

// maxMMPUpdateInterval is ext4's EXT4_MMP_MAX_UPDATE_INTERVAL.
const maxMMPUpdateInterval = 300

// blockParams are a block volume's file system options.
type blockParams struct {
	MMP               bool
	MMPUpdateInterval int // seconds; 0 is mke2fs's default
	Fence             bool
}

// checkParameters refuses a parameter the kind does not know and reads
// the block volume's options.
func checkParameters(k Kind, params map[string]string) (blockParams, error) {
	known := map[string]bool{}
	for _, p := range metadataParams {
		known[p] = true
	}
	if k == KindBlock {
		known[ParamMMP], known[ParamMMPUpdateInterval], known[ParamFence] = true, true, true
	}
	var unknown []string
	for key := range params {
		if !known[key] {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		var names []string
		for key := range known {
			if !strings.HasPrefix(key, "csi.storage.k8s.io/") {
				names = append(names, key)
			}
		}
		sort.Strings(names)
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		return blockParams{}, fmt.Errorf("unknown parameter(s) %s for %s volumes (known: %s)", strings.Join(unknown, ", "), k, list)
	}
	var bp blockParams
	if v, ok := params[ParamMMP]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bp, fmt.Errorf("parameter %s=%q: want true or false", ParamMMP, v)
		}
		bp.MMP = b
	}
	if v, ok := params[ParamMMPUpdateInterval]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxMMPUpdateInterval {
			return bp, fmt.Errorf("parameter %s=%q: want whole seconds from 1 to %d", ParamMMPUpdateInterval, v, maxMMPUpdateInterval)
		}
		if !bp.MMP {
			return bp, fmt.Errorf("parameter %s needs %s=true", ParamMMPUpdateInterval, ParamMMP)
		}
		bp.MMPUpdateInterval = n
	}
	if v, ok := params[ParamFence]; ok {
		switch v {
		case "true":
			bp.Fence = true
		case "false":
		default:
			return bp, fmt.Errorf("parameter %s=%q: want true or false", ParamFence, v)
		}
	}
	return bp, nil
}

// checkCapability says whether a kind serves a volume capability, and if
// not, why.
func checkCapability(k Kind, c *csi.VolumeCapability) error {
	if c == nil {
		return fmt.Errorf("a volume capability is empty")
	}
	if c.GetBlock() != nil {
		return fmt.Errorf("raw block access is not served: %s volumes are mounted file systems (access type mount)", k)
	}
	m := c.GetMount()
	if m == nil {
		return fmt.Errorf("a volume capability has no access type (want mount)")
	}
	switch k {
	case KindDirectory:
		if m.FsType != "" {
			return fmt.Errorf("fs_type %q: a directory volume has no file system of its own (leave it empty)", m.FsType)
		}
	case KindBlock:
		if m.FsType != "" && m.FsType != FSTypeExt4 {
			return fmt.Errorf("fs_type %q: block volumes hold %s", m.FsType, FSTypeExt4)
		}
	}
	if _, _, err := mountFlags(m.MountFlags); err != nil {
		return err
	}
	am := c.GetAccessMode()
	if am == nil || am.Mode == csi.VolumeCapability_AccessMode_UNKNOWN {
		return fmt.Errorf("a volume capability has no access mode")
	}
	if _, ok := csi.VolumeCapability_AccessMode_Mode_name[int32(am.Mode)]; !ok {
		return fmt.Errorf("access mode %d is not one CSI defines", am.Mode)
	}
	if k == KindBlock && !singleNode(am.Mode) {
		return fmt.Errorf("access mode %s: ext4 on one image is no cluster file system; block volumes serve one node at a time (SINGLE_NODE_*)", am.Mode)
	}
	return nil
}

func checkCapabilities(k Kind, caps []*csi.VolumeCapability) error {
	if len(caps) == 0 {
		return fmt.Errorf("no volume capabilities")
	}
	for _, c := range caps {
		if err := checkCapability(k, c); err != nil {
			return err
		}
	}
	return nil
}

func singleNode(m csi.VolumeCapability_AccessMode_Mode) bool {
	switch m {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return true
	}
	return false
}

func readOnlyMode(m csi.VolumeCapability_AccessMode_Mode) bool {
	return m == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		m == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}
