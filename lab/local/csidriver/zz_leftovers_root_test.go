//go:build root

package csidriver

import (
	"fmt"
	"os"
	"testing"

	"github.com/faultline/faultline/lab/local/csidriver/internal/roottest"
)

// TestMain checks, after every test ran (whichever -run picked), that no
// loop device over the tests' images and no mount under their
// directories is left, and fails the run if one is.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := roottest.Finish(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	os.Exit(code)
}

// TestZZNothingLeft runs last (the last test of the last file): what the
// tests before it made, `losetup -a` and /proc/self/mountinfo no longer
// show.
func TestZZNothingLeft(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	b, err := roottest.Base()
	if err != nil {
		t.Fatal(err)
	}
	if left, err := roottest.Left(b); err != nil || left != "" {
		t.Fatalf("left: %s %v", left, err)
	}
}
