package checker

import (
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab/local/csidriver"
)

// ext4Image makes a small ext4 file system in a regular file with
// mkfs.ext4 (no root, no loop device), with 1 KiB blocks so that the
// layout read below is fixed.
func ext4Image(t *testing.T) string {
	t.Helper()
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		if mkfs, err = exec.LookPath("/usr/sbin/mkfs.ext4"); err != nil {
			t.Skip("mkfs.ext4 not installed (e2fsprogs)")
		}
	}
	if _, err := e2fsckPath(); err != nil {
		t.Skip(err)
	}
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "kv.db"), []byte(strings.Repeat("data", 4096)), 0o644)
	img := filepath.Join(t.TempDir(), "volume.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 8<<20); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", "-b", "1024", "-d", src, img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	return img
}

// overwrite writes p at offset off of the file, as another node's page
// cache writes its stale page over the disk.
func overwrite(t *testing.T, path string, off int64, p []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(p, off); err != nil {
		t.Fatal(err)
	}
}

func TestCheckFilesystemImage(t *testing.T) {
	img := ext4Image(t)
	ctx := context.Background()
	r, err := CheckFilesystemImage(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() || r.ExitCode != 0 || !strings.HasSuffix(r.String(), ": clean") {
		t.Fatalf("a fresh file system: %s\n%s", r, r.Output)
	}

	// The first block of the inode table (the root directory's inode
	// among them) overwritten: with 1 KiB blocks the group descriptor
	// table is block 2, and its first descriptor's bytes 8-11 are the
	// inode table's block.
	f, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	table := int64(binary.LittleEndian.Uint32(f[2048+8:]))
	overwrite(t, img, table*1024, []byte(strings.Repeat("\x5a", 1024)))
	r, err = CheckFilesystemImage(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Damaged || r.Clean() || r.ExitCode&fsckUncorrected == 0 || len(r.Problems) == 0 {
		t.Fatalf("an inode table overwritten: %s\n%s", r, r.Output)
	}
	t.Logf("%s", r)

	// The superblock overwritten: no file system e2fsck can read.
	img2 := ext4Image(t)
	overwrite(t, img2, 1024, make([]byte, 1024))
	if r, err := CheckFilesystemImage(ctx, img2); err != nil || !r.Damaged {
		t.Fatalf("no superblock: %s (%v)\n%s", r, err, r.Output)
	}

	// No such image: nothing is said of any file system.
	if r, err := CheckFilesystemImage(ctx, filepath.Join(t.TempDir(), "absent.img")); err != nil || !r.Unchecked || r.Damaged {
		t.Fatalf("no image: %s (%v)", r, err)
	}
}

// journalWithoutRecovery gives the image's journal a transaction (a block
// written through debugfs's journal commands) and then clears the
// superblock's needs_recovery flag: the state two nodes' mounts leave
// when one writes its superblock over the other's journal. The kernel's
// next mount does not replay such a journal, it wipes it
// (fs/ext4/super.c, ext4_load_journal).
func journalWithoutRecovery(t *testing.T, img string) {
	t.Helper()
	debugfs, err := exec.LookPath("debugfs")
	if err != nil {
		if debugfs, err = exec.LookPath("/usr/sbin/debugfs"); err != nil {
			t.Skip("debugfs not installed (e2fsprogs)")
		}
	}
	block := filepath.Join(t.TempDir(), "block")
	if err := os.WriteFile(block, []byte(strings.Repeat("j", 1024)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(debugfs, "-w", "-f", "-", img)
	cmd.Stdin = strings.NewReader("jo\njw -b 300 " + block + "\njc\nfeature -needs_recovery\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v\n%s", err, out)
	}
}

// A journal with data under a clear needs_recovery flag is no journal
// the next mount replays: the errors e2fsck finds are what that mount
// finds, so they are damage, not "needs recovery".
func TestCheckFilesystemImageJournalTheNextMountDiscards(t *testing.T) {
	img := ext4Image(t)
	journalWithoutRecovery(t, img)
	ctx := context.Background()
	r, err := CheckFilesystemImage(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Output, "needs_recovery flag is clear, but journal has data") {
		t.Fatalf("e2fsck did not see the journal's data: %s\n%s", r, r.Output)
	}
	if r.NeedsRecovery {
		t.Errorf("a journal the next mount wipes is reported as needing recovery: %s", r)
	}
	f, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	table := int64(binary.LittleEndian.Uint32(f[2048+8:]))
	overwrite(t, img, table*1024, []byte(strings.Repeat("\x5a", 1024)))
	r, err = CheckFilesystemImage(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Damaged || r.NeedsRecovery || !r.JournalDiscarded {
		t.Errorf("an inode table overwritten, the journal to be wiped: %s\n%s", r, r.Output)
	}
	if !strings.Contains(r.String(), "the next mount discards") {
		t.Errorf("the summary does not say the journal goes: %s", r)
	}
}

func TestParseFilesystemCheck(t *testing.T) {
	for _, c := range []struct {
		name             string
		exit             int
		output           string
		damaged, unknown bool
		recovery         bool
	}{
		{"clean", 0, "Pass 1: Checking inodes\nimg: 11/2048 files (0.0% non-contiguous), 1618/8192 blocks\n", false, false, false},
		{"errors left", 4, "Inode 12 has illegal block(s).  Clear? no\n", true, false, false},
		{"aborted after errors", 12, "Inode 1 seems to contain garbage.  Clear? no\ne2fsck: aborted\n", true, false, false},
		{"no superblock", 8, "The superblock could not be read or does not describe a valid ext2/ext3/ext4\n", true, false, false},
		{"no such file", 8, "e2fsck: No such file or directory while trying to open x\n", false, true, false},
		{"usage", 16, "Usage: e2fsck\n", false, true, false},
		{"journal not replayed", 4, "Warning: skipping journal recovery because doing a read-only filesystem check.\nBlock bitmap differences: -100\n", true, false, true},
		{"journal the next mount wipes", 4, "Superblock needs_recovery flag is clear, but journal has data.\nRun journal anyway? no\n\nClear journal? no\n\nBlock bitmap differences: -100\n", true, false, false},
		{"read-only device, journal not replayed", 4, "e2fsck: won't do journal recovery while read-only\nBlock bitmap differences: -100\n", true, false, true},
	} {
		r := ParseFilesystemCheck("img", c.exit, c.output)
		if r.Damaged != c.damaged || r.Unchecked != c.unknown || r.NeedsRecovery != c.recovery {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
}

// The local lab's CSI driver runs the command this package parses.
func TestTheLabsFilesystemCheckIsThisOne(t *testing.T) {
	if got, want := csidriver.FilesystemCommand("/img"), FilesystemCommand("/img"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the CSI driver runs %q, the checker parses %q", got, want)
	}
}
