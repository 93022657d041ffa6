// Package roottest is what the driver's root tests (build tag root) share:
// a temporary directory per test whose loop devices and mounts are undone
// when the test ends, however it ends, and the check that none are left.
// It touches only loop devices over files under its own directories and
// mounts under them.
package roottest

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
)

var (
	baseOnce sync.Once
	base     string
	baseErr  error
)

// Base is the directory every test directory of this process lies
// under (made on first use).
func Base() (string, error) {
	baseOnce.Do(func() {
		// Short: sockets under it must fit a socket address.
		base, baseErr = os.MkdirTemp("", "flcsi")
	})
	return base, baseErr
}

// Dir skips the test unless it runs as root, and returns a new directory
// for it. When the test ends, every mount under the directory is
// unmounted, every loop device over a file under it detached, and the
// directory removed; the test fails if any of them is left.
func Dir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes loop devices and mounts")
	}
	b, err := Base()
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp(b, "t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Undo(d); err != nil {
			t.Errorf("cleaning up %s: %v", d, err)
		}
		if left, err := Left(d); err != nil {
			t.Errorf("checking %s: %v", d, err)
		} else if left != "" {
			t.Errorf("left behind under %s: %s", d, left)
		}
		if err := os.RemoveAll(d); err != nil {
			t.Errorf("removing %s: %v", d, err)
		}
	})
	return d
}

// mountsUnder are the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	ms, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	sort.Slice(out, func(i, j int) bool { return strings.Count(out[i], "/") > strings.Count(out[j], "/") })
	return out, nil
}

// Undo unmounts everything under dir and detaches every loop device over
// a file under it.
func Undo(dir string) error {
	var errs []error
	for range 8 {
		mps, err := mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			break
		}
		for _, mp := range mps {
			if err := unix.Unmount(mp, 0); err != nil && !errors.Is(err, unix.EINVAL) {
				// Busy: detach it now, the kernel lets go once it can.
				if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
					errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
				}
			}
		}
	}
	devs, err := loopdev.List(dir)
	if err != nil {
		return err
	}
	for _, d := range devs {
		h, err := loopdev.Hold(d.Path, d.BackingFile)
		if errors.Is(err, loopdev.ErrNotBacked) {
			continue // detached meanwhile (autoclear)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := h.Detach(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Left says what is left under dir, as `losetup -a` and
// /proc/self/mountinfo show it ("" when nothing): the check is made with
// the system's own tools, not with the code under test.
func Left(dir string) (string, error) {
	var left []string
	out, err := exec.Command("losetup", "-a").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup -a: %v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, dir) {
			left = append(left, "loop device: "+line)
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && (fields[4] == dir || strings.HasPrefix(fields[4], filepath.Clean(dir)+"/")) {
			left = append(left, "mount: "+sc.Text())
		}
	}
	return strings.Join(left, "; "), sc.Err()
}

// Finish is for TestMain after the tests ran: it says what any test left
// under Base (undoing it), and removes Base.
func Finish() error {
	if base == "" {
		return nil
	}
	left, err := Left(base)
	if err == nil && left != "" {
		err = fmt.Errorf("left behind under %s: %s", base, left)
	}
	if uerr := Undo(base); uerr != nil {
		err = errors.Join(err, uerr)
	}
	return errors.Join(err, os.RemoveAll(base))
}
