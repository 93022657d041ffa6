package lab

import (
	"errors"
	"fmt"
	"os"
	"sort"
)

// EnvStateDir overrides StateRoot.
const EnvStateDir = "FAULTLINE_STATE_DIR"

// StateRoot is where the state dir of a lab whose file names no stateDir
// lies (as <root>/<name>): $FAULTLINE_STATE_DIR, else /var/lib/faultline.
func StateRoot() string {
	if d := os.Getenv(EnvStateDir); d != "" {
		return d
	}
	return "/var/lib/faultline"
}

// UpLab is a lab that is up on this machine, as its backend found it from
// the record the lab keeps in its state dir while it is up.
type UpLab struct {
	Name     string
	Kind     string
	StateDir string
	// Config is the config the lab was brought up with, as it recorded
	// it; nil when the record cannot be read, and Err says why.
	Config *Config
	Err    error
}

// UpLabs lists the labs up on this machine whose state dirs lie directly
// under root (StateRoot for labs whose files name no stateDir), as every
// registered backend with a FindUp finds them, sorted by name and then
// state dir. A lab whose file puts its state dir elsewhere is not listed.
// A root that does not exist holds no lab.
func UpLabs(root string) ([]UpLab, error) {
	backendsMu.Lock()
	var finders []Backend
	for _, b := range backends {
		if b.FindUp != nil {
			finders = append(finders, b)
		}
	}
	backendsMu.Unlock()
	sort.Slice(finders, func(i, j int) bool { return finders[i].Kind < finders[j].Kind })
	var out []UpLab
	var errs []error
	for _, b := range finders {
		up, err := b.FindUp(root)
		if err != nil {
			errs = append(errs, fmt.Errorf("finding the %s labs that are up under %s: %w", b.Kind, root, err))
			continue
		}
		out = append(out, up...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].StateDir < out[j].StateDir
	})
	return out, errors.Join(errs...)
}
