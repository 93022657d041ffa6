package scenario

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/lab"
)

// The inject phase (PhaseInject): the fault is written to the heal ledger
// and synced, the caller's last-resort heal armed, and the fault injected.
// It hands the window the ledger entry (state.active) and the moment
// inject began, from which on the evidence falls in the window.

// inject runs PhaseInject: the fault is written to the heal ledger and
// synced, armed is called (the caller registers its last-resort heal
// there, so that a partial inject is healed too), and the fault injected.
// An error for a fault the lab cannot run is a *stepError marked
// unsupported.
func (r *run) inject(ctx context.Context, armed func()) error {
	l := r.eng.lab
	f := r.sc.injected()
	r.enter(PhaseInject)
	led, err := ledger.Open(l.StateDir())
	if err != nil {
		return r.fail("heal ledger", err)
	}
	// Written and synced before inject: a crash from here on leaves the
	// entry for the next start to heal.
	crashpoint.Reach("run/inject/before-record")
	active, err := led.Record(f, l.Info().Name, r.id)
	if err != nil {
		return r.fail("heal ledger", err)
	}
	r.mu.Lock()
	r.st.active = active
	r.mu.Unlock()
	r.event("ledger-recorded", active.ID)
	if armed != nil {
		armed()
	}
	crashpoint.Reach("run/inject/recorded")
	start := time.Now()
	r.mu.Lock()
	r.injectStarted = start
	r.mu.Unlock()
	err = f.Inject(ctx, l)
	if err == nil {
		crashpoint.Reach("run/inject/injected")
	}
	r.timed("inject", start)
	if err != nil {
		r.event("fault-inject-failed", err.Error())
		if errors.Is(err, lab.ErrUnsupported) {
			// Not a verdict and not a failure of the run: the lab cannot
			// do what the fault needs. The run record is ABORTED with the
			// reason, so it never counts.
			e := r.fail("inject", fmt.Errorf("the lab cannot run this fault, so this run reaches no verdict: %s: %w", fault.Describe(f), err))
			e.unsupported = true
			return e
		}
		return r.fail("inject", fmt.Errorf("%s: %w", fault.Describe(f), err))
	}
	r.event(invariant.FaultInjectedEvent, fault.Describe(f))
	r.complete(PhaseInject)
	return nil
}
