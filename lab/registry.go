package lab

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Backend is what a lab backend registers: its kind, the section of a lab
// file only it reads, its defaults and checks, and how it opens a lab.
// The lab package knows no backend: a program links the backends it can
// open with blank imports (lab/backends links them all), and each one
// registers itself from an init function.
type Backend struct {
	// Kind is the lab file's kind the backend serves.
	Kind string
	// Section is the key of the lab file's section only this backend
	// reads ("vsphere"), or empty when it has none.
	Section string
	// NewSection returns a pointer to the zero value the section is
	// decoded into, unknown fields being errors. Required with Section.
	NewSection func() any
	// Defaults fills in what the backend defaults, after the defaults
	// every lab shares. Optional.
	Defaults func(*Config)
	// Validate returns every problem only this backend has with a lab
	// file, each naming its field, after the checks every lab shares
	// passed or failed. Optional.
	Validate func(*Config) []error
	// Timers returns the timers the cluster a validated config describes
	// runs with, from the file alone (see TimersOf), or an error saying
	// why the file does not tell. Optional: without it TimersOf says the
	// backend does not report them.
	Timers func(*Config) (Timers, error)
	// Open builds the lab a validated config describes; it touches
	// nothing and connects only where it must.
	Open func(*Config) (Lab, error)
	// FindUp lists the labs of this kind that are up on this machine
	// with their state dirs directly under root, from the record each
	// keeps there while it is up. Optional: for backends that build
	// their labs on this machine (local); a lab built elsewhere is up or
	// not whatever this machine holds.
	FindUp func(root string) ([]UpLab, error)
	// Coexist says what keeps two labs of this kind, both validated, from
	// being up at once (on one machine, say: a name, a network or a
	// kernel object they would share), each problem naming the field or
	// object; none when they can. Optional: without it any two labs of
	// the kind can.
	Coexist func(a, b *Config) []error
}

var (
	backendsMu sync.Mutex
	backends   = map[string]Backend{}
)

// Register makes a backend available under its kind. It panics on a
// backend without a kind or an opener, on a kind or a section registered
// twice, and on a section without a decoder: all are mistakes of the
// program, not of a lab file.
func Register(b Backend) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	switch {
	case b.Kind == "":
		panic("lab: backend registered without a kind")
	case b.Open == nil:
		panic("lab: backend " + b.Kind + " registered without an opener")
	case b.Section != "" && b.NewSection == nil:
		panic("lab: backend " + b.Kind + " has section " + b.Section + " but no decoder for it")
	case b.Section == "" && b.NewSection != nil:
		panic("lab: backend " + b.Kind + " has a section decoder but no section")
	}
	if _, dup := backends[b.Kind]; dup {
		panic("lab: backend registered twice: " + b.Kind)
	}
	for _, o := range backends {
		if b.Section != "" && o.Section == b.Section {
			panic("lab: section " + b.Section + " registered by both " + o.Kind + " and " + b.Kind)
		}
	}
	if reserved[b.Section] {
		panic("lab: backend " + b.Kind + " claims section " + b.Section + ", which every lab file shares")
	}
	backends[b.Kind] = b
}

// reserved are the keys of a lab file every backend shares.
var reserved = map[string]bool{
	"name": true, "kind": true, "lab": true, "stateDir": true, "kubeconfig": true,
	"kubernetes": true, "network": true, "hosts": true, "ssh": true, "storage": true, "etcd": true, "kubelet": true,
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	kinds := make([]string, 0, len(backends))
	for k := range backends {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// backendOf returns the backend registered for kind.
func backendOf(kind string) (Backend, bool) {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	b, ok := backends[kind]
	return b, ok
}

// sections maps every registered section to the kind that owns it.
func sections() map[string]string {
	backendsMu.Lock()
	defer backendsMu.Unlock()
	out := map[string]string{}
	for _, b := range backends {
		if b.Section != "" {
			out[b.Section] = b.Kind
		}
	}
	return out
}

// unknownKind is the error for a kind no linked backend serves.
func unknownKind(kind string) error {
	kinds := Kinds()
	if len(kinds) == 0 {
		return fmt.Errorf("%q is not a lab kind this program knows: it links no backend (import github.com/faultline/faultline/lab/backends)", kind)
	}
	return fmt.Errorf("%q is not a lab kind this program knows (registered: %s)", kind, strings.Join(kinds, ", "))
}

// Open builds the lab a config describes. It touches nothing: a backend's
// opener only checks and connects where it must.
func Open(c *Config) (Lab, error) {
	if c == nil {
		return nil, errors.New("opening a lab: no config")
	}
	b, ok := backendOf(c.Kind)
	if !ok {
		return nil, fmt.Errorf("lab %s: no backend: %w", c.Name, unknownKind(c.Kind))
	}
	return b.Open(c)
}

// OpenFile resolves a --lab argument (a file or a topology name), loads and
// validates it, and opens the lab.
func OpenFile(arg string) (Lab, error) {
	path, err := ResolveConfigPath(arg)
	if err != nil {
		return nil, err
	}
	c, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	return Open(c)
}

// CheckCoexist says whether the labs the configs describe can all be up
// at once: for every two of one kind, what its backend's Coexist finds.
// Labs of different kinds never share what would keep them apart. The
// error names both labs of each pair and every problem.
func CheckCoexist(configs ...*Config) error {
	var errs []error
	for i, a := range configs {
		for _, b := range configs[i+1:] {
			if a == nil || b == nil || a.Kind != b.Kind {
				continue
			}
			own, ok := backendOf(a.Kind)
			if !ok || own.Coexist == nil {
				continue
			}
			if problems := own.Coexist(a, b); len(problems) > 0 {
				errs = append(errs, fmt.Errorf("labs %s and %s cannot be up at once: %w", a.Name, b.Name, errors.Join(problems...)))
			}
		}
	}
	return errors.Join(errs...)
}
