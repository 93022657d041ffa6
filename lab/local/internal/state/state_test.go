package state

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/layout"
)

// The local backend imports this package, so its tests cannot link it; a
// record's config is checked through a backend of the local kind that only
// parses.
func init() {
	lab.Register(lab.Backend{Kind: "local", Open: func(c *lab.Config) (lab.Lab, error) {
		return nil, errors.New("state tests open no lab")
	}})
}

func TestRecordRoundTripAndRefusals(t *testing.T) {
	cfg, err := lab.LoadConfig(filepath.Join("..", "..", "..", "..", "testdata", "labs", "pair.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "state")
	if Exists(dir) {
		t.Fatal("a record exists before any was saved")
	}
	if _, err := Load(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load with no record: %v, want not-exist", err)
	}
	want := &Record{Config: cfg, Sysctls: map[string]string{"kernel.panic": "0"}, Snapshot: true, CreatedShared: []string{"/var/lib/cni"}}
	if err := Save(dir, want); err != nil {
		t.Fatal(err)
	}
	if !Exists(dir) {
		t.Fatal("no record after Save")
	}
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Snapshot != want.Snapshot || !reflect.DeepEqual(got.Sysctls, want.Sysctls) ||
		!reflect.DeepEqual(got.CreatedShared, want.CreatedShared) || got.Config.Name != cfg.Name || len(got.Config.Hosts) != len(cfg.Hosts) {
		t.Errorf("loaded %+v, saved %+v", got, want)
	}
	if _, err := os.Stat(layout.State(dir).Record() + ".tmp"); err == nil {
		t.Error("Save left its temporary file")
	}
	for body, why := range map[string]string{"{": "reading", "{}": "no config"} {
		if err := os.WriteFile(layout.State(dir).Record(), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("Load of %q: %v, want an error saying %q", body, err, why)
		}
	}
}
