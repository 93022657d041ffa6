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
