//go:build root

package csidriver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// A directory volume's file is overwritten in place, seen at once through
// a node's mount, and only over bytes it holds; a block volume's file is
// not written from outside.
func TestOverwriteFileOfADirectoryVolume(t *testing.T) {
	l := newLab(t, KindDirectory)
	v := l.create(t, "pvc-overwrite", nil)
	rwx := mountCap("", csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
	t1 := l.path("w1", "pods", "a", "mount")
	must(t, publish(l.w1, v, "", t1, rwx, false))
	must(t, os.WriteFile(filepath.Join(t1, "ledger.log"), []byte("record one|record two|record three"), 0o644))

	was, err := OverwriteFile(l.store, v.VolumeId, "ledger.log", 11, []byte("DAMAGED!!!"))
	must(t, err)
	if string(was) != "record two" {
		t.Errorf("overwrote %q, want %q", was, "record two")
	}
	got, err := os.ReadFile(filepath.Join(t1, "ledger.log"))
	must(t, err)
	if string(got) != "record one|DAMAGED!!!|record three" {
		t.Errorf("the node's mount reads %q", got)
	}
	if _, err := OverwriteFile(l.store, v.VolumeId, "ledger.log", int64(len(got))-2, []byte("past")); err == nil {
		t.Error("overwrote past the file's end")
	}
	if _, err := OverwriteFile(l.store, v.VolumeId, "missing.log", 0, []byte("x")); !errors.Is(err, ErrNoSuchFile) {
		t.Errorf("a missing file: %v", err)
	}
	must(t, unpublish(l.w1, v, t1))

	b := newLab(t, KindBlock)
	bv := b.create(t, "pvc-overwrite-block", nil)
	if _, err := OverwriteFile(b.store, bv.VolumeId, "ledger.log", 0, []byte("x")); !errors.Is(err, ErrBlockFile) {
		t.Errorf("a block volume's file: %v, want ErrBlockFile", err)
	}
}

// A block volume's file system is damaged only while nothing mounts it,
// and then e2fsck finds what was done; a directory volume has no file
// system of its own to damage.
func TestDamageFilesystemOfABlockVolume(t *testing.T) {
	l := newLab(t, KindBlock)
	v := l.create(t, "pvc-damage", nil)
	s1 := l.path("w1", "globalmount")
	must(t, stage(l.w1, v, s1, rwo()))
	must(t, os.WriteFile(filepath.Join(s1, "ledger.log"), []byte("appended"), 0o644))
	if _, err := DamageFilesystem(context.Background(), l.store, v.VolumeId); !errors.Is(err, ErrMounted) || !strings.Contains(err.Error(), s1) {
		t.Fatalf("damaged while staged: %v; want ErrMounted naming %s", err, s1)
	}
	must(t, unstage(l.w1, v, s1))
	c, err := CheckFilesystem(context.Background(), l.store, v.VolumeId)
	must(t, err)
	if c.ExitCode != 0 {
		t.Fatalf("not clean before the damage: exit %d: %s", c.ExitCode, c.Output)
	}
	what, err := DamageFilesystem(context.Background(), l.store, v.VolumeId)
	must(t, err)
	if !strings.Contains(what, "from 3 to 9") {
		t.Errorf("said %q", what)
	}
	c, err = CheckFilesystem(context.Background(), l.store, v.VolumeId)
	must(t, err)
	if c.ExitCode&4 == 0 || !strings.Contains(c.Output, "Inode 2 ref count is 9, should be 3") {
		t.Errorf("after the damage: exit %d, want bit 4 and the root's ref count: %s", c.ExitCode, c.Output)
	}
	// The file is still there to read.
	f, err := ReadVolumeFile(context.Background(), l.store, v.VolumeId, "ledger.log")
	must(t, err)
	if string(f.Data) != "appended" {
		t.Errorf("the file reads %q after the damage", f.Data)
	}

	d := newLab(t, KindDirectory)
	dv := d.create(t, "pvc-damage-dir", nil)
	if _, err := DamageFilesystem(context.Background(), d.store, dv.VolumeId); !errors.Is(err, ErrNoFilesystem) {
		t.Errorf("a directory volume: %v", err)
	}
}
