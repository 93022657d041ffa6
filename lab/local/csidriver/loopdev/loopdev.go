// Package loopdev makes and removes loop devices over image files with the
// kernel's loop ioctls (LOOP_CTL_GET_FREE on /dev/loop-control, then
// LOOP_CONFIGURE), and lists the loop devices over files under a path.
//
// The ioctls rather than losetup(8): LOOP_CONFIGURE binds the file and
// sets the flags in one call, so a device is never seen bound without
// autoclear; a free device taken by another process between
// LOOP_CTL_GET_FREE and LOOP_CONFIGURE shows as EBUSY and is retried with
// the next free one, rather than parsed out of a message; and detaching
// works on a descriptor the caller holds and has checked, so it can never
// detach a device that another process bound to the same number in the
// meantime (what `losetup -d /dev/loopN` by name could do).
//
// Every device Attach makes carries LO_FLAGS_AUTOCLEAR: the kernel detaches
// it when its last opener closes it. While it is mounted the file system
// holds it open; once unmounted, or if the process that made it dies before
// mounting it, it goes away by itself, so no crash can leave one behind.
package loopdev

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	controlPath = "/dev/loop-control"
	sysBlock    = "/sys/block"
	// attachTries bounds the retries when another process takes the free
	// device first.
	attachTries = 16
)

// Device is one loop device and the file behind it.
type Device struct {
	// Path is /dev/loopN.
	Path string
	// Number is N.
	Number int
	// BackingFile is the file the device reads and writes, as the kernel
	// names it (with " (deleted)" when it was removed).
	BackingFile string
	// Autoclear says whether the kernel detaches the device on its last
	// close.
	Autoclear bool
	// ReadOnly says whether the device refuses writes.
	ReadOnly bool
}

// Options controls Attach.
type Options struct {
	// ReadOnly binds the file read-only (the device refuses writes).
	ReadOnly bool
}

// Attached is a loop device Attach made, held open by the caller. Closing
// it without having mounted it detaches it (autoclear).
type Attached struct {
	Device
	f *os.File
}

// Close releases the caller's hold on the device: if nothing else holds
// it (no mount), the kernel detaches it.
func (a *Attached) Close() error { return a.f.Close() }

// Attach binds a new loop device to image and returns it open. The caller
// mounts it (the mount then holds it) and closes it.
func Attach(image string, o Options) (*Attached, error) {
	if !filepath.IsAbs(image) {
		return nil, fmt.Errorf("loop device over %q: the image path must be absolute", image)
	}
	flag := os.O_RDWR
	if o.ReadOnly {
		flag = os.O_RDONLY
	}
	img, err := os.OpenFile(image, flag|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("loop device over %s: %w", image, err)
	}
	defer img.Close()
	if fi, err := img.Stat(); err != nil {
		return nil, fmt.Errorf("loop device over %s: %w", image, err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("loop device over %s: not a regular file (%s)", image, fi.Mode().Type())
	}
	ctl, err := os.OpenFile(controlPath, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("loop device over %s: %w (is the loop module loaded?)", image, err)
	}
	defer ctl.Close()

	cfg := unix.LoopConfig{Fd: uint32(img.Fd())}
	cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
	if o.ReadOnly {
		cfg.Info.Flags |= unix.LO_FLAGS_READ_ONLY
	}
	copy(cfg.Info.File_name[:unix.LO_NAME_SIZE-1], image)

	var lastErr error
	for try := 0; try < attachTries; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("loop device over %s: LOOP_CTL_GET_FREE: %w", image, err)
		}
		path := "/dev/loop" + strconv.Itoa(n)
		dev, err := os.OpenFile(path, flag|unix.O_CLOEXEC, 0)
		if err != nil {
			// The kernel creates the node in devtmpfs; it can lag a
			// moment behind LOOP_CTL_GET_FREE.
			lastErr = fmt.Errorf("opening %s: %w", path, err)
			continue
		}
		if err := unix.IoctlLoopConfigure(int(dev.Fd()), &cfg); err != nil {
			dev.Close()
			if errors.Is(err, unix.EBUSY) {
				lastErr = fmt.Errorf("%s: taken by another process first", path)
				continue
			}
			return nil, fmt.Errorf("loop device over %s: LOOP_CONFIGURE on %s: %w", image, path, err)
		}
		return &Attached{
			Device: Device{Path: path, Number: n, BackingFile: image, Autoclear: true, ReadOnly: o.ReadOnly},
			f:      dev,
		}, nil
	}
	return nil, fmt.Errorf("loop device over %s: no free device after %d tries: %v", image, attachTries, lastErr)
}

// ErrNotBacked says a loop device is not bound to the file the caller
// named: it was detached, or is bound to something else.
var ErrNotBacked = errors.New("loop device is not bound to the image")

// Held is a loop device the caller opened and checked to be bound to an
// image. While it is held the kernel keeps the binding, so Detach acts on
// exactly the device that was checked.
type Held struct {
	Device
	f *os.File
}

// Hold opens device and checks that it is bound to image (the same file:
// device and inode numbers, not just the name). It returns ErrNotBacked
// (wrapped) when it is not.
func Hold(device, image string) (*Held, error) {
	want, err := os.Stat(image)
	if err != nil {
		return nil, fmt.Errorf("loop device %s: %w", device, err)
	}
	st, ok := want.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("loop device %s: no inode for %s", device, image)
	}
	n, err := number(device)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(device, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("loop device %s: %w", device, err)
	}
	info, err := unix.IoctlLoopGetStatus64(int(f.Fd()))
	if err != nil {
		f.Close()
		if errors.Is(err, unix.ENXIO) {
			return nil, fmt.Errorf("%s: %w (not bound to anything)", device, ErrNotBacked)
		}
		return nil, fmt.Errorf("loop device %s: LOOP_GET_STATUS64: %w", device, err)
	}
	if info.Inode != st.Ino || info.Device != uint64(st.Dev) {
		f.Close()
		return nil, fmt.Errorf("%s: %w %s (bound to inode %d on device %d, the image is inode %d on %d)",
			device, ErrNotBacked, image, info.Inode, info.Device, st.Ino, st.Dev)
	}
	d := Device{Path: device, Number: n, BackingFile: image,
		Autoclear: info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0, ReadOnly: info.Flags&unix.LO_FLAGS_READ_ONLY != 0}
	return &Held{Device: d, f: f}, nil
}

// Detach unbinds the held device from its file and releases it. If
// something else still holds the device open (a mount), the kernel
// detaches it at that holder's last close instead.
func (h *Held) Detach() error {
	err := unix.IoctlSetInt(int(h.f.Fd()), unix.LOOP_CLR_FD, 0)
	// The last close is what detaches a device marked for it.
	cerr := h.f.Close()
	if err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detaching %s: LOOP_CLR_FD: %w", h.Path, err)
	}
	if cerr != nil {
		return fmt.Errorf("detaching %s: %w", h.Path, cerr)
	}
	return nil
}

// Sync writes the device's dirty page cache (blocks written to the
// device and not yet to its file) to the file, and waits for it.
func (h *Held) Sync() error {
	if err := h.f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", h.Path, err)
	}
	return nil
}

// Release lets go of the device without detaching it.
func (h *Held) Release() error { return h.f.Close() }

func number(device string) (int, error) {
	rest, ok := strings.CutPrefix(device, "/dev/loop")
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a loop device path (/dev/loopN)", device)
	}
	return n, nil
}

// List returns the bound loop devices whose backing file is at or below
// any of the paths (each cleaned; a removed file still counts, by the
// name it had), read from sysfs.
func List(paths ...string) ([]Device, error) {
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return nil, fmt.Errorf("listing loop devices: %w", err)
	}
	var out []Device
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, "loop")
		n, err := strconv.Atoi(rest)
		if !ok || err != nil {
			continue
		}
		dir := filepath.Join(sysBlock, name, "loop")
		b, err := os.ReadFile(filepath.Join(dir, "backing_file"))
		if err != nil {
			continue // not bound (the loop directory exists only while bound)
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if !Under(backing, paths...) {
			continue
		}
		out = append(out, Device{
			Path:        "/dev/" + name,
			Number:      n,
			BackingFile: backing,
			Autoclear:   readFlag(filepath.Join(dir, "autoclear")),
			ReadOnly:    readFlag(filepath.Join(sysBlock, name, "ro")),
		})
	}
	return out, nil
}

func readFlag(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// Under says whether path p is one of dirs or lies below one.
func Under(p string, dirs ...string) bool {
	for _, pre := range dirs {
		pre = filepath.Clean(pre)
		if p == pre || strings.HasPrefix(p, strings.TrimSuffix(pre, "/")+"/") {
			return true
		}
	}
	return false
}

// IO is what a loop device has done, from its block-layer statistics
// (/sys/block/loopN/stat; the kernel's Documentation/block/stat.rst): the
// writes and discards it completed, and its requests in flight. Every
// byte a loop device puts in its backing file goes by a request, so two
// equal readings with nothing in flight prove the file was not written
// through the device between them.
type IO struct {
	Writes         uint64
	WriteSectors   uint64
	Discards       uint64
	DiscardSectors uint64
	InFlight       uint64
}

// Stat reads device's block-layer statistics.
func Stat(device string) (IO, error) {
	n, err := number(device)
	if err != nil {
		return IO{}, err
	}
	b, err := os.ReadFile(filepath.Join(sysBlock, "loop"+strconv.Itoa(n), "stat"))
	if err != nil {
		return IO{}, fmt.Errorf("statistics of %s: %w", device, err)
	}
	f := strings.Fields(string(b))
	// Fields 5, 7 and 9 (writes, write sectors, in flight) since the
	// first kernels with the file; 12 and 14 (discards, discard
	// sectors) since 4.18, missing before.
	if len(f) < 11 {
		return IO{}, fmt.Errorf("statistics of %s: %d field(s), want at least 11", device, len(f))
	}
	field := func(i int) (uint64, error) {
		if i >= len(f) {
			return 0, nil
		}
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("statistics of %s: field %d is %q: %w", device, i+1, f[i], err)
		}
		return v, nil
	}
	var io IO
	for _, x := range []struct {
		i   int
		dst *uint64
	}{{4, &io.Writes}, {6, &io.WriteSectors}, {8, &io.InFlight}, {11, &io.Discards}, {13, &io.DiscardSectors}} {
		if *x.dst, err = field(x.i); err != nil {
			return IO{}, err
		}
	}
	return io, nil
}
