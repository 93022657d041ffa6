package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/state"
)

func loadTopology(t *testing.T, name string) *lab.Config {
	t.Helper()
	c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewTouchesNothingAndNamesBadHosts(t *testing.T) {
	c := loadTopology(t, "pair")
	c.StateDir = filepath.Join(t.TempDir(), "state")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Host("nope"); err == nil {
		t.Error("unknown host accepted")
	}
	if state.Exists(c.StateDir) {
		t.Error("New wrote state")
	}
	c2 := *c
	c2.Kind = "static"
	if _, err := New(&c2); err == nil {
		t.Error("a static lab was opened as local")
	}
}

// A lab whose state dir puts a unix socket of its own past the 107 bytes
// a socket address holds (sun_path's 108, one for the NUL) comes up with
// that component unable to listen: lab11s's csi-node exited on every
// worker under a state dir of 41 bytes. Up refuses such a lab first,
// naming each socket too long and its length, and makes nothing; under a
// state dir one byte shorter it goes on. New opens the lab either way
// (it touches nothing, and a lab already up must still come down).
//
// The Kubernetes version is one the build does not pin, so that an Up
// that went on past the check stops at the binaries' check, which only
// reads.
func TestUpRefusesAStateDirTooLongForTheLabsSockets(t *testing.T) {
	c := loadTopology(t, "lab11s")
	c.Kubernetes.Version = "v0.0.1-not-built"
	// The longest socket is a worker's CSI registration socket,
	// <state>/hosts/worker1/kubelet/plugins_registry/directory.csi.faultline.local.sock,
	// 74 bytes below the state dir; nothing is made under this path.
	const root = "/nonexistent-faultline-test/"
	long := root + strings.Repeat("d", 108-74-len(root))
	up := func(stateDir string) error {
		t.Helper()
		cc := *c
		cc.StateDir = stateDir
		l, err := New(&cc)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		err = l.Up(context.Background())
		if err == nil {
			t.Fatal("Up succeeded")
		}
		return err
	}
	err := up(long)
	for _, w := range []string{"worker1", "worker2", "worker3"} {
		want := filepath.Join(long, "hosts", w, "kubelet", "plugins_registry", "directory.csi.faultline.local.sock")
		if !strings.Contains(err.Error(), want+" is 108 bytes") {
			t.Errorf("Up's error does not name %s and its 108 bytes:\n%v", want, err)
		}
	}
	if !strings.Contains(err.Error(), "107") {
		t.Errorf("Up's error does not name the limit:\n%v", err)
	}
	if _, statErr := os.Stat(root); !os.IsNotExist(statErr) {
		t.Errorf("Up made %s (%v)", root, statErr)
	}
	if err := up(long[:len(long)-1]); strings.Contains(err.Error(), "unix socket") {
		t.Errorf("a state dir one byte shorter: %v", err)
	}
}
