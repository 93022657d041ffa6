package lab

import "context"

// FilesystemChecker is a lab with storage that can check a block
// volume's file system where its backing data lives (paper 3's
// storage-integrity).
type FilesystemChecker interface {
	// CheckVolumeFilesystem runs e2fsck -fn (checker.FilesystemCommand)
	// on the file system of the block volume a CSI volume handle names,
	// as the next mount would find it, with the hosts that had the
	// volume mounted when the check began. An e2fsck that ran is a
	// result whatever its exit status; an error wrapping ErrUnsupported
	// where the volume has no file system of its own to check.
	CheckVolumeFilesystem(ctx context.Context, volumeHandle string) (VolumeFilesystem, error)
}

// VolumeFilesystem is one check of a volume's file system.
type VolumeFilesystem struct {
	// Image names what was checked, on the storage host.
	Image    string
	ExitCode int
	Output   string
	// MountedOn names the hosts that had the volume mounted when the
	// check began (each once); empty when nothing mounted it.
	MountedOn []string
}
