package local

import (
	"path/filepath"
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
