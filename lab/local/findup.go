package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/state"
)

// findUp lists the local labs that are up with their state dirs directly
// under root: those whose state dir holds the lab's record (lab.json),
// which up writes before it touches the machine and down removes last
// with the state dir. That is what Status calls up, and what down works
// from: a lab whose up failed half-way is up until it is brought down.
// A state dir without a record (a ledger alone, say) is no lab that is up.
func findUp(root string) ([]lab.UpLab, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var up []lab.UpLab
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if !state.Exists(dir) {
			continue
		}
		u := lab.UpLab{Name: e.Name(), Kind: Kind, StateDir: dir}
		rec, err := state.Load(dir)
		switch {
		case err != nil:
			u.Err = err
		case filepath.Clean(rec.Config.StateDir) != filepath.Clean(dir):
			u.Name = rec.Config.Name
			u.Err = fmt.Errorf("the record in %s says the lab's state dir is %s", dir, rec.Config.StateDir)
		default:
			u.Name, u.Config = rec.Config.Name, rec.Config
		}
		up = append(up, u)
	}
	return up, nil
}
