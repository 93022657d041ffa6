// Package ledger is the on-disk heal ledger: a fault is written to it, and
// synced, before it is injected, and removed only after it was healed. A run
// that is interrupted, crashes or is killed leaves its entry behind, and the
// next start (or `faultline heal`) heals it before anything else.
//
// Each entry is one file in <stateDir>/ledger. While a fault is active the
// process that injected it holds an exclusive flock on its entry file; the
// kernel drops that lock when the process dies, however it dies. HealAll
// takes the lock before healing, so it never heals a fault out from under a
// live run, and two processes never heal the same entry twice.
package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
)

// Entry is one fault that was (or was about to be) injected.
type Entry struct {
	ID     string          `json:"id"`
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
	Lab    string          `json:"lab"`
	Time   time.Time       `json:"time"`
	PID    int             `json:"pid"`
	// Scenario names the run that wrote the entry, for the heal report.
	Scenario string `json:"scenario,omitempty"`
}

const (
	dirName     = "ledger"
	entrySuffix = ".json"
	tmpSuffix   = ".json.tmp"
)

// Ledger is the heal ledger of one lab.
type Ledger struct {
	dir string
}

// Open opens (creating if needed) the ledger in a lab's state directory.
func Open(stateDir string) (*Ledger, error) {
	if stateDir == "" {
		return nil, errors.New("opening heal ledger: the lab has no state directory")
	}
	dir := filepath.Join(stateDir, dirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("opening heal ledger: %w", err)
	}
	return &Ledger{dir: dir}, nil
}

// Dir is where the ledger's entries live.
func (l *Ledger) Dir() string { return l.dir }

// Active is an entry this process wrote and holds the lock of.
type Active struct {
	Entry
	ledger *Ledger
	file   *os.File
}

// Record writes an entry for f and syncs it (file and directory) before it
// returns: only then may f be injected. The returned Active holds the
// entry's lock until Done or Keep.
func (l *Ledger) Record(f fault.Fault, labName, scenario string) (*Active, error) {
	id, err := newID()
	if err != nil {
		return nil, err
	}
	e := Entry{ID: id, Kind: f.Kind(), Params: f.Params(), Lab: labName, Time: time.Now().UTC(), PID: os.Getpid(), Scenario: scenario}
	body, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("recording %s in the heal ledger: %w", fault.Describe(f), err)
	}
	tmp := filepath.Join(l.dir, id+tmpSuffix)
	file, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("recording %s in the heal ledger: %w", fault.Describe(f), err)
	}
	fail := func(err error) (*Active, error) {
		file.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("recording %s in the heal ledger: %w", fault.Describe(f), err)
	}
	// Locked before the entry has its final name, so no other process can
	// ever take an active entry for an abandoned one.
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(fmt.Errorf("locking new entry: %w", err))
	}
	if _, err := file.Write(append(body, '\n')); err != nil {
		return fail(err)
	}
	if err := file.Sync(); err != nil {
		return fail(err)
	}
	crashpoint.Reach("ledger/record/written")
	path := filepath.Join(l.dir, id+entrySuffix)
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	if err := syncDir(l.dir); err != nil {
		file.Close()
		return nil, fmt.Errorf("recording %s in the heal ledger: %w", fault.Describe(f), err)
	}
	return &Active{Entry: e, ledger: l, file: file}, nil
}

// Done removes the entry after its fault was healed, syncs the removal and
// releases the lock.
func (a *Active) Done() error {
	if a.file == nil {
		return nil
	}
	path := filepath.Join(a.ledger.dir, a.ID+entrySuffix)
	err := os.Remove(path)
	if err == nil {
		err = syncDir(a.ledger.dir)
	}
	cerr := a.file.Close()
	a.file = nil
	if err != nil {
		return fmt.Errorf("removing healed entry %s from the heal ledger: %w", a.ID, err)
	}
	return cerr
}

// Keep releases the lock and leaves the entry on disk, for when heal failed:
// the next HealAll will try again.
func (a *Active) Keep() error {
	if a.file == nil {
		return nil
	}
	err := a.file.Close()
	a.file = nil
	return err
}

// Entries lists what the ledger holds, oldest first, without locking.
func (l *Ledger) Entries() ([]Entry, error) {
	names, err := l.entryFiles()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, name := range names {
		e, err := readEntry(filepath.Join(l.dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

func (l *Ledger) entryFiles() ([]string, error) {
	des, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("reading heal ledger: %w", err)
	}
	var names []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), entrySuffix) && !de.IsDir() {
			names = append(names, de.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

func readEntry(path string) (Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("heal ledger entry %s is malformed: %w", path, err)
	}
	return e, nil
}

func newID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a ledger entry id: %w", err)
	}
	return fmt.Sprintf("%s-%d-%s", time.Now().UTC().Format("20060102T150405.000000000Z"), os.Getpid(), hex.EncodeToString(b[:])), nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
