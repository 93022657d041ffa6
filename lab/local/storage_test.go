package local

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/csidriver"
)

func TestStorageInfoNamesTheClassesTheDriversServe(t *testing.T) {
	c := loadTopology(t, "lab11s")
	c.StateDir = filepath.Join(t.TempDir(), "state")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	info, err := l.StorageInfo()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sc := range csidriver.StorageClasses() {
		names = append(names, sc.Name)
	}
	for _, class := range []string{info.SharedClass, info.BlockClass, info.BlockMMPClass, info.BlockFencedClass} {
		if class == "" || !slices.Contains(names, class) {
			t.Errorf("StorageInfo names class %q; the drivers' classes are %v", class, names)
		}
	}
	if info.BlockFencedClass != csidriver.BlockFencedStorageClass {
		t.Errorf("fenced class %q", info.BlockFencedClass)
	}
	if !slices.ContainsFunc(info.Emulated, func(s string) bool {
		return strings.Contains(s, "ext4 shutdown (EXT4_IOC_SHUTDOWN) of the detached node's own mount")
	}) {
		t.Errorf("Emulated does not say how fencing is done: %q", info.Emulated)
	}
	if info.FenceEmulation != FenceEmulated || !strings.Contains(info.FenceEmulation, "a real storage target revokes") {
		t.Errorf("FenceEmulation %q", info.FenceEmulation)
	}

	p := loadTopology(t, "pair")
	p.StateDir = filepath.Join(t.TempDir(), "state")
	lp, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lp.StorageInfo(); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("a lab without a storage host: %v", err)
	}
}

// Damage goes through the storage host's export: a lab without one cannot,
// a block volume's file is not the lab's to place, and a directory volume
// that is not there is no file.
func TestVolumeDamageSaysWhatTheLabCannotDo(t *testing.T) {
	c := loadTopology(t, "lab11s")
	c.StateDir = filepath.Join(t.TempDir(), "state")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	block, dir := "block-"+strings.Repeat("a", 32), "directory-"+strings.Repeat("b", 32)
	if _, err := l.OverwriteVolumeFile(t.Context(), block, "ledger.log", 0, []byte("x")); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("overwriting a block volume's file: %v, want ErrUnsupported", err)
	}
	if _, err := l.DamageVolumeFilesystem(t.Context(), dir); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("damaging a directory volume's file system: %v, want ErrUnsupported", err)
	}
	if _, err := l.OverwriteVolumeFile(t.Context(), dir, "ledger.log", 0, []byte("x")); err == nil || errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("overwriting a file of a volume the store does not hold: %v", err)
	}
	p := loadTopology(t, "pair")
	p.StateDir = filepath.Join(t.TempDir(), "state")
	lp, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lp.OverwriteVolumeFile(t.Context(), dir, "ledger.log", 0, []byte("x")); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("a lab without a storage host: %v", err)
	}
	if _, err := lp.DamageVolumeFilesystem(t.Context(), block); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("a lab without a storage host: %v", err)
	}
}
