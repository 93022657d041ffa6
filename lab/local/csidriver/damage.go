package csidriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ErrBlockFile is wrapped when a file of a block volume is to be written
// from outside: where its bytes lie is the volume's file system's to say.
var ErrBlockFile = errors.New("a block volume's files are its file system's to place")

// OverwriteFile writes data over the bytes of the file name (a path
// inside directory volume id) from offset, never past the file's end, and
// returns the bytes it overwrote, for the positive controls of the checks
// that read the file. The file is written where the shared directory
// holds it, so every node's mount of the volume sees the write at once
// (one file system, one page cache), mounted or not. A block volume's
// file is not written (ErrBlockFile).
func OverwriteFile(st Store, id, name string, offset int64, data []byte) ([]byte, error) {
	kind, err := ParseVolumeID(id)
	if err != nil {
		return nil, err
	}
	if kind != KindDirectory {
		return nil, fmt.Errorf("volume %s is a %s volume: %w", id, kind, ErrBlockFile)
	}
	clean := path.Clean("/" + name)
	if clean == "/" {
		return nil, fmt.Errorf("file %q: want the path of a file inside the volume", name)
	}
	if _, err := st.Get(id); err != nil {
		return nil, err
	}
	p := filepath.Join(st.DataDir(id), filepath.FromSlash(clean))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, ErrNoSuchFile)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if offset < 0 || len(data) == 0 || offset+int64(len(data)) > info.Size() {
		return nil, fmt.Errorf("overwriting %d byte(s) at offset %d of %s, a file of %d bytes: only bytes it holds are overwritten", len(data), offset, p, info.Size())
	}
	was := make([]byte, len(data))
	if _, err := f.ReadAt(was, offset); err != nil {
		return nil, fmt.Errorf("reading %s at %d: %w", p, offset, err)
	}
	if _, err := f.WriteAt(data, offset); err != nil {
		return nil, fmt.Errorf("writing %s at %d: %w", p, offset, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("syncing %s: %w", p, err)
	}
	return was, nil
}

// rootInode is the root directory's inode on ext2/3/4.
const rootInode = "<2>"

// linksLine is debugfs's stat of an inode's link count, "Links: 3".
var linksLine = regexp.MustCompile(`(?m)\bLinks: (\d+)`)

// DamageFilesystem breaks the metadata of block volume id's file system
// while no node mounts it, for the positive control of the file system
// check: with debugfs -w it sets the root directory's link count six above
// what it is, which e2fsck's pass 4 finds ("Inode 2 ref count is …,
// should be …") and no mount repairs. The inode's checksum is written
// anew with it (debugfs writes inodes through libext2fs), so the damage is
// the count and only the count. An image whose journal needs recovery (a
// mount that did not end cleanly) is refused: what the next mount replays
// could write over the damage. It returns what it did.
func DamageFilesystem(ctx context.Context, st Store, id string) (string, error) {
	kind, err := ParseVolumeID(id)
	if err != nil {
		return "", err
	}
	if kind != KindBlock {
		return "", fmt.Errorf("volume %s is a %s volume: %w (only a block volume has)", id, kind, ErrNoFilesystem)
	}
	if _, err := st.Get(id); err != nil {
		return "", err
	}
	_, by, err := volumeMounts(st)
	if err != nil {
		return "", err
	}
	if m := append([]string(nil), by[id]...); len(m) > 0 {
		sort.Strings(m)
		return "", fmt.Errorf("volume %s not damaged: %w at %s", id, ErrMounted, strings.Join(m, ", "))
	}
	image := st.ImagePath(id)
	features, err := debugfs(ctx, image, false, "features")
	if err != nil {
		return "", err
	}
	if strings.Contains(features, "needs_recovery") {
		return "", fmt.Errorf("the file system of %s needs recovery (its last mount did not end cleanly): not damaged, since the journal's replay could write over it", image)
	}
	stat, err := debugfs(ctx, image, false, "stat "+rootInode)
	if err != nil {
		return "", err
	}
	m := linksLine.FindStringSubmatch(stat)
	if m == nil {
		return "", fmt.Errorf("debugfs's stat of the root directory of %s gives no link count: %s", image, firstLine(stat))
	}
	was, err := strconv.Atoi(m[1])
	if err != nil {
		return "", fmt.Errorf("the root directory's link count %q: %w", m[1], err)
	}
	set := was + 6
	if _, err := debugfs(ctx, image, true, fmt.Sprintf("set_inode_field %s links_count %d", rootInode, set)); err != nil {
		return "", err
	}
	after, err := debugfs(ctx, image, false, "stat "+rootInode)
	if err != nil {
		return "", err
	}
	if m := linksLine.FindStringSubmatch(after); m == nil || m[1] != strconv.Itoa(set) {
		return "", fmt.Errorf("set the root directory's link count of %s to %d, and it reads back as %q", image, set, firstLine(after))
	}
	return fmt.Sprintf("the root directory's link count (inode 2) of %s set from %d to %d with debugfs -w, nothing mounting it", image, was, set), nil
}

// debugfs runs one debugfs request on image (-w to write) and returns its
// output. debugfs reports a failed request on stderr and exits 0, so an
// output line naming the request's command is its error.
func debugfs(ctx context.Context, image string, write bool, request string) (string, error) {
	args := []string{"-R", request, image}
	if write {
		args = append([]string{"-w"}, args...)
	}
	cmd := exec.CommandContext(ctx, "debugfs", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		return text, fmt.Errorf("debugfs %s on %s: %w: %s", request, image, err, strings.TrimSpace(text))
	}
	// An error is "<command>: <message>" (set_inode_field: Filesystem
	// opened read/only).
	name := strings.Fields(request)[0] + ": "
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, name) {
			return text, fmt.Errorf("debugfs %s on %s: %s", request, image, strings.TrimSpace(l))
		}
	}
	return text, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
