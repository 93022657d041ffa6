package scenario

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/matchers"
	"github.com/faultline/faultline/framework/verdict"
)

// settleResult is what PhaseSettle leaves for the judgement: the final
// snapshot, the settle samples before it, and the first sample in which
// each convergence invariant settled.
type settleResult struct {
	final     *evidence.Snapshot
	earlier   []evidence.Snapshot
	settledIn map[string]*evidence.Snapshot
}

// runSettle runs PhaseSettle: it samples until every convergence
// invariant has settled (neither violated nor short of evidence) or the
// settle timeout ends. judgeConvergence then judges each convergence
// invariant with its matcher over the first sample in which it settled,
// or over the last sample, the final snapshot, when it never did. It
// returns nil, the run aborted, when no snapshot could be taken.
//
// Judging each invariant over the sample in which it settled, rather than
// all of them over the last one, matters when one of them never settles
// (a finding, or a positive control of a convergence invariant): the loop
// then runs to the timeout, and a source that happens to be slow at that
// last moment would otherwise decide every other convergence invariant,
// which had long since converged. Every settle sample is kept in the
// record beside the final snapshot: the safety invariants are judged over
// them too.
func (r *run) runSettle(ctx context.Context) *settleResult {
	r.enter(PhaseSettle)
	st := r.eng
	l := st.lab
	if q := r.sc.Quiesce; q != nil {
		qstart := time.Now()
		r.event(QuiesceStartedEvent, "before settling")
		if err := q(ctx, l); err != nil {
			r.event(QuiesceFailedEvent, err.Error())
			r.abort("quiesce", err)
			return nil
		}
		r.event(QuiescedEvent, fmt.Sprintf("after %s", time.Since(qstart).Round(time.Millisecond)))
		r.timed("quiesce", qstart)
		r.progress("quiesce", qstart, nil, "")
	}
	start := time.Now()
	deadline := start.Add(r.sc.Settle)
	var final *evidence.Snapshot
	var all []*evidence.Snapshot
	var lastErr error
	settledIn := map[string]*evidence.Snapshot{}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	done := false
	evidence.Stream(sctx, st.cfg.Sampler, l, st.cfg.SampleEvery, func(snap evidence.Snapshot, events []evidence.Event, err error) bool {
		if err != nil {
			lastErr = err
			r.sampleFailed(snap.Taken, "while settling: "+err.Error())
			return true
		}
		r.addEvents(events)
		final = &snap
		all = append(all, final)
		newly, settled := r.settle(len(all)-1, final, settledIn)
		for _, name := range newly {
			r.event("invariant-settled", fmt.Sprintf("%s, in the sample taken at %s, %s after heal",
				name, snap.Taken.UTC().Format("15:04:05.000"), time.Since(start).Round(time.Millisecond)))
		}
		if settled {
			done = true
			r.event("settled", fmt.Sprintf("after %s", time.Since(start).Round(time.Millisecond)))
			return false
		}
		return true
	})
	if !done && ctx.Err() == nil {
		r.event("settle-timeout", fmt.Sprintf("not converged within %s: %s", r.sc.Settle, strings.Join(names(r.unsettled(settledIn)), ", ")))
	}
	r.mu.Lock()
	switch {
	case done:
		r.judging.SettleEnded = verdict.SettleEndedSettled
	case ctx.Err() == nil:
		r.judging.SettleEnded = verdict.SettleEndedTimeout
	}
	r.mu.Unlock()
	r.timed("settle", start)
	var settled []evidence.Snapshot
	for _, snap := range all {
		settled = append(settled, *snap)
	}
	more := "settled"
	if !done {
		more = "not settled"
	}
	r.progress("settle", start, settled, more)
	if final == nil {
		r.abort("final snapshot", fmt.Errorf("no snapshot could be taken while settling: %v", lastErr))
		return nil
	}
	var earlier []evidence.Snapshot
	for _, snap := range all[:len(all)-1] {
		earlier = append(earlier, *snap)
	}
	r.mu.Lock()
	r.record.Final = final
	r.record.Settle = earlier
	r.mu.Unlock()
	r.complete(PhaseSettle)
	return &settleResult{final: final, earlier: earlier, settledIn: settledIn}
}

// judgeConvergence judges the convergence invariants over what settling
// left (see runSettle), and returns the failure messages.
func (r *run) judgeConvergence(s *settleResult) []string {
	final, earlier, settledIn := s.final, s.earlier, s.settledIn
	r.mu.Lock()
	baseline := r.record.Baseline
	// What came before the judged sample: the convergence invariants
	// decide from the sample judged, which they are handed last, and read
	// the earlier ones only to say whether the lab left its baseline at
	// all (whether they were exercised).
	var before []evidence.Snapshot
	before = append(before, r.record.Window...)
	before = append(before, r.record.Heal...)
	r.mu.Unlock()
	tl := r.judgingTimeline(&r.judging.ConvergenceAt)
	r.mu.Lock()
	r.judging.SettledIn = map[string]time.Time{}
	for name, snap := range settledIn {
		r.judging.SettledIn[name] = snap.Taken.UTC()
	}
	r.mu.Unlock()
	failures := r.assertEach(verdict.Convergence, func(name string) invariant.Input {
		snap := final
		if s, ok := settledIn[name]; ok {
			snap = s
		}
		snaps := append([]evidence.Snapshot(nil), before...)
		for _, e := range earlier {
			if e.Taken.Before(snap.Taken) {
				snaps = append(snaps, e)
			}
		}
		snaps = append(snaps, *snap)
		return invariant.Input{Moment: invariant.Final, Snapshots: snaps, Timeline: tl, Baseline: baseline, FaultClasses: r.faultClasses()}
	})
	r.mu.Lock()
	for name, j := range r.decided {
		if j.Phase == verdict.Convergence && j.Verdict == verdict.Violated {
			j.Reason += fmt.Sprintf(" (still so when the settle timeout%s ran out after heal)", settleTimeoutOf(r.sc.Settle))
			r.decided[name] = j
		}
	}
	r.mu.Unlock()
	return failures
}

// judgeSafety judges every safety invariant still to be judged with its
// matcher over the window's, heal's and settle's samples (the final
// snapshot included), and returns the failure messages.
func (r *run) judgeSafety() []string {
	r.mu.Lock()
	var snaps []evidence.Snapshot
	snaps = append(snaps, r.record.Window...)
	snaps = append(snaps, r.record.Heal...)
	snaps = append(snaps, r.record.Settle...)
	if r.record.Final != nil {
		snaps = append(snaps, *r.record.Final)
	}
	baseline := r.record.Baseline
	r.mu.Unlock()
	in := invariant.Input{Moment: invariant.WindowToSettle, Snapshots: snaps, Timeline: r.judgingTimeline(&r.judging.SafetyAt), Baseline: baseline, FaultClasses: r.faultClasses()}
	return r.assert(verdict.Safety, in)
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

// controlsDecidedBeforeTheFault returns a failure for every invariant the
// scenario is a positive control of that was decided before the fault
// (NOT_APPLICABLE, DETECTOR_INVALID): a control must show VIOLATED, and
// one whose invariant was never judged under the fault shows nothing.
func (r *run) controlsDecidedBeforeTheFault() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, name := range r.sc.mustBreak() {
		if j, ok := r.decided[name]; ok && (j.Verdict == verdict.NotApplicable || j.Verdict == verdict.DetectorInvalid) {
			out = append(out, fmt.Sprintf("positive control of %s: it was %s before the fault, so the control shows nothing: %s", name, j.Verdict, j.Reason))
		}
	}
	return out
}

// settle judges, over snap, every convergence invariant still to be judged
// that has not settled in an earlier sample, and notes snap in settledIn
// for those it settles: neither violated nor short of evidence. Right
// after a heal the sources are often still unreadable (API servers
// reconnecting to etcd, a VIP moving back); a sample that merely shows no
// violation would give INSUFFICIENT_DATA for what a few seconds more would
// have answered, so it does not settle the invariant. It returns the names
// settled by snap, and whether every one has settled now. An invariant
// short of evidence for good costs the whole settle bound. k is the
// sample's place among the settle samples.
func (r *run) settle(k int, snap *evidence.Snapshot, settledIn map[string]*evidence.Snapshot) (newly []string, all bool) {
	in := invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{*snap}, Timeline: r.judgingTimeline(r.settleMoment(k)), Baseline: r.record.Baseline, FaultClasses: r.faultClasses()}
	all = true
	for _, inv := range r.unsettled(settledIn) {
		if v := invariant.Judge(inv, in).Verdict; v == verdict.Violated || v == verdict.InsufficientData {
			all = false
			continue
		}
		settledIn[inv.Name()] = snap
		newly = append(newly, inv.Name())
	}
	return newly, all
}

// unsettled returns the convergence invariants still to be judged that no
// sample has settled.
func (r *run) unsettled(settledIn map[string]*evidence.Snapshot) []invariant.Invariant {
	var out []invariant.Invariant
	for _, inv := range r.sc.Invariants {
		if _, ok := settledIn[inv.Name()]; !ok && inv.Phase() == verdict.Convergence && !r.isDecided(inv.Name()) {
			out = append(out, inv)
		}
	}
	return out
}

// names are the invariants' names.
func names(invs []invariant.Invariant) []string {
	out := make([]string, len(invs))
	for i, inv := range invs {
		out[i] = inv.Name()
	}
	return out
}

// assert judges every invariant of the phase not yet decided with its
// Preserve matcher and records each verdict. It collects the failure
// messages instead of failing at the first, so one violation never hides
// the verdicts of the others.
func (r *run) assert(phase verdict.Phase, in invariant.Input) []string {
	return r.assertEach(phase, func(string) invariant.Input { return in })
}

// assertEach is assert with each invariant judged over the input inputFor
// gives for its name.
func (r *run) assertEach(phase verdict.Phase, inputFor func(name string) invariant.Input) []string {
	var failures []string
	g := gomega.NewGomega(func(message string, _ ...int) { failures = append(failures, message) })
	for _, inv := range r.sc.Invariants {
		if inv.Phase() != phase || r.isDecided(inv.Name()) {
			continue
		}
		m := matchers.Preserve(inv)
		in := inputFor(inv.Name())
		if slices.Contains(r.sc.mustBreak(), inv.Name()) {
			// A positive control: the breakage is what it must show.
			g.Expect(in).NotTo(m, "positive control of %s", inv.Name())
		} else {
			g.Expect(in).To(m)
		}
		if j, ok := m.Judgement(); ok {
			j.During = r.during(j, in)
			if j.Verdict == verdict.Violated && slices.Contains(r.sc.mustBreak(), inv.Name()) {
				if other := verdict.OtherKind(j, r.sc.ControlKinds[inv.Name()]); other != "" {
					// The invariant broke, but not as the control
					// breaks it: its detector did not fire.
					failures = append(failures, fmt.Sprintf("positive control of %s: %s: %s", inv.Name(), other, j.Reason))
				}
			}
			r.decide(j)
		}
	}
	return failures
}

func (r *run) addEvents(events []evidence.Event) {
	for _, e := range events {
		r.timeline.Add(e)
	}
}

// Timeline event kinds of the window's effect probes: each probe's look
// is on the timeline, so that the run verdict can be decided again from a
// record.
const (
	probeEffectEvent   = "probe-effect"
	probeNoEffectEvent = "probe-no-effect"
	probeFailedEvent   = "probe-failed"
)

// settleTimeoutOf is " of <timeout>", or nothing for a timeout a record
// does not hold.
func settleTimeoutOf(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf(" of %s", d)
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

// faultClasses are the classes of what the run injects (fault.Classes),
// for the invariants judged after the fault; judging a recorded run
// again, those its record keeps.
func (r *run) faultClasses() []string {
	if r.replay != nil {
		return r.judging.FaultClasses
	}
	var out []string
	for _, c := range fault.Classes(r.sc.injected()) {
		out = append(out, string(c))
	}
	return out
}
