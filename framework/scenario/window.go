package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// The window phase (PhaseWindow): sampling, and probing the fault's
// effect, for the scenario's window while the fault is in place, and
// making the scenario's change at its moment. It hands heal the window's
// samples in the record, and the run verdict the probes (effectCoverage
// counts what they saw).

// probe is one look of the effect probe during the window.
type probe struct {
	At     time.Time
	Effect fault.Effect
	Err    error
}

// window runs PhaseWindow: it samples and probes for the scenario's
// window. A ctx that ends first cuts the run short (it is then ABORTED).
func (r *run) window(ctx context.Context) {
	st := r.eng
	l := st.lab
	f := r.sc.injected()
	r.enter(PhaseWindow)
	start := time.Now()
	deadline := start.Add(r.sc.Window)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The probes run beside the sampling, at the same interval, so a
	// probe that takes long delays no snapshot (and the reverse).
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		r.probeUntil(wctx, l, f)
	}()
	changed := make(chan error, 1)
	go func() { changed <- r.makeChange(wctx, l, start) }()
	evidence.Stream(wctx, st.cfg.Sampler, l, st.cfg.SampleEvery, func(snap evidence.Snapshot, events []evidence.Event, err error) bool {
		if err != nil {
			r.sampleFailed(snap.Taken, err.Error())
			return true
		}
		r.addEvents(events)
		r.mu.Lock()
		r.record.Window = append(r.record.Window, snap)
		r.mu.Unlock()
		return true
	})
	cancel()
	<-probed
	changeErr := <-changed
	r.timed("window", start)
	r.mu.Lock()
	window := append([]evidence.Snapshot(nil), r.record.Window...)
	cov := effectCoverage(r.probes, 0)
	r.mu.Unlock()
	r.progress("window", start, window, fmt.Sprintf("the fault's effect seen by %d of %d probes", cov.Observed, cov.Probes))
	if ctx.Err() != nil {
		r.interrupt(fmt.Sprintf("the run was interrupted %s into its window (%v)", time.Since(start).Round(time.Millisecond), context.Cause(ctx)))
		return
	}
	if changeErr != nil {
		r.fail("change", changeErr)
		return
	}
	// The safety invariants are judged after settle, over the window,
	// heal and settle samples: a hazard can fall at heal.
	r.complete(PhaseWindow)
}

// makeChange makes the scenario's change, if it has one, its After into
// the window that started at start; nil when there is none.
func (r *run) makeChange(ctx context.Context, l lab.Lab, start time.Time) error {
	c := r.sc.Change
	if c == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("change %q: the window ended before its moment", c.Name)
	case <-time.After(time.Until(start.Add(c.After))):
	}
	r.event(ChangeStartedEvent, c.Name)
	if err := c.Make(ctx, l); err != nil {
		r.event(ChangeFailedEvent, c.Name+": "+err.Error())
		return fmt.Errorf("change %q: %w", c.Name, err)
	}
	r.event(ChangeMadeEvent, c.Name)
	return nil
}

// probeUntil asks the fault for its effect at the suite's interval until
// ctx ends. A probe cut short by ctx is not counted.
func (r *run) probeUntil(ctx context.Context, l lab.Lab, f fault.Fault) {
	t := time.NewTicker(r.eng.cfg.SampleEvery)
	defer t.Stop()
	for {
		eff, err := f.Probe(ctx, l)
		if ctx.Err() != nil {
			return
		}
		r.addProbe(probe{At: time.Now(), Effect: eff, Err: err})
		crashpoint.Reach("run/window/probed")
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *run) addProbe(p probe) {
	r.mu.Lock()
	r.probes = append(r.probes, p)
	r.mu.Unlock()
	detail := p.Effect.Detail
	kind := probeNoEffectEvent
	switch {
	case p.Err != nil:
		kind, detail = probeFailedEvent, p.Err.Error()
	case p.Effect.Observed:
		kind = probeEffectEvent
	}
	r.timeline.Add(evidence.Event{At: p.At.UTC(), Source: "faultline", Subject: "fault/" + r.sc.Fault.Kind(), Kind: kind, Detail: detail})
}

// Timeline event kinds of the window's effect probes: each probe's look
// is on the timeline, so that the run verdict can be decided again from a
// record.
const (
	probeEffectEvent   = "probe-effect"
	probeNoEffectEvent = "probe-no-effect"
	probeFailedEvent   = "probe-failed"
)

// effectCoverage counts what the window's probes saw. required is the
// share the run needs to count; a null arm needs none (pass 0).
func effectCoverage(probes []probe, required float64) verdict.EffectCoverage {
	c := verdict.EffectCoverage{Probes: len(probes), Required: required}
	for _, p := range probes {
		switch {
		case p.Err != nil:
			c.Failed++
		case p.Effect.Observed:
			c.Observed++
		}
	}
	return c
}
