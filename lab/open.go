package lab

import (
	"fmt"
	"sort"
	"sync"
)

// Opener builds a Lab of one kind from its config. Backends register one
// from an init function; programs choose the backends they link in with a
// blank import.
type Opener func(*Config) (Lab, error)

var (
	openersMu sync.Mutex
	openers   = map[string]Opener{}
)

// Register makes a backend available to Open under its kind.
func Register(kind string, o Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[kind]; dup {
		panic("lab: backend registered twice: " + kind)
	}
	openers[kind] = o
}

// Open builds the lab a config describes. It touches nothing: a backend's
// opener only checks and connects where it must.
func Open(c *Config) (Lab, error) {
	openersMu.Lock()
	o, ok := openers[c.Kind]
	var kinds []string
	for k := range openers {
		kinds = append(kinds, k)
	}
	openersMu.Unlock()
	if !ok {
		sort.Strings(kinds)
		return nil, fmt.Errorf("lab %s: no backend for kind %q in this program (have %v)", c.Name, c.Kind, kinds)
	}
	return o(c)
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
