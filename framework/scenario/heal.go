package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/lab"
)

// The heal phase (PhaseHeal): the fault's Heal runs once, whoever asks
// first, sampling while it runs; its ledger entry is removed when it
// healed (a lingering fault's is left for release) and kept when it did
// not. It hands settle a healed lab, the heal samples in the record, and
// the moments heal began and ended.

// heal runs PhaseHeal once, whoever asks first (the end of the run, or
// the cleanup that stands in when the end cannot run), and settles the
// fault's ledger entry: removed when healed, kept for the next start if
// not. With a sampler it also samples, at the suite's interval, while the
// fault's Heal runs, and keeps those snapshots as the record's heal
// samples: a hazard can fall at heal. Nothing is healed before a ledger
// entry was written, as nothing was injected then.
func (r *run) heal(ctx context.Context, l lab.Lab, sampler evidence.Sampler) error {
	r.act.Lock()
	defer r.act.Unlock()
	r.mu.Lock()
	active := r.st.active
	r.mu.Unlock()
	if active == nil || !r.enter(PhaseHeal) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.st.healErr
	}
	f := r.sc.injected()
	start := time.Now()
	r.mu.Lock()
	r.healStarted = start
	r.mu.Unlock()
	r.timeline.Add(evidence.Event{At: start.UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: invariant.HealStartedEvent, Detail: fault.Describe(f)})
	stop, sampled := make(chan struct{}), make(chan []evidence.Snapshot, 1)
	if sampler != nil {
		go func() { sampled <- r.sampleUntil(ctx, l, sampler, stop) }()
	} else {
		sampled <- nil
	}
	crashpoint.Reach("run/heal/started")
	err := f.Heal(ctx, l)
	if err == nil {
		crashpoint.Reach("run/heal/healed")
	}
	// Stopped before the end is stamped, so every heal sample was begun
	// while heal ran.
	close(stop)
	ended := time.Now()
	heal := <-sampled
	r.mu.Lock()
	defer r.mu.Unlock()
	r.healEnded = ended
	r.record.Heal = append(r.record.Heal, heal...)
	r.progress("heal", start, heal, "")
	r.timings["heal"] += ended.Sub(start).Seconds()
	if err != nil {
		r.st.healErr = fmt.Errorf("healing %s: %w (it stays in the heal ledger for the next start or `faultline heal`)", fault.Describe(f), err)
		if kerr := active.Keep(); kerr != nil {
			r.st.healErr = fmt.Errorf("%w; releasing its ledger entry: %v", r.st.healErr, kerr)
		}
		r.timeline.Add(evidence.Event{At: ended.UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: "heal-failed", Detail: err.Error()})
		return r.st.healErr
	}
	r.timeline.Add(evidence.Event{At: ended.UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: invariant.FaultHealedEvent, Detail: fault.Describe(f)})
	if _, lingers := f.(fault.Lingering); !lingers {
		// Nothing is left to release.
		if derr := active.Done(); derr != nil {
			r.st.healErr = fmt.Errorf("fault healed, but %w", derr)
		}
	}
	if r.st.healErr == nil {
		r.st.whole[PhaseHeal] = true
	}
	return r.st.healErr
}

// sampleUntil takes snapshots at the suite's interval until stop is
// closed, and returns them. It runs while the main goroutine is inside a
// fault's Heal, so the sampler still has one user at a time; it touches
// nothing r.mu guards (heal holds it meanwhile).
func (r *run) sampleUntil(ctx context.Context, l lab.Lab, sampler evidence.Sampler, stop <-chan struct{}) []evidence.Snapshot {
	var out []evidence.Snapshot
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-sctx.Done():
		}
	}()
	evidence.Stream(sctx, sampler, l, r.eng.cfg.SampleEvery, func(snap evidence.Snapshot, events []evidence.Event, err error) bool {
		if err != nil {
			r.sampleFailed(snap.Taken, "while healing: "+err.Error())
			return true
		}
		r.addEvents(events)
		out = append(out, snap)
		return true
	})
	return out
}
