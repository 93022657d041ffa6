package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// Healed is an entry HealAll healed and removed.
type Healed struct {
	Entry Entry
	// Account is what the heal found of the fault and what it removed;
	// empty when it found nothing (the fault was never injected, or was
	// removed before).
	Account fault.HealAccount
}

// Busy is an entry a live process still holds: its fault is active in a run
// that is still going, and that run will heal it.
type Busy struct {
	Entry Entry
}

// Failed is an entry HealAll could not heal; it stays in the ledger.
type Failed struct {
	// File is the entry's file, for entries too broken to read.
	File  string
	Entry Entry
	Err   error
	// Account is what the heal found and removed before it failed.
	Account fault.HealAccount
}

// Report is what HealAll did.
type Report struct {
	Healed []Healed
	Busy   []Busy
	Failed []Failed
	// Discarded are entries whose write never finished: Record had not
	// returned, so their fault was never injected.
	Discarded []string
}

// Empty reports whether the ledger held nothing to do.
func (r Report) Empty() bool {
	return len(r.Healed)+len(r.Busy)+len(r.Failed)+len(r.Discarded) == 0
}

// String renders the report for a person, one line per entry.
func (r Report) String() string {
	if r.Empty() {
		return "heal ledger: nothing to heal"
	}
	var b strings.Builder
	for _, h := range r.Healed {
		fmt.Fprintf(&b, "healed %s %s (entry %s, written by pid %d at %s for %s)\n", h.Entry.Kind, h.Entry.Params, h.Entry.ID, h.Entry.PID, h.Entry.Time.Format("2006-01-02T15:04:05Z07:00"), scenarioOf(h.Entry))
		writeAccount(&b, h.Account, true)
	}
	for _, x := range r.Busy {
		fmt.Fprintf(&b, "left %s %s (entry %s): still held by running pid %d\n", x.Entry.Kind, x.Entry.Params, x.Entry.ID, x.Entry.PID)
	}
	for _, f := range r.Failed {
		fmt.Fprintf(&b, "FAILED to heal %s: %v (the entry stays in the ledger)\n", failedName(f), f.Err)
		writeAccount(&b, f.Account, false)
	}
	for _, d := range r.Discarded {
		fmt.Fprintf(&b, "discarded unfinished entry %s (its fault was never injected)\n", d)
	}
	return strings.TrimRight(b.String(), "\n")
}

// writeAccount writes what a heal found and removed, one indented line
// each. A healed entry whose heal found nothing says so: its fault was
// never injected (the run died before inject) or was already removed.
func writeAccount(b *strings.Builder, a fault.HealAccount, healed bool) {
	if a.Empty() {
		if healed {
			b.WriteString("  found nothing of it in the lab (never injected, or already removed)\n")
		}
		return
	}
	for _, f := range a.Found {
		fmt.Fprintf(b, "  found: %s\n", f)
	}
	for _, r := range a.Removed {
		fmt.Fprintf(b, "  removed: %s\n", r)
	}
}

// FailedNames names every entry HealAll could not heal, for an error
// message: "<kind> (entry <id>)", or the file of an entry too broken to
// read.
func (r Report) FailedNames() []string {
	var out []string
	for _, f := range r.Failed {
		if f.Entry.ID != "" {
			out = append(out, fmt.Sprintf("%s (entry %s)", f.Entry.Kind, f.Entry.ID))
		} else {
			out = append(out, f.File)
		}
	}
	return out
}

func scenarioOf(e Entry) string {
	if e.Scenario == "" {
		return "an unnamed run"
	}
	return e.Scenario
}

func failedName(f Failed) string {
	if f.Entry.ID != "" {
		return fmt.Sprintf("%s %s (entry %s)", f.Entry.Kind, f.Entry.Params, f.Entry.ID)
	}
	return f.File
}

// HealAll heals every entry left in l's ledger that no live process holds,
// removing each one it healed. The error joins every entry that failed; the
// report says what was healed either way.
func HealAll(ctx context.Context, l lab.Lab) (Report, error) {
	led, err := Open(l.StateDir())
	if err != nil {
		return Report{}, err
	}
	return led.HealAll(ctx, l)
}

// HealAll is the package-level HealAll on an opened ledger.
func (led *Ledger) HealAll(ctx context.Context, l lab.Lab) (Report, error) {
	var rep Report
	if err := led.discardUnfinished(&rep); err != nil {
		return rep, err
	}
	names, err := led.entryFiles()
	if err != nil {
		return rep, err
	}
	labName := l.Info().Name
	var errs []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("healing the ledger: %w", err)
		}
		path := filepath.Join(led.dir, name)
		if err := led.healOne(ctx, l, labName, path, &rep); err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

func (led *Ledger) healOne(ctx context.Context, l lab.Lab, labName, path string, rep *Report) error {
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil // healed by another process since the listing
	}
	if err != nil {
		rep.Failed = append(rep.Failed, Failed{File: path, Err: err})
		return fmt.Errorf("opening ledger entry %s: %w", path, err)
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			e, _ := readEntry(path)
			rep.Busy = append(rep.Busy, Busy{Entry: e})
			return nil
		}
		rep.Failed = append(rep.Failed, Failed{File: path, Err: err})
		return fmt.Errorf("locking ledger entry %s: %w", path, err)
	}
	// Another process may have healed and removed the entry between our
	// open and our lock; then the file we hold is no longer in the ledger.
	if st, err := os.Stat(path); err != nil {
		return nil
	} else if fst, err := file.Stat(); err != nil || !os.SameFile(st, fst) {
		return nil
	}
	e, err := readEntry(path)
	if err != nil {
		rep.Failed = append(rep.Failed, Failed{File: path, Err: err})
		return err
	}
	if e.Lab != labName {
		err := fmt.Errorf("entry was written for lab %q, but this is lab %q's ledger; not healed", e.Lab, labName)
		rep.Failed = append(rep.Failed, Failed{File: path, Entry: e, Err: err})
		return fmt.Errorf("ledger entry %s: %w", e.ID, err)
	}
	f, err := fault.Decode(e.Kind, e.Params)
	if err != nil {
		rep.Failed = append(rep.Failed, Failed{File: path, Entry: e, Err: err})
		return fmt.Errorf("ledger entry %s: %w", e.ID, err)
	}
	crashpoint.Reach("ledger/heal/locked")
	hctx, account := fault.WithHealAccount(ctx)
	if err := fault.HealAndRelease(hctx, l, f); err != nil {
		err = fmt.Errorf("healing %s: %w", fault.Describe(f), err)
		rep.Failed = append(rep.Failed, Failed{File: path, Entry: e, Err: err, Account: account()})
		return fmt.Errorf("ledger entry %s: %w", e.ID, err)
	}
	crashpoint.Reach("ledger/heal/healed")
	if err := os.Remove(path); err != nil {
		rep.Failed = append(rep.Failed, Failed{File: path, Entry: e, Err: err, Account: account()})
		return fmt.Errorf("removing healed ledger entry %s: %w", e.ID, err)
	}
	if err := syncDir(led.dir); err != nil {
		return err
	}
	rep.Healed = append(rep.Healed, Healed{Entry: e, Account: account()})
	return nil
}

// discardUnfinished removes temporary entry files no live process holds:
// their Record never returned, so their fault was never injected.
func (led *Ledger) discardUnfinished(rep *Report) error {
	des, err := os.ReadDir(led.dir)
	if err != nil {
		return fmt.Errorf("reading heal ledger: %w", err)
	}
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), tmpSuffix) {
			continue
		}
		path := filepath.Join(led.dir, de.Name())
		file, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if os.Remove(path) == nil {
				rep.Discarded = append(rep.Discarded, de.Name())
			}
		}
		file.Close()
	}
	return nil
}
