package gobuild

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestFindModule(t *testing.T) {
	dir, err := FindModule()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "fixtures", "images", "pause", "main.go")); err != nil {
		t.Errorf("module dir %s does not hold the programs: %v", dir, err)
	}
}

func TestFindModuleOutsideTheTree(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := FindModule(); err == nil || !strings.Contains(err.Error(), ModulePath) {
		t.Errorf("FindModule outside the tree = %v, want an error naming the module", err)
	}
}

func TestStatic(t *testing.T) {
	dir, err := FindModule()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "bin", "pause")
	if err := Static(context.Background(), dir, runtime.GOARCH, "fixtures/images/pause", out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("built binary: %v, %v", fi, err)
	}
	left, _ := filepath.Glob(out + ".*.tmp")
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	err = Static(context.Background(), dir, runtime.GOARCH, "fixtures/images/no-such-program", filepath.Join(t.TempDir(), "x"))
	if err == nil || !strings.Contains(err.Error(), "fixtures/images/no-such-program") {
		t.Errorf("building a missing package = %v, want an error naming it", err)
	}
}
