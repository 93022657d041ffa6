//go:build root

package loopdev_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/lab/local/csidriver/internal/roottest"
	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := roottest.Finish(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	os.Exit(code)
}

func image(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func listed(t *testing.T, dir string) []loopdev.Device {
	t.Helper()
	devs, err := loopdev.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return devs
}

func TestAttachedDeviceGoesAwayAtItsLastClose(t *testing.T) {
	dir := roottest.Dir(t)
	img := image(t, dir, "a.img")
	a, err := loopdev.Attach(img, loopdev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	devs := listed(t, dir)
	if len(devs) != 1 || devs[0].Path != a.Path || devs[0].BackingFile != img || !devs[0].Autoclear || devs[0].ReadOnly {
		t.Fatalf("listed %+v, attached %+v", devs, a.Device)
	}
	if left, _ := roottest.Left(dir); left == "" {
		t.Fatal("losetup -a does not show the device")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if devs := listed(t, dir); len(devs) != 0 {
		t.Fatalf("still bound after the last close: %+v", devs)
	}
}

func TestHoldChecksTheImageAndDetaches(t *testing.T) {
	dir := roottest.Dir(t)
	img, other := image(t, dir, "a.img"), image(t, dir, "b.img")
	a, err := loopdev.Attach(img, loopdev.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := loopdev.Hold(a.Path, other); !errors.Is(err, loopdev.ErrNotBacked) {
		t.Fatalf("holding %s as if over %s: %v", a.Path, other, err)
	}
	if _, err := loopdev.Hold("/dev/sda", img); err == nil {
		t.Fatal("a device that is no loop device was taken")
	}
	h, err := loopdev.Hold(a.Path, img)
	if err != nil {
		t.Fatal(err)
	}
	if !h.ReadOnly || !h.Autoclear {
		t.Errorf("held %+v", h.Device)
	}
	// Another holder (the Attached) keeps it bound until it closes too.
	if err := h.Detach(); err != nil {
		t.Fatal(err)
	}
	if devs := listed(t, dir); len(devs) != 1 {
		t.Fatalf("detached while still open elsewhere: %+v", devs)
	}
	a.Close()
	if devs := listed(t, dir); len(devs) != 0 {
		t.Fatalf("still bound: %+v", devs)
	}
}

func TestTwoDevicesOverOneImage(t *testing.T) {
	dir := roottest.Dir(t)
	img := image(t, dir, "a.img")
	a, err := loopdev.Attach(img, loopdev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := loopdev.Attach(img, loopdev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Path == b.Path {
		t.Fatalf("one device %s for two attaches", a.Path)
	}
	if devs := listed(t, img); len(devs) != 2 {
		t.Fatalf("listed over %s: %+v", img, devs)
	}
}

func TestAttachRefusesBadImages(t *testing.T) {
	dir := roottest.Dir(t)
	if _, err := loopdev.Attach("rel.img", loopdev.Options{}); err == nil {
		t.Error("a relative path was taken")
	}
	if _, err := loopdev.Attach(dir, loopdev.Options{}); err == nil {
		t.Error("a directory was taken")
	}
	if _, err := loopdev.Attach(filepath.Join(dir, "missing.img"), loopdev.Options{}); err == nil {
		t.Error("a missing file was taken")
	}
}

// Last in the file, so it runs after the others: nothing they made is
// left (TestMain checks again for runs that pick tests).
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
