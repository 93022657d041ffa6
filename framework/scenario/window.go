package scenario

import (
	"context"
	"fmt"
	"slices"
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
	var probedTo time.Time
	go func() {
		defer close(probed)
		r.probeUntil(wctx, l, f)
		probedTo = time.Now()
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
	// The window the effect is measured over is the probing's: the
	// sampler may drain reads past the deadline, when no look runs.
	end := minTime(probedTo, deadline)
	changeErr := <-changed
	r.timed("window", start)
	r.mu.Lock()
	r.windowFrom, r.windowTo = start, end
	window := append([]evidence.Snapshot(nil), r.record.Window...)
	cov := effectCoverage(r.probes, 0, r.span())
	r.mu.Unlock()
	r.progress("window", start, window, fmt.Sprintf("the fault's effect seen by %d of %d probes, %.0f%% of the window", cov.Observed, cov.Probes, 100*cov.Covered))
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
	ev := evidence.Event{At: p.At.UTC(), Source: "faultline", Subject: "fault/" + r.sc.Fault.Kind(), Kind: kind, Detail: detail}
	if kind == probeEffectEvent {
		ev.Lasted = p.Effect.Lasted
	}
	r.timeline.Add(ev)
}

// Timeline event kinds of the window's effect probes: each probe's look
// is on the timeline, so that the run verdict can be decided again from a
// record.
const (
	probeEffectEvent   = "probe-effect"
	probeNoEffectEvent = "probe-no-effect"
	probeFailedEvent   = "probe-failed"
)

// span is the window as its effect coverage is measured: when the
// probing started and stopped, and how far from a look a look speaks for.
type span struct {
	From, To time.Time
	// Resolution is how far either side of a look the look speaks for:
	// half the engine's tick (lookReach).
	Resolution time.Duration
}

// lookReach is how far either side of its moment a look at the fault's
// effect speaks for: half a tick. The engine means to look once per tick
// (probeUntil), so looks at that cadence speak for the whole window, and a
// window whose looks came less often (slow looks, a loaded machine, looks
// that could not look) is shown under the fault only where they were. A
// look that saw the effect hold over a stretch (fault.Effect.Lasted)
// speaks for that stretch as well.
func lookReach(sampleEvery time.Duration) time.Duration { return sampleEvery / 2 }

func (w span) known() bool { return w.To.After(w.From) && w.Resolution > 0 }

// span is the run's window (zero until the window ran). Callers hold r.mu.
func (r *run) span() span {
	return span{From: r.windowFrom, To: r.windowTo, Resolution: lookReach(r.eng.cfg.SampleEvery)}
}

// effectCoverage counts what the window's probes saw and, when the
// window w is known, the share of it they attest (attested). required is
// the share the run needs, recorded beside them.
func effectCoverage(probes []probe, required float64, w span) verdict.EffectCoverage {
	c := verdict.EffectCoverage{Probes: len(probes), Required: required}
	for _, p := range probes {
		switch {
		case p.Err != nil:
			c.Failed++
		case p.Effect.Observed:
			c.Observed++
		}
	}
	if w.known() {
		c.Window, c.Resolution = verdict.Duration(w.To.Sub(w.From)), verdict.Duration(w.Resolution)
		c.Covered = attested(probes, w)
	}
	return c
}

// attested is the share of the window w that the looks which saw the
// effect speak for: each the stretch it saw the effect hold (Lasted
// before its moment, none for a look of one moment) widened by
// w.Resolution either side, cut halfway to the nearest look on either
// side that did not see the effect or could not look, and clipped to the
// window. A look that could not look is unknown, and unknown is not the
// fault holding: it speaks for nothing and stops its neighbours' reach.
// Counting probes instead would let one look stand for a whole window
// whenever a loaded machine stretched the probe cadence: the share is of
// time, not of looks.
func attested(probes []probe, w span) float64 {
	if !w.known() {
		return 0
	}
	ps := slices.Clone(probes)
	slices.SortStableFunc(ps, func(a, b probe) int { return a.At.Compare(b.At) })
	seen := func(p probe) bool { return p.Err == nil && p.Effect.Observed }
	type stretch struct{ lo, hi time.Time }
	var ss []stretch
	for i, p := range ps {
		if !seen(p) {
			continue
		}
		from := p.At.Add(-max(p.Effect.Lasted, 0))
		lo, hi := from.Add(-w.Resolution), p.At.Add(w.Resolution)
		for j := i - 1; j >= 0; j-- {
			if !seen(ps[j]) {
				cut := ps[j].At
				if cut.Before(from) {
					cut = cut.Add(from.Sub(cut) / 2)
				}
				if cut.After(lo) {
					lo = cut
				}
				break
			}
		}
		for j := i + 1; j < len(ps); j++ {
			if !seen(ps[j]) {
				if mid := p.At.Add(ps[j].At.Sub(p.At) / 2); mid.Before(hi) {
					hi = mid
				}
				break
			}
		}
		lo, hi = maxTime(lo, w.From), minTime(hi, w.To)
		if hi.After(lo) {
			ss = append(ss, stretch{lo, hi})
		}
	}
	slices.SortFunc(ss, func(a, b stretch) int { return a.lo.Compare(b.lo) })
	var sum time.Duration
	var end time.Time
	for _, s := range ss {
		s.lo = maxTime(s.lo, end)
		if s.hi.After(s.lo) {
			sum += s.hi.Sub(s.lo)
			end = s.hi
		}
	}
	return float64(sum) / float64(w.To.Sub(w.From))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
