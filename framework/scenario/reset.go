package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/lab"
)

// The reset phase (PhaseReset): the sampler is told which run it samples
// for, what earlier runs left in the heal ledger is healed (leftovers.go),
// the lab goes back to its clean state, is checked to start clean (an
// empty heal ledger, up), Suite.Prepare installs what the scenario needs,
// and the baseline snapshot is taken. It hands the pre-fault phase the
// baseline.

// reset runs PhaseReset: it tells the sampler the run, resets the lab,
// checks it starts clean, runs Suite.Prepare and returns the baseline
// snapshot.
func (r *run) reset(ctx context.Context) (evidence.Snapshot, error) {
	st := r.eng
	l := st.lab
	r.enter(PhaseReset)
	defer r.timed("reset", time.Now())
	if rs, ok := st.cfg.Sampler.(evidence.RunSampler); ok {
		rs.BeginRun(r.sampled())
	}
	r.healLeftovers(ctx, l, leftoversBeforeReset)
	if err := l.Reset(ctx); err != nil {
		return evidence.Snapshot{}, r.fail("reset", err)
	}
	r.event("lab-reset", "")
	if err := r.checkCleanAfterReset(ctx, l); err != nil {
		return evidence.Snapshot{}, r.fail("clean-start check", err)
	}
	if st.cfg.Prepare != nil {
		if err := st.cfg.Prepare(ctx, l, r.sc); err != nil {
			return evidence.Snapshot{}, r.fail("prepare", err)
		}
	}
	baseline, events, err := st.cfg.Sampler.Sample(ctx, l)
	if err != nil {
		return evidence.Snapshot{}, r.fail("baseline snapshot", err)
	}
	r.addEvents(events)
	r.complete(PhaseReset)
	return baseline, nil
}

// checkClean refuses to start a run on a lab that still holds a fault in
// its ledger, or that says it is not up.
func checkClean(ctx context.Context, l lab.Lab) error {
	led, err := ledger.Open(l.StateDir())
	if err != nil {
		return err
	}
	entries, err := led.Entries()
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		b, _ := json.Marshal(entries)
		return fmt.Errorf("the heal ledger still holds %d entries after reset: %s", len(entries), b)
	}
	status, err := l.Status(ctx)
	if err != nil {
		return fmt.Errorf("asking the lab's status: %w", err)
	}
	if !status.Up {
		return fmt.Errorf("lab %s is not up after reset", status.Info.Name)
	}
	return nil
}

// sampled is the run as the sampler is told it (evidence.Run): its ID,
// scenario, arm and the labels its record keeps.
func (r *run) sampled() evidence.Run {
	return evidence.Run{ID: r.id, Scenario: r.sc.ID, Arm: string(r.sc.arm()), Labels: sortedLabels(r.sc)}
}
