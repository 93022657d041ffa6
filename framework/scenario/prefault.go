package scenario

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// The pre-fault phase (PhasePreFault): sampling after the baseline until
// the window is long enough for every invariant to be able to fire, then
// deciding what the applicability table makes NOT_APPLICABLE and what the
// baseline and that window already violate (DETECTOR_INVALID). It hands
// inject a lab checked before the fault, and the judge phase those
// verdicts, already decided, and the record's baseline.

// preFault runs PhasePreFault: it samples the pre-fault window after the
// baseline, keeps both in the record, and decides what is NOT_APPLICABLE
// or DETECTOR_INVALID.
func (r *run) preFault(ctx context.Context, baseline evidence.Snapshot) error {
	st := r.eng
	r.enter(PhasePreFault)
	preFault, err := r.samplePreFault(ctx, baseline)
	r.mu.Lock()
	r.record.Baseline = &baseline
	r.record.PreFault = preFault
	r.mu.Unlock()
	if err != nil {
		return r.fail("pre-fault window", err)
	}
	r.judgePreFault(st.cfg.Applicability, baseline, preFault)
	r.complete(PhasePreFault)
	st.logf("%s: reset, baseline taken at %s, %d pre-fault samples after it", r.id, baseline.Taken.UTC().Format(time.RFC3339Nano), len(preFault))
	return nil
}

// samplePreFault samples after the baseline, at the suite's interval,
// until the pre-fault window is long enough for every invariant judged to
// be able to fire (preFaultLength). Samples that fail are noted and do
// not count; when the window cannot be made long enough within twice its
// length and ten rounds more, it returns what it has and an error: a
// shorter window could not show the breakage the check is for.
func (r *run) samplePreFault(ctx context.Context, baseline evidence.Snapshot) ([]evidence.Snapshot, error) {
	st := r.eng
	every := st.cfg.SampleEvery
	rounds, span := preFaultLength(r.applicable(st.cfg.Applicability), every)
	need := max(span, time.Duration(rounds)*every)
	start := time.Now()
	defer r.timed("pre-fault", start)
	deadline := start.Add(2*need + 10*every)
	var out []evidence.Snapshot
	failed := 0
	if !sleepCtx(ctx, every) {
		return out, fmt.Errorf("interrupted after %d samples: %w", len(out), context.Cause(ctx))
	}
	pctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	evidence.Stream(pctx, st.cfg.Sampler, st.lab, every, func(snap evidence.Snapshot, events []evidence.Event, err error) bool {
		if err != nil {
			failed++
			r.sampleFailed(snap.Taken, "in the pre-fault window: "+err.Error())
			return true
		}
		r.addEvents(events)
		out = append(out, snap)
		return !preFaultLongEnough(baseline, out, rounds, span)
	})
	switch {
	case ctx.Err() != nil:
		return out, fmt.Errorf("interrupted after %d samples: %w", len(out), context.Cause(ctx))
	case !preFaultLongEnough(baseline, out, rounds, span):
		return out, fmt.Errorf("%d samples in %s (%d failed), short of the %d rounds spanning more than %s after the baseline that every invariant needs to be able to fire",
			len(out), time.Since(start).Round(time.Millisecond), failed, rounds, span)
	}
	r.event("pre-fault-window", fmt.Sprintf("%d samples after the baseline, to %s (needed: %d rounds spanning more than %s)",
		len(out), out[len(out)-1].Taken.Sub(baseline.Taken).Round(time.Millisecond), rounds, span))
	return out, nil
}

// sleepCtx sleeps for d or until ctx ends; it reports whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// preFaultLength is how long the pre-fault window must be for every
// invariant judged to be able to fire (see invariant.Bounded): at least
// three rounds after the baseline, and for a bounded invariant a span
// from the baseline longer than its bound plus two sampling intervals.
func preFaultLength(invs []invariant.Invariant, every time.Duration) (rounds int, span time.Duration) {
	rounds = 3
	for _, inv := range invs {
		if b, ok := inv.(invariant.Bounded); ok {
			span = max(span, b.Bound()+2*every)
		}
	}
	return rounds, span
}

// preFaultLongEnough reports whether samples, taken after the baseline,
// make a pre-fault window of the length preFaultLength gives.
func preFaultLongEnough(baseline evidence.Snapshot, samples []evidence.Snapshot, rounds int, span time.Duration) bool {
	if len(samples) < rounds {
		return false
	}
	return samples[len(samples)-1].Taken.Sub(baseline.Taken) > span
}

// applicable are the scenario's invariants the applicability table does
// not exclude for its fault class.
func (r *run) applicable(table invariant.Table) []invariant.Invariant {
	var out []invariant.Invariant
	for _, inv := range r.sc.Invariants {
		if _, na := table.Lookup(r.faultClass(), inv.Name()); !na {
			out = append(out, inv)
		}
	}
	return out
}

// judgePreFault decides the invariants that are settled before the fault:
// NOT_APPLICABLE from the table, and DETECTOR_INVALID for any invariant
// the baseline and the pre-fault window after it already violate, judged
// as the window will be. One snapshot could never show that: every
// safety invariant needs two rounds or more to fire.
func (r *run) judgePreFault(table invariant.Table, baseline evidence.Snapshot, preFault []evidence.Snapshot) {
	class := r.faultClass()
	snaps := append([]evidence.Snapshot{baseline}, preFault...)
	in := invariant.Input{Moment: invariant.PreFault, Snapshots: snaps, Timeline: r.judgingTimeline(&r.judging.PreFaultAt), Baseline: &baseline}
	from, to := in.Span()
	for _, inv := range r.sc.Invariants {
		if reason, na := table.Lookup(class, inv.Name()); na {
			r.decide(verdict.Judgement{Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.NotApplicable,
				Reason: fmt.Sprintf("fault class %s cannot reach what %s reads: %s", class, inv.Name(), reason)})
			continue
		}
		j := invariant.Judge(inv, in)
		if j.Verdict == verdict.Violated {
			r.decide(verdict.Judgement{Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.DetectorInvalid,
				Reason: fmt.Sprintf("already violated before the fault, in the pre-fault window (the baseline and %d samples after it, %s to %s, %s): %s",
					len(preFault), from.UTC().Format("15:04:05.000"), to.UTC().Format("15:04:05.000"), to.Sub(from).Round(time.Millisecond), j.Reason),
				Sources: j.Sources, At: j.At, During: duringPreFault,
				Exercised: j.Exercised, Exercise: j.Exercise, Violation: j.Violation})
		}
	}
}
