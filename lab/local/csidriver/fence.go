package csidriver

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
)

// ext4IocShutdown is EXT4_IOC_SHUTDOWN, _IOR('X', 125, __u32) in
// fs/ext4/ext4.h, in the generic ioctl encoding (amd64, arm64, riscv64):
// direction read (2) in bits 30–31, the argument's size (4) in bits
// 16–29, the type 'X' in bits 8–15 and the number 125 in bits 0–7.
const ext4IocShutdown = 2<<30 | 4<<16 | 'X'<<8 | 125 // 0x8004587d

// ext4GoingFlagsNoLogFlush is EXT4_GOING_FLAGS_NOLOGFLUSH: shut the file
// system down without writing back its dirty pages or committing its
// journal.
const ext4GoingFlagsNoLogFlush = 2

// fenceNode shuts down every ext4 mount, on node, of a loop device bound
// to volume id's image, so that the node's reads and writes of it fail
// (EIO) and nothing more of the node's reaches the image: its dirty
// pages and its uncommitted journal are dropped, as a host loses its
// unwritten cache when a storage target revokes its access. Then the
// loop device is synced, so that what the journal had committed is in
// place before another node can attach. The mounts
// are the node's when they lie under the mount root its driver recorded;
// a loop device is the volume's when it is bound to the image's device
// and inode. It returns the mount points shut down. A node that never
// reached the storage has nothing mounted; one that recorded no mount
// root cannot be told from the others, which is an error.
func fenceNode(st Store, id, node string) ([]string, error) {
	root, err := st.NodeMountRoot(node)
	if errors.Is(err, ErrNodeUnknown) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if root == "" {
		return nil, fmt.Errorf("node %s recorded no mount root: its mounts cannot be told from other nodes'", node)
	}
	image := st.ImagePath(id)
	// Checked first, so that a missing file below is a loop device gone.
	if _, err := os.Stat(image); err != nil {
		return nil, fmt.Errorf("volume %s: %w", id, err)
	}
	ms, err := mountinfo.GetMounts(func(i *mountinfo.Info) (bool, bool) {
		ours := i.FSType == FSTypeExt4 && strings.HasPrefix(i.Source, "/dev/loop") && loopdev.Under(i.Mountpoint, root)
		return !ours, false
	})
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	var done []string
	for _, m := range ms {
		h, err := loopdev.Hold(m.Source, image)
		if errors.Is(err, loopdev.ErrNotBacked) || errors.Is(err, os.ErrNotExist) {
			continue // another volume's, or gone since the table was read
		}
		if err != nil {
			return done, fmt.Errorf("the mount at %s: %w", m.Mountpoint, err)
		}
		err = shutdownExt4(m)
		// A read-only device holds nothing dirty (and refuses the
		// flush).
		if err == nil && !h.ReadOnly {
			// Metadata the journal had committed and not yet written
			// to its place is dirty in the device's own cache; the
			// kernel would write it there later (by writeback, or the
			// journal's checkpoint at unmount), maybe over what the
			// next node wrote. It goes now, while the volume is still
			// published to this node: the same blocks the next
			// mount's journal replay would write.
			if err = h.Sync(); err != nil {
				err = fmt.Errorf("the mount at %s, shut down: %w", m.Mountpoint, err)
			}
		}
		h.Release()
		if err != nil {
			return done, err
		}
		done = append(done, m.Mountpoint)
	}
	return done, nil
}

// shutdownExt4 shuts down the ext4 file system mounted at m, by the
// ioctl on its root directory. It checks that the directory opened is the
// root of m's file system (the mount may have gone since the table was
// read, or something be mounted over it). A file system already shut
// down answers with success.
func shutdownExt4(m *mountinfo.Info) error {
	fd, err := unix.Open(m.Mountpoint, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("shutting down the ext4 mount at %s: opening it: %w", m.Mountpoint, err)
	}
	defer unix.Close(fd)
	var s unix.Stat_t
	if err := unix.Fstat(fd, &s); err != nil {
		return fmt.Errorf("shutting down the ext4 mount at %s: %w", m.Mountpoint, err)
	}
	if s.Dev != unix.Mkdev(uint32(m.Major), uint32(m.Minor)) {
		return fmt.Errorf("shutting down the ext4 mount at %s: the path reaches file system %d:%d, not %s's %d:%d (something is mounted over it, or it went)",
			m.Mountpoint, unix.Major(s.Dev), unix.Minor(s.Dev), m.Source, m.Major, m.Minor)
	}
	if err := unix.IoctlSetPointerInt(fd, ext4IocShutdown, ext4GoingFlagsNoLogFlush); err != nil {
		return fmt.Errorf("shutting down the ext4 mount at %s (%s): EXT4_IOC_SHUTDOWN: %w", m.Mountpoint, m.Source, err)
	}
	return nil
}

// shutDown says whether the mount table shows the file system mounted
// at m shut down (ext4 lists "shutdown" among its super options then).
func shutDown(m *mountinfo.Info) bool {
	for _, o := range strings.Split(m.VFSOptions, ",") {
		if o == "shutdown" {
			return true
		}
	}
	return false
}
