//go:build root

package csidriver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// A block image a mount writes to while it is copied could be copied
// torn (some blocks from before a write, some from after): such a read is
// refused as ErrImageChanging, never returned as the file. Once the
// writes stop, the read holds every synced byte.
func TestReadVolumeFileRefusesAnImageWrittenWhileCopied(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-busy", nil)
	s1 := l.path("w1", "globalmount")
	must(t, stage(l.w1, v, s1, rwo()))
	defer func() { must(t, unstage(l.w1, v, s1)) }()
	f, err := os.Create(filepath.Join(s1, "ledger.log"))
	must(t, err)
	chunk := []byte(strings.Repeat("appended and synced, ", 3) + "\n")
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- f.Close()
				return
			default:
			}
			if _, err := f.Write(chunk); err != nil {
				done <- err
				return
			}
			if err := f.Sync(); err != nil {
				done <- err
				return
			}
		}
	}()
	changing := 0
	var reads []string
	for range 5 {
		got, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "ledger.log")
		switch {
		case errors.Is(err, ErrImageChanging):
			changing++
		case err != nil && !errors.Is(err, ErrNoSuchFile):
			t.Errorf("a read under writes failed otherwise: %v", err)
		case err == nil:
			reads = append(reads, string(got.Data))
		}
	}
	close(stop)
	must(t, <-done)
	if changing == 0 {
		t.Errorf("5 reads of an image written without pause all returned the file (%d byte(s) first); none was refused as changing", len(reads[0]))
	}
	got, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "ledger.log")
	must(t, err)
	if n := len(got.Data) / len(chunk); n == 0 || string(got.Data) != strings.Repeat(string(chunk), n) {
		t.Errorf("the read once the writes stopped holds %d byte(s), not whole appends", len(got.Data))
	}
	for _, r := range reads {
		if !strings.HasPrefix(string(got.Data), r) {
			t.Errorf("a read returned while the image was written is no prefix of the final file (%d byte(s))", len(r))
		}
	}
}

// A writer that appends and syncs every 100 ms, as the ledger's does,
// leaves the image still between its appends: the reads find a quiet
// moment to copy it, and each holds whole appends.
func TestReadVolumeFileFindsTheQuietBetweenAppends(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-paced", nil)
	s1 := l.path("w1", "globalmount")
	must(t, stage(l.w1, v, s1, rwo()))
	defer func() { must(t, unstage(l.w1, v, s1)) }()
	f, err := os.Create(filepath.Join(s1, "ledger.log"))
	must(t, err)
	chunk := "appended and synced\n"
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				done <- f.Close()
				return
			case <-tick.C:
			}
			if _, err := f.WriteString(chunk); err != nil {
				done <- err
				return
			}
			if err := f.Sync(); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(250 * time.Millisecond)
	refused := 0
	for range 5 {
		got, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "ledger.log")
		switch {
		case errors.Is(err, ErrImageChanging):
			refused++
			t.Logf("refused: %v", err)
		case err != nil:
			t.Errorf("read: %v", err)
		default:
			if n := len(got.Data) / len(chunk); string(got.Data) != strings.Repeat(chunk, n) {
				t.Errorf("read %d byte(s), not whole appends", len(got.Data))
			}
		}
		time.Sleep(150 * time.Millisecond)
	}
	close(stop)
	must(t, <-done)
	if refused > 0 {
		t.Errorf("%d of 5 reads found no quiet moment under appends 100 ms apart", refused)
	}
}

// A block volume's file is read from the image as it reached it, with the
// volume's mounts; after unstage it is read with no mount.
func TestReadVolumeFileOfABlockVolume(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-read", nil)
	s1 := l.path("w1", "globalmount")
	must(t, stage(l.w1, v, s1, rwo()))
	f, err := os.Create(filepath.Join(s1, "ledger.log"))
	must(t, err)
	_, err = f.WriteString("appended and synced")
	must(t, err)
	must(t, f.Sync())
	f.Close()

	got, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "ledger.log")
	must(t, err)
	if string(got.Data) != "appended and synced" || !slices.Equal(got.Mounts, []string{s1}) {
		t.Errorf("read while staged: %q, mounts %v; want the synced bytes and %s", got.Data, got.Mounts, s1)
	}
	if _, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "missing.log"); !errors.Is(err, ErrNoSuchFile) {
		t.Errorf("reading a missing file: %v, want ErrNoSuchFile", err)
	}
	must(t, unstage(l.w1, v, s1))
	got, err = ReadVolumeFile(context.Background(), l.store, v.VolumeId, "/ledger.log")
	must(t, err)
	if string(got.Data) != "appended and synced" || len(got.Mounts) != 0 {
		t.Errorf("read after unstage: %q, mounts %v", got.Data, got.Mounts)
	}
}

// A directory volume's file is read from the directory, with every
// node's publish of it.
func TestReadVolumeFileOfADirectoryVolume(t *testing.T) {
	l := newLab(t, KindDirectory)
	v := l.create(t, "pvc-read-dir", nil)
	rwx := mountCap("", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	t1, t2 := l.path("w1", "pods", "a", "mount"), l.path("w2", "pods", "b", "mount")
	must(t, publish(l.w1, v, "", t1, rwx, false))
	must(t, publish(l.w2, v, "", t2, rwx, false))
	must(t, os.WriteFile(filepath.Join(t1, "ledger.log"), []byte("one"), 0o644))
	got, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "ledger.log")
	must(t, err)
	if string(got.Data) != "one" || !slices.Equal(got.Mounts, []string{t1, t2}) {
		t.Errorf("read: %q, mounts %v; want %v", got.Data, got.Mounts, []string{t1, t2})
	}
	must(t, unpublish(l.w1, v, t1))
	must(t, unpublish(l.w2, v, t2))
	if got, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "ledger.log"); err != nil || len(got.Mounts) != 0 {
		t.Errorf("after unpublish: mounts %v, %v", got.Mounts, err)
	}
	if _, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "/"); err == nil {
		t.Error("reading the volume's root as a file succeeded")
	}
	if _, err := ReadVolumeFile(context.Background(), l.store, "block-0", "x"); err == nil {
		t.Error("reading a malformed volume ID succeeded")
	}
}

// A journal with data under a clear needs_recovery flag (what two nodes'
// mounts of one image can leave) is not replayed, as the kernel's mount
// does not replay it: the file is read as the blocks hold it.
func TestImageCatReadsAnUnrecoveredJournalAsTheKernelWould(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-journal", nil)
	s1 := l.path("w1", "globalmount")
	must(t, stage(l.w1, v, s1, rwo()))
	must(t, os.WriteFile(filepath.Join(s1, "ledger.log"), []byte("checkpointed"), 0o644))
	must(t, unstage(l.w1, v, s1)) // the unmount checkpoints: the file is in place
	must(t, stage(l.w1, v, s1, rwo()))
	f, err := os.OpenFile(filepath.Join(s1, "ledger.log"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString(" and journalled")
	must(t, err)
	must(t, f.Sync()) // in the journal, maybe not yet in place
	f.Close()
	cp := filepath.Join(t.TempDir(), "image")
	out, err := exec.Command("cp", "--sparse=always", l.store.ImagePath(v.VolumeId), cp).CombinedOutput()
	must(t, err)
	must(t, unstage(l.w1, v, s1))
	// The copy has needs_recovery set; clear it as another mount's
	// superblock write would.
	if out, err = exec.Command("debugfs", "-w", "-R", "feature -needs_recovery", cp).CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v: %s", err, out)
	}
	// The image is in the state under test: e2fsck refuses to replay it.
	probe := filepath.Join(t.TempDir(), "probe")
	if out, err = exec.Command("cp", "--sparse=always", cp, probe).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	replay := exec.Command("e2fsck", "-E", "journal_only", "-p", probe)
	replay.Env = append(os.Environ(), "LC_ALL=C")
	if out, err = replay.CombinedOutput(); err == nil || !strings.Contains(string(out), journalNotRecovered) {
		t.Fatalf("the copy's journal was not left with data under a clear flag (e2fsck: %v: %s)", err, out)
	}
	got, err := imageCat(context.Background(), cp, "/ledger.log")
	if err != nil {
		t.Fatalf("reading an image whose journal is not to be recovered: %v", err)
	}
	// Whatever reached the blocks in place: the checkpointed bytes at
	// least, never an error.
	if !strings.HasPrefix(string(got), "checkpointed") {
		t.Errorf("read %q, want the checkpointed bytes first", got)
	}
}

// A block volume's file system is not checked while staged (the mount is
// named) and checks clean after; a file system whose metadata is broken is reported
// as e2fsck found it (exit status 4), not as an error.
func TestCheckFilesystemOfABlockVolume(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-fsck", nil)
	s1 := l.path("w1", "globalmount")
	must(t, stage(l.w1, v, s1, rwo()))
	must(t, os.WriteFile(filepath.Join(s1, "ledger.log"), []byte("appended"), 0o644))
	c, err := CheckFilesystem(context.Background(), l.store, v.VolumeId)
	if !errors.Is(err, ErrMounted) || !slices.Equal(c.Mounts, []string{s1}) || c.Output != "" {
		t.Errorf("checked while staged: %v, mounts %v, output %q; want ErrMounted, the mount, no check", err, c.Mounts, c.Output)
	}
	must(t, unstage(l.w1, v, s1))
	c, err = CheckFilesystem(context.Background(), l.store, v.VolumeId)
	must(t, err)
	if c.ExitCode != 0 || len(c.Mounts) != 0 || !strings.Contains(c.Image, "journal replayed") || strings.Contains(c.Output, "faultline-volume-") {
		t.Errorf("checked after unstage: exit %d, mounts %v, image %q: %s", c.ExitCode, c.Mounts, c.Image, c.Output)
	}
	// Break the root directory's inode link count as two caches' writes
	// can leave it.
	if out, err := exec.Command("debugfs", "-w", "-R", "sif / links_count 7", l.store.ImagePath(v.VolumeId)).CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v: %s", err, out)
	}
	c, err = CheckFilesystem(context.Background(), l.store, v.VolumeId)
	must(t, err)
	if c.ExitCode&4 == 0 {
		t.Errorf("a broken link count: exit %d, want bit 4 (errors left uncorrected): %s", c.ExitCode, c.Output)
	}
	d := newLab(t, KindDirectory)
	dv := d.create(t, "pvc-fsck-dir", nil)
	if _, err := CheckFilesystem(context.Background(), d.store, dv.VolumeId); !errors.Is(err, ErrNoFilesystem) || !strings.Contains(err.Error(), "only a block volume") {
		t.Errorf("checking a directory volume: %v", err)
	}
}
