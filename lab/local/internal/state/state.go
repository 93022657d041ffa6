// Package state reads and writes a local lab's record, lab.json in its
// state dir: what `down` in any later process needs to know.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/layout"
)

// Record is what the lab writes to its state dir before it touches the
// machine, so that `down` in any later process, even after a crash, knows
// what to remove and what to restore.
type Record struct {
	Config *lab.Config `json:"config"`
	// Sysctls holds the machine-wide sysctls the lab changed, with the
	// values they had before it did.
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// Snapshot says a cold snapshot was completed.
	Snapshot bool `json:"snapshot,omitempty"`
	// CreatedShared lists machine-wide directories that did not exist
	// before the lab's first up and that components create at fixed paths
	// (kubelet's device-plugin dir, libcni's cache, the shims' socket dir).
	CreatedShared []string `json:"createdShared,omitempty"`
}

// Load reads the record in a state dir.
func Load(stateDir string) (*Record, error) {
	b, err := os.ReadFile(layout.State(stateDir).Record())
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", layout.State(stateDir).Record(), err)
	}
	if r.Config == nil {
		return nil, fmt.Errorf("reading %s: no config", layout.State(stateDir).Record())
	}
	if err := r.Config.Validate(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", layout.State(stateDir).Record(), err)
	}
	return &r, nil
}

// Save writes the record atomically: a crash mid-write must not
// leave a record that down cannot read.
func Save(stateDir string, r *Record) error {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("creating state dir: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := layout.State(stateDir).Record() + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("writing lab record: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("writing lab record: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing lab record: %w", err)
	}
	f.Close()
	return os.Rename(tmp, layout.State(stateDir).Record())
}

// Exists says whether a state dir holds a record (perhaps one it cannot
// read).
func Exists(stateDir string) bool {
	_, err := os.Stat(layout.State(stateDir).Record())
	return !errors.Is(err, os.ErrNotExist)
}
