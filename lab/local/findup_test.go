package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/state"
)

// The labs that are up are found from the records in fake state dirs;
// nothing is brought up.
func TestUpLabsFindsTheRecordedLabs(t *testing.T) {
	root := t.TempDir()
	if up, err := lab.UpLabs(filepath.Join(root, "missing")); err != nil || len(up) != 0 {
		t.Fatalf("a root that does not exist: %v, %v; want no lab and no error", up, err)
	}
	record := func(topology, dir string) {
		t.Helper()
		c := loadTopology(t, topology)
		c.StateDir = filepath.Join(root, dir)
		if err := state.Save(filepath.Join(root, filepath.Base(dir)), &state.Record{Config: c}); err != nil {
			t.Fatal(err)
		}
	}
	record("pair", "pair")
	record("lab11", "lab11")
	// A state dir with only a heal ledger (a static lab's, or a local lab
	// that is down) is no lab that is up; nor is a file.
	if err := os.MkdirAll(filepath.Join(root, "fleet", "ledger"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}

	up, err := lab.UpLabs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(up) != 2 || up[0].Name != "lab11" || up[1].Name != "pair" {
		t.Fatalf("up %+v, want lab11 and pair", up)
	}
	for _, u := range up {
		if u.Err != nil || u.Kind != Kind || u.Config == nil || u.Config.Name != u.Name || u.StateDir != filepath.Join(root, u.Name) {
			t.Errorf("up lab %+v", u)
		}
	}

	// A record that cannot be read is still a lab that is up, with why.
	if err := os.MkdirAll(filepath.Join(root, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "broken", "lab.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A record copied from another state dir says so.
	c := loadTopology(t, "racks")
	c.StateDir = "/elsewhere/racks"
	if err := state.Save(filepath.Join(root, "racks"), &state.Record{Config: c}); err != nil {
		t.Fatal(err)
	}
	up, err = lab.UpLabs(root)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]lab.UpLab{}
	for _, u := range up {
		byName[u.Name] = u
	}
	if len(up) != 4 {
		t.Fatalf("up %+v, want four", up)
	}
	if b := byName["broken"]; b.Err == nil || b.Config != nil || !strings.Contains(b.Err.Error(), "lab.json") {
		t.Errorf("broken record: %+v", b)
	}
	if r := byName["racks"]; r.Err == nil || r.Config != nil || !strings.Contains(r.Err.Error(), "/elsewhere/racks") {
		t.Errorf("copied record: %+v", r)
	}
}
