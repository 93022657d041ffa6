package csidriver

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

func mountCap(fs string, mode csi.VolumeCapability_AccessMode_Mode, flags ...string) *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: fs, MountFlags: flags}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode},
	}
}

func TestVolumeIDsAreStablePerKindAndName(t *testing.T) {
	a, b := VolumeID(KindBlock, "pvc-1"), VolumeID(KindBlock, "pvc-1")
	if a != b {
		t.Fatalf("the same name gave %s and %s", a, b)
	}
	if d := VolumeID(KindDirectory, "pvc-1"); d == a || !strings.HasPrefix(d, "directory-") {
		t.Errorf("directory ID %s (block %s)", d, a)
	}
	if VolumeID(KindBlock, "pvc-2") == a {
		t.Error("two names gave one ID")
	}
	for _, id := range []string{a, VolumeID(KindDirectory, "x")} {
		if _, err := ParseVolumeID(id); err != nil {
			t.Errorf("ParseVolumeID(%s): %v", id, err)
		}
	}
	for _, bad := range []string{"", "block-", "block-XYZ", "nfs-" + strings.Repeat("a", 32), "block-" + strings.Repeat("a", 31), "../block-" + strings.Repeat("a", 32)} {
		if _, err := ParseVolumeID(bad); err == nil {
			t.Errorf("ParseVolumeID(%q) accepted it", bad)
		}
	}
}

func TestNodeIDsAreNodeNames(t *testing.T) {
	for _, ok := range []string{"worker1", "cp-1.lab"} {
		if err := CheckNodeID(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Worker1", "a/b", "..", "-x"} {
		if err := CheckNodeID(bad); err == nil {
			t.Errorf("CheckNodeID(%q) accepted it", bad)
		}
	}
}

func TestCapacity(t *testing.T) {
	cases := []struct {
		kind     Kind
		req, lim int64
		want     int64
		bad      bool
	}{
		{KindBlock, 0, 0, DefaultBlockBytes, false},
		{KindBlock, 1, 0, MinBlockBytes, false},
		{KindBlock, 20*mib + 1, 0, 21 * mib, false},
		{KindBlock, 0, 32 * mib, 32 * mib, false},
		{KindBlock, 0, 20*mib + 5, 20 * mib, false},
		{KindBlock, 0, 1 * mib, 0, true}, // below the smallest
		{KindBlock, 30 * mib, 20 * mib, 0, true},
		{KindBlock, -1, 0, 0, true},
		{KindDirectory, 0, 0, 0, false},
		{KindDirectory, 12345, 0, 12345, false},
		{KindDirectory, 0, 999, 999, false},
		{KindDirectory, 5, 4, 0, true},
	}
	for _, c := range cases {
		got, err := capacityFor(c.kind, &csi.CapacityRange{RequiredBytes: c.req, LimitBytes: c.lim})
		if c.bad {
			if err == nil {
				t.Errorf("%s required %d limit %d: got %d, want an error", c.kind, c.req, c.lim, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s required %d limit %d: got %d, %v; want %d", c.kind, c.req, c.lim, got, err, c.want)
		}
	}
}

func TestParameters(t *testing.T) {
	if _, err := checkParameters(KindDirectory, map[string]string{"mmp": "true"}); err == nil || !strings.Contains(err.Error(), "mmp") {
		t.Errorf("a directory volume took mmp: %v", err)
	}
	_, err := checkParameters(KindBlock, map[string]string{"kind": "block", "fstype": "xfs"})
	if err == nil || !strings.Contains(err.Error(), "fstype, kind") || !strings.Contains(err.Error(), "known: fence, mmp, mmpUpdateInterval") {
		t.Errorf("unknown parameters: %v", err)
	}
	bp, err := checkParameters(KindBlock, map[string]string{ParamMMP: "true", ParamMMPUpdateInterval: "2", ParamPVCName: "data-0"})
	if err != nil || !bp.MMP || bp.MMPUpdateInterval != 2 {
		t.Errorf("mmp parameters: %+v, %v", bp, err)
	}
	if bp.Fence {
		t.Errorf("fenced without asking: %+v", bp)
	}
	for v, want := range map[string]bool{"true": true, "false": false} {
		bp, err := checkParameters(KindBlock, map[string]string{ParamFence: v})
		if err != nil || bp.Fence != want {
			t.Errorf("fence=%q: %+v, %v", v, bp, err)
		}
	}
	if _, err := checkParameters(KindBlock, map[string]string{ParamFence: "yes"}); err == nil || !strings.Contains(err.Error(), `parameter fence="yes": want true or false`) {
		t.Errorf("fence=yes: %v", err)
	}
	if _, err := checkParameters(KindDirectory, map[string]string{ParamFence: "true"}); err == nil || !strings.Contains(err.Error(), "unknown parameter(s) fence for directory volumes") {
		t.Errorf("a directory volume took fence: %v", err)
	}
	for _, bad := range []map[string]string{
		{ParamMMP: "yes please"},
		{ParamMMP: "true", ParamMMPUpdateInterval: "0"},
		{ParamMMP: "true", ParamMMPUpdateInterval: "301"},
		{ParamMMPUpdateInterval: "5"},
		{ParamFence: "yes"},
		{ParamFence: "1"},
		{ParamFence: "True"},
	} {
		if _, err := checkParameters(KindBlock, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestCapabilities(t *testing.T) {
	rwo := csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	rwx := csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	good := []struct {
		k Kind
		c *csi.VolumeCapability
	}{
		{KindBlock, mountCap("", rwo)},
		{KindBlock, mountCap("ext4", csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER, "noatime", "data=journal")},
		{KindDirectory, mountCap("", rwx)},
		{KindDirectory, mountCap("", csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, "ro,nosuid")},
	}
	for _, g := range good {
		if err := checkCapability(g.k, g.c); err != nil {
			t.Errorf("%s %v: %v", g.k, g.c, err)
		}
	}
	bad := []struct {
		k    Kind
		c    *csi.VolumeCapability
		says string
	}{
		{KindBlock, mountCap("", rwx), "one node at a time"},
		{KindBlock, mountCap("xfs", rwo), "ext4"},
		{KindDirectory, mountCap("ext4", rwx), "no file system"},
		{KindBlock, &csi.VolumeCapability{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}, AccessMode: &csi.VolumeCapability_AccessMode{Mode: rwo}}, "raw block"},
		{KindBlock, &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: rwo}}, "no access type"},
		{KindBlock, mountCap("", csi.VolumeCapability_AccessMode_UNKNOWN), "no access mode"},
		{KindDirectory, mountCap("", rwx, "bind"), "driver decides"},
		{KindDirectory, mountCap("", rwx, "ro,,nosuid"), "empty flag"},
		{KindBlock, nil, "empty"},
	}
	for _, b := range bad {
		err := checkCapability(b.k, b.c)
		if err == nil || !strings.Contains(err.Error(), b.says) {
			t.Errorf("%s %v: got %v, want an error saying %q", b.k, b.c, err, b.says)
		}
	}
	if err := checkCapabilities(KindBlock, nil); err == nil {
		t.Error("no capabilities accepted")
	}
}

func TestMountFlags(t *testing.T) {
	flags, data, err := mountFlags([]string{"ro,noatime", "nosuid", "data=journal", "errors=remount-ro"})
	if err != nil {
		t.Fatal(err)
	}
	if want := uintptr(unix.MS_RDONLY | unix.MS_NOATIME | unix.MS_NOSUID); flags != want {
		t.Errorf("flags %#x, want %#x", flags, want)
	}
	if data != "data=journal,errors=remount-ro" {
		t.Errorf("data %q", data)
	}
}

func TestCheckPath(t *testing.T) {
	if err := checkPath("target path", "/a/b"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "a/b", "/a/../b", "/a/"} {
		if err := checkPath("target path", bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestKinds(t *testing.T) {
	ks, err := ParseKinds("")
	if err != nil || len(ks) != 2 {
		t.Fatalf("%v %v", ks, err)
	}
	ks, err = ParseKinds("block, block")
	if err != nil || len(ks) != 1 || ks[0] != KindBlock || !ks[0].AttachRequired() || KindDirectory.AttachRequired() {
		t.Errorf("%v %v", ks, err)
	}
	if _, err := ParseKinds("block,nfs"); err == nil || !strings.Contains(err.Error(), `"nfs"`) {
		t.Errorf("nfs: %v", err)
	}
}
