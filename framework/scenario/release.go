package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// The release phase (PhaseRelease): a lingering fault (fault.Lingering),
// whose damage had to last through settling, is released once the run is
// judged, and its ledger entry removed. It hands done a lab the fault has
// left, or the entry kept for the next start.

// release runs PhaseRelease once: it releases a lingering fault once its
// run has been judged, and then removes its ledger entry; for any other
// fault heal already did all of it. A failed release keeps the entry for
// the next start or `faultline heal`. It does nothing when heal did not
// succeed: the entry then stays whole, and healing it from the ledger
// releases it too.
func (r *run) release(ctx context.Context, l lab.Lab) error {
	r.act.Lock()
	defer r.act.Unlock()
	if !r.ranWhole(PhaseHeal) || !r.enter(PhaseRelease) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.st.releaseErr
	}
	r.mu.Lock()
	active := r.st.active
	r.mu.Unlock()
	lf, lingers := r.sc.injected().(fault.Lingering)
	if !lingers {
		r.complete(PhaseRelease)
		return nil
	}
	start := time.Now()
	err := lf.Release(ctx, l)
	if err == nil {
		crashpoint.Reach("run/release/released")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timings["release"] += time.Since(start).Seconds()
	if err != nil {
		r.st.releaseErr = fmt.Errorf("releasing what %s left after heal: %w (it stays in the heal ledger for the next start or `faultline heal`)", fault.Describe(lf), err)
		if kerr := active.Keep(); kerr != nil {
			r.st.releaseErr = fmt.Errorf("%w; releasing its ledger entry: %v", r.st.releaseErr, kerr)
		}
		r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: "release-failed", Detail: err.Error()})
		return r.st.releaseErr
	}
	r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: "fault-released", Detail: fault.Describe(lf)})
	if derr := active.Done(); derr != nil {
		r.st.releaseErr = fmt.Errorf("released, but %w", derr)
	}
	r.st.whole[PhaseRelease] = r.st.releaseErr == nil
	return r.st.releaseErr
}
