package lab

import (
	"context"
	"errors"
)

// FilesystemChecker is a lab with storage that can check a block
// volume's file system where its backing data lives (the stored-data
// kit's storage-integrity).
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

// VolumeDamager is a lab whose storage can be damaged on purpose where it
// holds a volume's data, for the positive controls of the checks that
// read it (the stored-data kit's storage-integrity and single-history): damage no
// writer made, made through the storage rather than through a node.
type VolumeDamager interface {
	// OverwriteVolumeFile writes data over the bytes of file (a path
	// inside the volume a CSI volume handle names) from offset, as the
	// storage holds them, never past the file's end, and returns the
	// bytes it overwrote. A volume whose file the storage holds as a file
	// (a shared directory) is written whether or not nodes mount it, the
	// write reaching every mount as any node's would; an error wrapping
	// ErrUnsupported where the volume's files are its own file system's to
	// place (a block volume), ErrNoSuchFile where it holds no such file.
	OverwriteVolumeFile(ctx context.Context, volumeHandle, file string, offset int64, data []byte) ([]byte, error)
	// DamageVolumeFilesystem breaks the metadata of a block volume's file
	// system while no host mounts it, in a way its check finds and no
	// mount repairs, and says what it did; an error wrapping
	// ErrVolumeMounted while a host mounts it, ErrUnsupported for a volume
	// with no file system of its own.
	DamageVolumeFilesystem(ctx context.Context, volumeHandle string) (string, error)
}

// ErrVolumeMounted is wrapped when a volume is not touched because a host
// mounts it.
var ErrVolumeMounted = errors.New("the volume is mounted")
