// Package memlab is a lab that lives in one JSON file: a test double for
// the scenario engine's own tests. It is never registered as a lab kind, so
// no user can pick it. Its state is a file so that it survives the process
// that changed it (the kill -9 test needs that).
package memlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/faultline/faultline/lab"
)

// Name is the lab's name in configs and ledger entries.
const Name = "memlab"

// PreexistingFlag is set by every Reset: lab state that is wrong before any
// fault, for the DETECTOR_INVALID scenario.
const PreexistingFlag = "preexisting"

// State is everything the lab is.
type State struct {
	Resets int             `json:"resets"`
	Flags  map[string]bool `json:"flags"`
	// Lapsing are flags set for a stretch of time only, as damage that
	// shows for a while after heal and passes by itself does.
	Lapsing map[string]Stretch `json:"lapsing,omitempty"`
	// Copies are where the stateful pod's container runs: node name to
	// container ID. Reset clears them; a suite's Prepare sets them.
	Copies map[string]string `json:"copies,omitempty"`
	// SetAt is when each flag a fault injected was set: the lab is the
	// flags' only keeper, so a flag still set has held since then.
	SetAt map[string]time.Time `json:"setAt,omitempty"`
	// Probes counts the effect probes of each flag since it was injected.
	Probes map[string]int `json:"probes,omitempty"`
	// Log is every change in order: "reset", "inject <flag>", "heal <flag>".
	Log []string `json:"log"`
}

// Stretch is a span of time [From, Until).
type Stretch struct {
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
}

// Nodes are the nodes whose container runtimes the sampler reads.
var Nodes = []string{"memlab-w1", "memlab-w2"}

// Lab is the in-file lab.
type Lab struct {
	dir  string
	name string
	cfg  *lab.Config
}

// Open opens the lab whose state lives in dir. isLab is what its config
// says in `lab:`; Open itself writes nothing.
func Open(dir string, isLab bool) *Lab { return OpenNamed(dir, Name, isLab) }

// OpenNamed is Open with the lab's name, for tests that run several
// memlabs at once (a pool, one per Ginkgo process): each names its lab in
// its info, its config and so in its run records.
func OpenNamed(dir, name string, isLab bool) *Lab {
	return &Lab{dir: dir, name: name, cfg: &lab.Config{Name: name, Kind: "memlab", Lab: isLab, StateDir: dir}}
}

func (l *Lab) statePath() string { return filepath.Join(l.dir, "memlab.json") }

// Load reads the state (empty if the lab was never touched).
func (l *Lab) Load() (State, error) {
	s := State{Flags: map[string]bool{}}
	b, err := os.ReadFile(l.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("reading memlab state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("reading memlab state: %w", err)
	}
	if s.Flags == nil {
		s.Flags = map[string]bool{}
	}
	return s, nil
}

// Touched reports whether anything ever changed the lab.
func (l *Lab) Touched() bool {
	_, err := os.Stat(l.statePath())
	return err == nil
}

// Update changes the state under an exclusive lock and writes it through a
// synced rename.
func (l *Lab) Update(change func(*State)) error {
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(l.dir, "memlab.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	s, err := l.Load()
	if err != nil {
		return err
	}
	change(&s)
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := l.statePath() + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	f.Close()
	return os.Rename(tmp, l.statePath())
}

// ActiveFlags lists the flags set at now, sorted.
func (s State) ActiveFlags(now time.Time) []string {
	var out []string
	for f, on := range s.Flags {
		if on {
			out = append(out, f)
		}
	}
	for f, st := range s.Lapsing {
		if !now.Before(st.From) && now.Before(st.Until) && !s.Flags[f] {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

func (l *Lab) Info() lab.Info {
	return lab.Info{Name: l.name, Kind: "memlab", Topology: "memlab", ResetKind: lab.ResetCleanup, TimerProfile: "none"}
}
func (l *Lab) Config() *lab.Config { return l.cfg }
func (l *Lab) Hosts() []lab.Host   { return nil }
func (l *Lab) Host(name string) (lab.Host, error) {
	return nil, fmt.Errorf("memlab has no host %q (it has no hosts)", name)
}
func (l *Lab) Kubeconfig(string) (string, error) {
	return "", lab.Unsupported("memlab", "kubeconfig", "it runs no cluster")
}
func (l *Lab) StateDir() string { return l.dir }
func (l *Lab) Timers() (lab.Timers, error) {
	return lab.Timers{}, lab.Unsupported("memory", "timers", "it runs no cluster")
}

// Reset counts, sets the preexisting flag and removes the pod's copies.
// It does not clear fault flags: a fault left behind must be healed
// through the ledger, which is what the engine's tests check.
func (l *Lab) Reset(ctx context.Context) error {
	return l.Update(func(s *State) {
		s.Resets++
		s.Flags[PreexistingFlag] = true
		s.Copies = nil
		s.Log = append(s.Log, "reset")
	})
}

func (l *Lab) Status(ctx context.Context) (lab.Status, error) {
	return lab.Status{Info: l.Info(), Up: true}, nil
}
func (l *Lab) Close() error { return nil }
