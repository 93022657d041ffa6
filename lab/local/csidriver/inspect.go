package csidriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
)

// VolumeFile is one file of a volume as its storage holds it, and where
// the volume was mounted when the file was read.
type VolumeFile struct {
	// Path names what was read: the file in a directory volume, or
	// "<image>:<file>" in a block volume's image.
	Path string
	Data []byte
	// Mounts are the volume's mount points (staged and published, on
	// any node) when the read began; empty when nothing mounted it.
	Mounts []string
}

// ErrNoSuchFile is wrapped when the volume holds no file of the name.
var ErrNoSuchFile = errors.New("no such file in the volume")

// ErrNoFilesystem is wrapped when a volume has no file system of its own
// to check (a directory volume's is the storage host's).
var ErrNoFilesystem = errors.New("the volume has no file system of its own")

// ErrMounted is wrapped when a volume's file system is not checked
// because some node has it mounted.
var ErrMounted = errors.New("the volume is mounted")

// ErrImageChanging is wrapped when a block volume's image was written
// through a loop device during every copy made of it: any of the copies
// could be torn (some blocks from before a write, some from after), which
// no reader of the file could tell from what two writers leave, so none
// is read.
var ErrImageChanging = errors.New("the image was written while it was copied")

// ReadVolumeFile reads the file name (a path inside the volume) of volume
// id as the storage holds it: a directory volume's file as the shared
// directory has it; a block volume's as its image would show it to the
// next mount: the image is copied, its journal replayed on the copy
// (e2fsck -E journal_only, as a mount would), and the file dumped with
// debugfs, which reads ext4 without mounting it. What a node's page cache
// still holds back is not there, as it is not on a real disk. The mounts
// are listed first: a writer may append while the file is read. A copy of
// an image that a node's loop device wrote to while it was made could be
// torn, so only a copy no loop device wrote to is read (quietCopy), and
// an image written during every try is an error wrapping
// ErrImageChanging.
func ReadVolumeFile(ctx context.Context, st Store, id, name string) (VolumeFile, error) {
	kind, err := ParseVolumeID(id)
	if err != nil {
		return VolumeFile{}, err
	}
	clean := path.Clean("/" + name)
	if clean == "/" {
		return VolumeFile{}, fmt.Errorf("file %q: want the path of a file inside the volume", name)
	}
	if _, err := st.Get(id); err != nil {
		return VolumeFile{}, err
	}
	_, by, err := volumeMounts(st)
	if err != nil {
		return VolumeFile{}, err
	}
	f := VolumeFile{Mounts: append([]string(nil), by[id]...)}
	sort.Strings(f.Mounts)
	switch kind {
	case KindDirectory:
		f.Path = filepath.Join(st.DataDir(id), filepath.FromSlash(clean))
		f.Data, err = os.ReadFile(f.Path)
		if errors.Is(err, os.ErrNotExist) {
			return f, fmt.Errorf("%s: %w", f.Path, ErrNoSuchFile)
		}
		return f, err
	default:
		f.Path = st.ImagePath(id) + ":" + clean
		f.Data, err = imageCat(ctx, st.ImagePath(id), clean)
		return f, err
	}
}

// imageCat reads file from the ext4 image as a mount would find it: on a
// sparse copy, the journal replayed (a file fsynced a moment ago may
// exist in the journal only), then dumped with debugfs. debugfs reports a
// missing file on stderr and exits 0, so the dump's absence is what says
// the file is not there. A journal that holds data while the superblock's
// needs_recovery flag is clear (two nodes' mounts wrote over each other's
// superblock) is not replayed: the kernel's mount discards such a journal
// (fs/ext4/super.c, ext4_load_journal wipes it when the flag is clear), so
// the next mount sees the blocks as they are.
// journalNotRecovered is e2fsck's word for a journal with data under a
// clear needs_recovery flag (e2fsck/problem.c), in the C locale the
// command runs in.
const journalNotRecovered = "needs_recovery flag is clear, but journal has data"

func imageCat(ctx context.Context, image, file string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "faultline-volume-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cp, err := replayedCopy(ctx, image, dir)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "file")
	msg, err := exec.CommandContext(ctx, "debugfs", "-R", fmt.Sprintf("dump %q %q", file, out), cp).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("debugfs on a copy of %s: %w: %s", image, err, strings.TrimSpace(string(msg)))
	}
	data, err := os.ReadFile(out)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s:%s: %w (debugfs: %s)", image, file, ErrNoSuchFile, strings.TrimSpace(string(msg)))
	}
	return data, err
}

// The tries at a copy of an image no loop device writes to. A node's
// writes reach its loop device in bursts: the ledger's writer appends
// every 100 ms and syncs each append (its data, then the journal's
// commit), the kvdb's operates every 100 ms, and the journal's own commit
// and the page cache's writeback come every 5 s; between bursts the image
// lies still for most of 100 ms. A copy of a volume's image (sparse: its
// metadata, journal and files, a few MiB from the page cache) takes
// milliseconds. Eight tries 25 ms apart span two of the writers' 100 ms
// cycles, so a copy that finds no quiet stretch in them is one under
// writes without pause.
const (
	imageCopyTries = 8
	imageCopyPause = 25 * time.Millisecond
)

// quietCopy copies image, sparse, to cp, and makes sure no loop device
// wrote to the image while it did: it reads the block-layer statistics of
// every loop device bound to the image before and after the copy, and
// keeps the copy only when the devices are the same, each with nothing in
// flight and the same writes and discards completed (loopdev.IO). Those
// devices are the image's only writers while any node has it staged, and
// every byte they write goes by a request those statistics count, so such
// a copy is the image at one moment. A copy with writes during it is made
// again, imageCopyTries times at most; then the error wraps
// ErrImageChanging.
func quietCopy(ctx context.Context, image, cp string) error {
	var wrote string
	for try := 1; ; try++ {
		before, err := imageIO(image)
		if err != nil {
			return err
		}
		if msg, err := exec.CommandContext(ctx, "cp", "--sparse=always", image, cp).CombinedOutput(); err != nil {
			return fmt.Errorf("copying %s: %w: %s", image, err, strings.TrimSpace(string(msg)))
		}
		after, err := imageIO(image)
		if err != nil {
			return err
		}
		if wrote = ioDuring(before, after); wrote == "" {
			return nil
		}
		if try == imageCopyTries {
			return fmt.Errorf("copying %s: %w, in each of %d tries %s apart (last: %s)", image, ErrImageChanging, imageCopyTries, imageCopyPause, wrote)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("copying %s: %w (%s)", image, ctx.Err(), wrote)
		case <-time.After(imageCopyPause):
		}
	}
}

// imageIO is, by device, the statistics of the loop devices bound to
// image.
func imageIO(image string) (map[string]loopdev.IO, error) {
	devs, err := loopdev.List(image)
	if err != nil {
		return nil, err
	}
	out := map[string]loopdev.IO{}
	for _, d := range devs {
		io, err := loopdev.Stat(d.Path)
		if err != nil {
			return nil, err
		}
		out[d.Path] = io
	}
	return out, nil
}

// ioDuring says what wrote to the image between two readings of its loop
// devices, "" when nothing did.
func ioDuring(before, after map[string]loopdev.IO) string {
	var out []string
	for dev, a := range after {
		b, ok := before[dev]
		switch {
		case !ok:
			out = append(out, dev+" was bound to it")
		case a.InFlight > 0 || b.InFlight > 0:
			out = append(out, dev+" had requests in flight")
		case a != b:
			out = append(out, fmt.Sprintf("%s completed %d write(s) and %d discard(s)", dev, a.Writes-b.Writes, a.Discards-b.Discards))
		}
	}
	for dev := range before {
		if _, ok := after[dev]; !ok {
			out = append(out, dev+" was unbound")
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// replayedCopy copies image, sparse, into dir at a moment no loop device
// writes it (quietCopy) and replays the copy's journal as the next mount
// would (see imageCat), and returns the copy.
func replayedCopy(ctx context.Context, image, dir string) (string, error) {
	cp := filepath.Join(dir, "image")
	if err := quietCopy(ctx, image, cp); err != nil {
		return "", err
	}
	// Exit 1 is "file system errors corrected": the journal replayed.
	replay := exec.CommandContext(ctx, "e2fsck", "-E", "journal_only", "-p", cp)
	replay.Env = append(os.Environ(), "LC_ALL=C")
	if msg, err := replay.CombinedOutput(); err != nil {
		var ee *exec.ExitError
		ok := errors.As(err, &ee) && (ee.ExitCode() == 1 || bytes.Contains(msg, []byte(journalNotRecovered)))
		if !ok {
			return "", fmt.Errorf("replaying the journal of a copy of %s: %w: %s", image, err, strings.TrimSpace(string(msg)))
		}
	}
	return cp, nil
}

// FilesystemCheck is e2fsck's check of a block volume's file system.
type FilesystemCheck struct {
	// Image names what was checked: a copy of the volume's image with
	// its journal replayed.
	Image string
	// ExitCode and Output are e2fsck's (checker.FilesystemCommand).
	ExitCode int
	Output   string
	// Mounts are the volume's mount points when the check began.
	Mounts []string
}

// FilesystemCommand is the check CheckFilesystem runs on an image file:
// a forced (-f), read-only (-n) e2fsck, kits/storeddata/checker's
// FilesystemCommand (which parses its output; the lab layer cannot import
// the framework, so checker's tests hold the two to one command).
func FilesystemCommand(image string) []string { return []string{"e2fsck", "-fn", image} }

// CheckFilesystem runs FilesystemCommand's e2fsck -fn on a copy
// of block volume id's image with its journal replayed, so that it checks
// the file system the next mount would find, not transactions a clean
// mount would have replayed. The mounts are listed first: a check of a
// file system some node still has mounted proves nothing (another page
// cache may still reach the image), so none is run then and the error
// wraps ErrMounted. An e2fsck that ran and exited non-zero is a result,
// not an error.
func CheckFilesystem(ctx context.Context, st Store, id string) (FilesystemCheck, error) {
	kind, err := ParseVolumeID(id)
	if err != nil {
		return FilesystemCheck{}, err
	}
	if kind != KindBlock {
		return FilesystemCheck{}, fmt.Errorf("volume %s is a %s volume: %w (only a block volume has)", id, kind, ErrNoFilesystem)
	}
	if _, err := st.Get(id); err != nil {
		return FilesystemCheck{}, err
	}
	_, by, err := volumeMounts(st)
	if err != nil {
		return FilesystemCheck{}, err
	}
	c := FilesystemCheck{Mounts: append([]string(nil), by[id]...)}
	sort.Strings(c.Mounts)
	if len(c.Mounts) > 0 {
		return c, fmt.Errorf("volume %s not checked: %w at %s", id, ErrMounted, strings.Join(c.Mounts, ", "))
	}
	dir, err := os.MkdirTemp("", "faultline-volume-")
	if err != nil {
		return c, err
	}
	defer os.RemoveAll(dir)
	cp, err := replayedCopy(ctx, st.ImagePath(id), dir)
	if err != nil {
		return c, err
	}
	c.Image = st.ImagePath(id) + " (a copy, its journal replayed)"
	args := FilesystemCommand(cp)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	c.Output = strings.ReplaceAll(string(out), cp, st.ImagePath(id))
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() > 0 && ctx.Err() == nil:
		c.ExitCode = ee.ExitCode()
	default:
		return c, fmt.Errorf("running e2fsck on a copy of %s: %w", st.ImagePath(id), err)
	}
	return c, nil
}
