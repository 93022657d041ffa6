package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/lab"
)

// Timeline event kinds of the leftovers a run found in the heal ledger at
// its start: entries an earlier run left there (its heal failed, or it was
// killed after inject). Their details name the run that left the entry.
const (
	// LeftoverHealedEvent: such an entry was healed and removed; the
	// detail says what the heal found and removed.
	LeftoverHealedEvent = "leftover-healed"
	// LeftoverHealFailedEvent: such an entry could not be healed; it
	// stays, and unless the next try heals it the clean-start check
	// refuses the run.
	LeftoverHealFailedEvent = "leftover-heal-failed"
	// LeftoverHeldEvent: an entry a live process holds (its fault is
	// active in a run still going); it is left alone, and the clean-start
	// check refuses the run.
	LeftoverHeldEvent = "leftover-held"
)

// When a run heals the leftovers: before its reset, since a fault left on
// a lab whose reset is a cleanup can break that reset; and after it, for
// what could not be healed before (a host the reset brought back).
const (
	leftoversBeforeReset = "before reset"
	leftoversAfterReset  = "after reset"
)

// leftoverHealTiming is the run's timing of its leftover heals, recorded
// only when the ledger held something.
const leftoverHealTiming = "leftover-heal"

// healLeftovers heals what l's heal ledger holds that no live process
// holds, as `faultline heal` does (ledger.HealAll), when (before or after
// the reset) the run is starting. Without it one heal that failed (say,
// its commands timed out on a loaded machine) would leave its entry for
// the rest of the suite, and every later run would be refused by the
// clean-start check. What it found goes on the run's timeline, one event
// per entry, and to the progress output; an entry it cannot heal, or that
// a live process holds, stays for the clean-start check to refuse. On an
// empty ledger it does nothing and says nothing.
func (r *run) healLeftovers(ctx context.Context, l lab.Lab, when string) ledger.Report {
	start := time.Now()
	rep, err := ledger.HealAll(ctx, l)
	if rep.Empty() {
		if err != nil {
			// The ledger could not be read; the clean-start check reads it
			// again and refuses with the reason.
			r.eng.logf("%s: %s, healing what the heal ledger holds: %v", r.id, when, err)
		}
		return rep
	}
	r.timed(leftoverHealTiming, start)
	for _, h := range rep.Healed {
		r.event(LeftoverHealedEvent, fmt.Sprintf("%s: healed %s; %s", when, leftoverName(h.Entry), accountText(h.Account)))
	}
	for _, f := range rep.Failed {
		name := f.File
		if f.Entry.ID != "" {
			name = leftoverName(f.Entry)
		}
		detail := fmt.Sprintf("%s: could not heal %s: %v", when, name, f.Err)
		if !f.Account.Empty() {
			detail += "; " + accountText(f.Account)
		}
		r.event(LeftoverHealFailedEvent, detail)
	}
	for _, b := range rep.Busy {
		r.event(LeftoverHeldEvent, fmt.Sprintf("%s: left %s alone: still held by running pid %d", when, leftoverName(b.Entry), b.Entry.PID))
	}
	r.eng.logf("%s: %s, the heal ledger held what an earlier run left (healed %d, could not heal %d, held by a live process %d):\n%s",
		r.id, when, len(rep.Healed), len(rep.Failed), len(rep.Busy), indentLines(rep.String(), "  "))
	return rep
}

// checkCleanAfterReset is the clean-start check after the reset: what the
// ledger still holds is healed once more, and only what even that could
// not heal makes checkClean refuse the run, the refusal saying why each
// entry could not be healed.
func (r *run) checkCleanAfterReset(ctx context.Context, l lab.Lab) error {
	rep := r.healLeftovers(ctx, l, leftoversAfterReset)
	err := checkClean(ctx, l)
	if err == nil {
		return nil
	}
	var why []string
	names := rep.FailedNames()
	for i, f := range rep.Failed {
		why = append(why, fmt.Sprintf("%s could not be healed: %v", names[i], f.Err))
	}
	for _, b := range rep.Busy {
		why = append(why, fmt.Sprintf("entry %s is held by running pid %d", b.Entry.ID, b.Entry.PID))
	}
	if len(why) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(why, "; "))
}

// leftoverName names a ledger entry and the run that left it.
func leftoverName(e ledger.Entry) string {
	by := e.Scenario
	if by == "" {
		by = "an unnamed run"
	}
	return fmt.Sprintf("%s %s (entry %s), left by run %s (pid %d at %s)", e.Kind, e.Params, e.ID, by, e.PID, e.Time.UTC().Format(time.RFC3339))
}

// accountText says what a heal found and removed, on one line.
func accountText(a fault.HealAccount) string {
	if a.Empty() {
		return "found nothing of it in the lab (never injected, or already removed)"
	}
	var parts []string
	for _, f := range a.Found {
		parts = append(parts, "found: "+f)
	}
	for _, rm := range a.Removed {
		parts = append(parts, "removed: "+rm)
	}
	return strings.Join(parts, "; ")
}

// indentLines puts prefix before every line of s.
func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
