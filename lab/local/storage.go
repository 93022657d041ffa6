package local

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/csidriver"
)

var (
	_ lab.StoredData        = (*Lab)(nil)
	_ lab.FilesystemChecker = (*Lab)(nil)
	_ lab.VolumeDamager     = (*Lab)(nil)
)

// FenceEmulated is how the local lab's fenced block class fences: not a
// storage target revoking the node's access, but the node's own ext4
// mount shut down by the storage host, which shares the node's kernel.
const FenceEmulated = "the storage host's ext4 shutdown (EXT4_IOC_SHUTDOWN) of the detached node's own mount at ControllerUnpublishVolume, which one kernel reaches for every node; a real storage target revokes the node's access to the disk instead. Either way the node's later I/O fails and its unwritten cache is lost"

// StorageEmulated is what the local lab's storage does not do as real
// shared storage does: one kernel and one file system serve every host.
var StorageEmulated = []string{
	"shared directory volumes are one directory of the machine's file system: file locks are the one kernel's and always work across nodes (NFS with a lock manager that never fails)",
	"a powered-off node's dirty pages still reach the block image: the power cut unmounts the node's file systems, which writes them back, where a real power cut loses them",
	"the block image's own page cache plays the shared disk, coherent for every node; each node's ext4 cache above its loop device is its own, as two hosts' are",
	"nothing fences a node's I/O once a faultline-block or faultline-block-mmp volume is detached from it: its loop device keeps working",
	"fencing (faultline-block-fenced, at detach) is " + FenceEmulated,
}

// StorageInfo says what the lab's storage host offers; an error wrapping
// lab.ErrUnsupported when the lab has none.
func (l *Lab) StorageInfo() (lab.StorageInfo, error) {
	s, ok := l.comp.StorageHost()
	if !ok {
		return lab.StorageInfo{}, lab.Unsupported(l.Info().Kind, "storage", fmt.Sprintf("lab %s has no host with the storage role", l.cfg.Name))
	}
	return lab.StorageInfo{
		SharedClass:      csidriver.SharedStorageClass,
		BlockClass:       csidriver.BlockStorageClass,
		BlockMMPClass:    csidriver.BlockMMPStorageClass,
		BlockFencedClass: csidriver.BlockFencedStorageClass,
		HistoryEndpoints: []string{l.comp.HistoryEndpoint()},
		StorageHost:      s.Name,
		Emulated:         StorageEmulated,
		FenceEmulation:   FenceEmulated,
	}, nil
}

// Export is the storage host's export path (the volumes' records, images
// and directories), or "" when the lab has none.
func (l *Lab) Export() string { return l.comp.Export() }

// ReadVolumeFile reads a file of a volume of the lab's CSI drivers from
// the storage host's export path (the machine's file system), with the
// nodes whose kubelet root the volume's mounts lie under.
func (l *Lab) ReadVolumeFile(ctx context.Context, volumeHandle, file string) (lab.VolumeFile, error) {
	export := l.comp.Export()
	if export == "" {
		return lab.VolumeFile{}, lab.Unsupported(l.Info().Kind, "reading a volume", fmt.Sprintf("lab %s has no host with the storage role", l.cfg.Name))
	}
	f, err := csidriver.ReadVolumeFile(ctx, csidriver.Store{Root: export}, volumeHandle, file)
	out := lab.VolumeFile{Path: f.Path, Data: f.Data, MountedOn: l.mountHosts(f.Mounts)}
	if errors.Is(err, csidriver.ErrNoSuchFile) {
		err = fmt.Errorf("%w: %w", lab.ErrNoSuchFile, err)
	}
	return out, err
}

// mountHosts names the hosts whose disks hold mounts (a mount under no
// host's disk is named by its path), each once.
func (l *Lab) mountHosts(mounts []string) []string {
	var out []string
	for _, m := range mounts {
		host := m
		for _, h := range l.cfg.Hosts {
			if strings.HasPrefix(m, l.dirs.Data(h.Name)+string(filepath.Separator)) {
				host = h.Name
			}
		}
		if !slices.Contains(out, host) {
			out = append(out, host)
		}
	}
	return out
}

// CheckVolumeFilesystem checks a block volume's file system on a copy of
// its image with the journal replayed (csidriver.CheckFilesystem).
func (l *Lab) CheckVolumeFilesystem(ctx context.Context, volumeHandle string) (lab.VolumeFilesystem, error) {
	export := l.comp.Export()
	if export == "" {
		return lab.VolumeFilesystem{}, lab.Unsupported(l.Info().Kind, "checking a volume's file system", fmt.Sprintf("lab %s has no host with the storage role", l.cfg.Name))
	}
	c, err := csidriver.CheckFilesystem(ctx, csidriver.Store{Root: export}, volumeHandle)
	if errors.Is(err, csidriver.ErrNoFilesystem) {
		return lab.VolumeFilesystem{}, lab.Unsupported(l.Info().Kind, "checking a volume's file system", err.Error())
	}
	return lab.VolumeFilesystem{Image: c.Image, ExitCode: c.ExitCode, Output: c.Output, MountedOn: l.mountHosts(c.Mounts)}, err
}

// KubeletRootDir is the host's kubelet's --root-dir, under which its
// pods' volumes are mounted (a static lab file that describes this lab
// names it per host: hosts[].kubeletRootDir).
func (l *Lab) KubeletRootDir(host string) string { return l.comp.KubeletRoot(host) }

// OverwriteVolumeFile overwrites bytes of a directory volume's file in
// the storage host's export path (csidriver.OverwriteFile); a block
// volume's files are its file system's to place (lab.ErrUnsupported).
func (l *Lab) OverwriteVolumeFile(_ context.Context, volumeHandle, file string, offset int64, data []byte) ([]byte, error) {
	export := l.comp.Export()
	if export == "" {
		return nil, lab.Unsupported(l.Info().Kind, "writing a volume", fmt.Sprintf("lab %s has no host with the storage role", l.cfg.Name))
	}
	was, err := csidriver.OverwriteFile(csidriver.Store{Root: export}, volumeHandle, file, offset, data)
	switch {
	case errors.Is(err, csidriver.ErrBlockFile):
		return nil, lab.Unsupported(l.Info().Kind, "overwriting a block volume's file", err.Error())
	case errors.Is(err, csidriver.ErrNoSuchFile):
		return nil, fmt.Errorf("%w: %w", lab.ErrNoSuchFile, err)
	}
	return was, err
}

// DamageVolumeFilesystem breaks a block volume's file system metadata
// while nothing mounts it (csidriver.DamageFilesystem).
func (l *Lab) DamageVolumeFilesystem(ctx context.Context, volumeHandle string) (string, error) {
	export := l.comp.Export()
	if export == "" {
		return "", lab.Unsupported(l.Info().Kind, "damaging a volume's file system", fmt.Sprintf("lab %s has no host with the storage role", l.cfg.Name))
	}
	what, err := csidriver.DamageFilesystem(ctx, csidriver.Store{Root: export}, volumeHandle)
	switch {
	case errors.Is(err, csidriver.ErrNoFilesystem):
		return "", lab.Unsupported(l.Info().Kind, "damaging a volume's file system", err.Error())
	case errors.Is(err, csidriver.ErrMounted):
		return "", fmt.Errorf("%w: %w", lab.ErrVolumeMounted, err)
	}
	return what, err
}
