package csidriver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// flagWords are the mount(8) words that are mount flags rather than file
// system options.
var flagWords = map[string]uintptr{
	"ro":          unix.MS_RDONLY,
	"rw":          0,
	"nosuid":      unix.MS_NOSUID,
	"nodev":       unix.MS_NODEV,
	"noexec":      unix.MS_NOEXEC,
	"sync":        unix.MS_SYNCHRONOUS,
	"dirsync":     unix.MS_DIRSYNC,
	"noatime":     unix.MS_NOATIME,
	"nodiratime":  unix.MS_NODIRATIME,
	"relatime":    unix.MS_RELATIME,
	"strictatime": unix.MS_STRICTATIME,
	"lazytime":    unix.MS_LAZYTIME,
}

// refusedWords change what a mount is, which the driver decides.
var refusedWords = map[string]bool{
	"bind": true, "rbind": true, "remount": true, "move": true, "loop": true,
	"shared": true, "rshared": true, "slave": true, "rslave": true, "private": true, "rprivate": true,
	"unbindable": true, "runbindable": true,
}

// mountFlags splits a capability's mount flags (mount(8) words, each may
// hold several separated by commas) into flags and file system options.
func mountFlags(words []string) (uintptr, string, error) {
	var flags uintptr
	var data []string
	for _, w := range words {
		for _, f := range strings.Split(w, ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				return 0, "", fmt.Errorf("mount flags %q: an empty flag", words)
			}
			if refusedWords[f] {
				return 0, "", fmt.Errorf("mount flag %q: the driver decides how the volume is mounted", f)
			}
			if v, ok := flagWords[f]; ok {
				flags |= v
				continue
			}
			data = append(data, f)
		}
	}
	return flags, strings.Join(data, ","), nil
}

// mountAt is the topmost mount at path, or nil.
func mountAt(path string) (*mountinfo.Info, error) {
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	if len(ms) == 0 {
		return nil, nil
	}
	return ms[len(ms)-1], nil
}

// mountReadOnly says whether a mount is read-only.
func mountReadOnly(m *mountinfo.Info) bool {
	for _, o := range strings.Split(m.Options, ",") {
		if o == "ro" {
			return true
		}
	}
	return false
}

// sameFile says whether two paths name the same inode (for a mount point,
// the root of what is mounted there).
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// bindMount mounts src at dst, then applies flags (read-only, nosuid, …)
// by a remount: a bind mount takes no flags on its first call.
func bindMount(src, dst string, flags uintptr) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s at %s: %w", src, dst, err)
	}
	if flags != 0 {
		if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|flags, ""); err != nil {
			err = fmt.Errorf("remounting %s with its flags: %w", dst, err)
			if uerr := unix.Unmount(dst, 0); uerr != nil {
				err = fmt.Errorf("%w; and undoing the bind mount: %v", err, uerr)
			}
			return err
		}
	}
	return nil
}

// unmountAll unmounts every mount stacked at path.
func unmountAll(path string) error {
	for range 16 {
		m, err := mountAt(path)
		if err != nil {
			return err
		}
		if m == nil {
			return nil
		}
		if err := unix.Unmount(path, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				return nil // no longer a mount point
			}
			return fmt.Errorf("unmounting %s: %w", path, err)
		}
	}
	return fmt.Errorf("unmounting %s: still mounted after 16 unmounts", path)
}

// checkPath refuses a path that is empty, relative or not clean.
func checkPath(what, p string) error {
	if p == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if !filepath.IsAbs(p) {
		return fmt.Errorf("%s %q is not absolute", what, p)
	}
	if filepath.Clean(p) != p {
		return fmt.Errorf("%s %q is not a clean path (want %q)", what, p, filepath.Clean(p))
	}
	return nil
}
