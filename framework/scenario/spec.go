package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/matchers"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// registerScenario builds one scenario's spec in the shape DESIGN.md gives:
// BeforeEach reset/baseline/pre-fault judgement, JustBeforeEach
// ledger-then-inject, It the window and the safety invariants, AfterEach
// heal/settle/final and the convergence invariants, ReportAfterEach the run
// record.
func registerScenario(st *suiteState, sc Scenario) {
	labels := append(sc.AutoLabels(), sc.Labels...)
	Describe(fmt.Sprintf("%s [%s]", sc.ID, sc.arm()), Serial, Label(labels...), func() {
		var r *run

		BeforeEach(func(ctx SpecContext) {
			r = nil
			l := st.lab
			if sc.Topology != "" && l.Info().Topology != sc.Topology {
				Skip(fmt.Sprintf("scenario %s needs topology %s; lab %s is %s", sc.ID, sc.Topology, l.Info().Name, l.Info().Topology))
			}
			r = newRun(sc, st, time.Now())
			start := time.Now()
			var resetTimed bool
			timeReset := func() {
				if !resetTimed {
					resetTimed = true
					r.timed("reset", start)
				}
			}
			defer timeReset()
			if err := l.Reset(ctx); err != nil {
				Fail(r.abort("reset", err))
			}
			r.event("lab-reset", "")
			if err := checkClean(ctx, st); err != nil {
				Fail(r.abort("clean-start check", err))
			}
			if st.cfg.Prepare != nil {
				if err := st.cfg.Prepare(ctx, l); err != nil {
					Fail(r.abort("prepare", err))
				}
			}
			baseline, events, err := st.cfg.Sampler.Sample(ctx, l)
			if err != nil {
				Fail(r.abort("baseline snapshot", err))
			}
			r.addEvents(events)
			timeReset()
			preFault, err := r.samplePreFault(ctx, baseline)
			r.mu.Lock()
			r.record.Baseline = &baseline
			r.record.PreFault = preFault
			r.mu.Unlock()
			if err != nil {
				Fail(r.abort("pre-fault window", err))
			}
			r.judgePreFault(st.cfg.Applicability, baseline, preFault)
			fmt.Fprintf(GinkgoWriter, "%s: reset, baseline taken at %s, %d pre-fault samples after it\n", r.id, baseline.Taken.UTC().Format(time.RFC3339Nano), len(preFault))
		})

		JustBeforeEach(func(ctx SpecContext) {
			l := st.lab
			f := sc.injected()
			led, err := ledger.Open(l.StateDir())
			if err != nil {
				Fail(r.abort("heal ledger", err))
			}
			// Written and synced before inject: a crash from here on
			// leaves the entry for the next start to heal.
			active, err := led.Record(f, l.Info().Name, r.id)
			if err != nil {
				Fail(r.abort("heal ledger", err))
			}
			r.mu.Lock()
			r.active = active
			r.mu.Unlock()
			r.event("ledger-recorded", active.ID)
			// Registered before inject so a partial inject is healed too.
			// AfterEach heals first in the normal course; this is the net
			// for when it cannot (its heal is done at most once).
			this := r
			DeferCleanup(func(ctx SpecContext) {
				this.mu.Lock()
				done := this.healed
				this.mu.Unlock()
				if !done {
					if err := this.heal(ctx, l, nil); err != nil {
						Fail(this.abort("heal", err))
					}
				}
				// AfterEach releases after judging; when it could not,
				// nothing is judged any more and the release is due now.
				if err := this.release(ctx, l); err != nil {
					Fail(err.Error())
				}
			})
			start := time.Now()
			r.mu.Lock()
			r.injectStarted = start
			r.mu.Unlock()
			err = f.Inject(ctx, l)
			r.timed("inject", start)
			if err != nil {
				r.event("fault-inject-failed", err.Error())
				if errors.Is(err, lab.ErrUnsupported) {
					// Not a verdict and not a failure of the run: the lab
					// cannot do what the fault needs, and the spec says so
					// as a skip with the reason; the run record is ABORTED
					// with the same reason, so it never counts.
					Skip(r.abort("inject", fmt.Errorf("the lab cannot run this fault, so this run reaches no verdict: %s: %w", fault.Describe(f), err)))
				}
				Fail(r.abort("inject", fmt.Errorf("%s: %w", fault.Describe(f), err)))
			}
			r.event(invariant.FaultInjectedEvent, fault.Describe(f))
		})

		It(sc.Title, func(ctx SpecContext) {
			l := st.lab
			f := sc.injected()
			start := time.Now()
			deadline := start.Add(sc.Window)
			for {
				snap, events, err := st.cfg.Sampler.Sample(ctx, l)
				if ctx.Err() != nil {
					break
				}
				if err != nil {
					r.event("sample-failed", err.Error())
				} else {
					r.addEvents(events)
					r.mu.Lock()
					r.record.Window = append(r.record.Window, snap)
					r.mu.Unlock()
				}
				eff, err := f.Probe(ctx, l)
				if ctx.Err() != nil {
					break
				}
				r.addProbe(probe{At: time.Now(), Effect: eff, Err: err})
				if !time.Now().Before(deadline) {
					break
				}
				if !sleepCtx(ctx, min(st.cfg.SampleEvery, time.Until(deadline))) {
					break
				}
			}
			r.timed("window", start)
			if ctx.Err() != nil {
				r.mu.Lock()
				r.interrupted = fmt.Sprintf("the run was interrupted %s into its window (%v)", time.Since(start).Round(time.Millisecond), context.Cause(ctx))
				r.mu.Unlock()
				return
			}
			// The safety invariants are judged after settle, over the
			// window, heal and settle samples: a hazard can fall at heal.
			r.mu.Lock()
			r.watched = true
			r.mu.Unlock()
		})

		AfterEach(func(ctx SpecContext) {
			if r == nil {
				return
			}
			l := st.lab
			if CurrentSpecReport().State.Is(types.SpecStateInterrupted | types.SpecStateTimedout | types.SpecStateAborted) {
				r.mu.Lock()
				if r.interrupted == "" {
					r.interrupted = "the run was " + CurrentSpecReport().State.String()
				}
				r.mu.Unlock()
			}
			// Injected, not interrupted, yet the It never reached the end
			// of its window: something in the window failed or panicked.
			r.mu.Lock()
			brokenWindow := r.active != nil && r.aborted == "" && r.interrupted == "" && !r.watched
			r.mu.Unlock()
			if brokenWindow {
				r.abort("window", fmt.Errorf("the It ended before its window did (%s: %s)", CurrentSpecReport().State, CurrentSpecReport().Failure.Message))
			}
			var healSampler evidence.Sampler
			if r.isWatched() {
				healSampler = st.cfg.Sampler
			}
			healErr := r.heal(ctx, l, healSampler)
			if healErr != nil {
				r.abort("heal", healErr)
			}
			var convergenceFailures, safetyFailures []string
			r.mu.Lock()
			settle := r.aborted == "" && r.interrupted == "" && r.active != nil
			r.mu.Unlock()
			if settle {
				convergenceFailures = r.settleAndJudge(ctx)
			}
			// Judged even when heal failed (the run is ABORTED then, but
			// its record shows what the evidence says); never after an
			// interruption, which left the evidence cut short.
			var controlFailures []string
			if r.isWatched() && !r.isInterrupted() {
				safetyFailures = r.judgeSafety()
				controlFailures = r.controlsDecidedBeforeTheFault()
			}
			// A lingering fault's damage had to last through settling; the
			// verdicts are in, so it goes now.
			releaseErr := r.release(ctx, l)
			r.mu.Lock()
			r.ended = time.Now()
			r.mu.Unlock()
			out := r.finish(CurrentSpecReport().State.String())
			for _, j := range out.Judgements {
				AddReportEntry("verdict "+j.Invariant, string(j.Verdict), ReportEntryVisibilityNever)
			}
			AddReportEntry("run verdict", string(out.RunVerdict), ReportEntryVisibilityNever)
			if err := st.folder.WriteEvidence(r.id, r.record); err != nil {
				fmt.Fprintf(GinkgoWriter, "%v\n", err)
			}
			fmt.Fprintf(GinkgoWriter, "%s: %s %s\n", r.id, out.RunVerdict, out.RunReason)
			switch {
			case healErr != nil:
				Fail(fmt.Sprintf("heal failed: %v", healErr))
			case releaseErr != nil:
				Fail(fmt.Sprintf("release failed: %v", releaseErr))
			case len(safetyFailures)+len(convergenceFailures)+len(controlFailures) > 0:
				var parts []string
				if len(safetyFailures) > 0 {
					parts = append(parts, violations("safety", safetyFailures))
				}
				if len(convergenceFailures) > 0 {
					parts = append(parts, violations("convergence", convergenceFailures))
				}
				parts = append(parts, controlFailures...)
				Fail(strings.Join(parts, "\n\n"))
			}
		})

		ReportAfterEach(func(report SpecReport) {
			if r == nil {
				return
			}
			r.mu.Lock()
			cut := r.finished == nil
			r.mu.Unlock()
			if cut {
				// AfterEach did not get to the end: its judgement is incomplete.
				r.abort("heal and settle", fmt.Errorf("AfterEach ended early (%s: %s)", report.State, report.Failure.Message))
			}
			out := r.finish(report.State.String())
			if err := st.folder.AppendRun(out); err != nil {
				fmt.Fprintf(GinkgoWriter, "%v\n", err)
				// The run is lost from verdicts.jsonl; say so loudly.
				AbortSuite(fmt.Sprintf("could not record run %s: %v", out.RunID, err))
			}
			r = nil
		})
	})
}

// settleAndJudge samples until every convergence invariant has settled or
// the settle timeout ends, and judges each convergence invariant with its
// matcher over the first sample in which it settled (neither violated nor
// short of evidence), or over the last sample, the final snapshot, when it
// never did. It returns the failure messages.
//
// Judging each invariant over the sample in which it settled, rather than
// all of them over the last one, matters when one of them never settles
// (a finding, or a positive control of a convergence invariant): the loop
// then runs to the timeout, and a source that happens to be slow at that
// last moment would otherwise decide every other convergence invariant,
// which had long since converged. Every settle sample is kept in the
// record beside the final snapshot: the safety invariants are judged over
// them too.
func (r *run) settleAndJudge(ctx context.Context) []string {
	st := r.suite
	l := st.lab
	start := time.Now()
	deadline := start.Add(r.sc.Settle)
	var final *evidence.Snapshot
	var all []*evidence.Snapshot
	var lastErr error
	settledIn := map[string]*evidence.Snapshot{}
	for {
		snap, events, err := st.cfg.Sampler.Sample(ctx, l)
		if err == nil {
			r.addEvents(events)
			final = &snap
			all = append(all, final)
			newly, done := r.settle(final, settledIn)
			for _, name := range newly {
				r.event("invariant-settled", fmt.Sprintf("%s, in the sample taken at %s, %s after heal",
					name, snap.Taken.UTC().Format("15:04:05.000"), time.Since(start).Round(time.Millisecond)))
			}
			if done {
				r.event("settled", fmt.Sprintf("after %s", time.Since(start).Round(time.Millisecond)))
				break
			}
		} else {
			lastErr = err
		}
		if !time.Now().Before(deadline) {
			r.event("settle-timeout", fmt.Sprintf("not converged within %s: %s", r.sc.Settle, strings.Join(names(r.unsettled(settledIn)), ", ")))
			break
		}
		if !sleepCtx(ctx, min(st.cfg.SampleEvery, time.Until(deadline))) {
			break
		}
	}
	r.timed("settle", start)
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
	baseline := r.record.Baseline
	// What came before the judged sample: the convergence invariants
	// decide from the sample judged, which they are handed last, and read
	// the earlier ones only to say whether the lab left its baseline at
	// all (whether they were exercised).
	var before []evidence.Snapshot
	before = append(before, r.record.Window...)
	before = append(before, r.record.Heal...)
	r.mu.Unlock()
	tl := r.timeline.Timeline()
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
		return invariant.Input{Moment: invariant.Final, Snapshots: snaps, Timeline: tl, Baseline: baseline}
	})
	r.mu.Lock()
	for name, j := range r.decided {
		if j.Phase == verdict.Convergence && j.Verdict == verdict.Violated {
			j.Reason += fmt.Sprintf(" (still so when the settle timeout of %s ran out after heal)", r.sc.Settle)
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
	in := invariant.Input{Moment: invariant.WindowToSettle, Snapshots: snaps, Timeline: r.timeline.Timeline(), Baseline: baseline}
	return r.assert(verdict.Safety, in)
}

// samplePreFault samples after the baseline, at the suite's interval,
// until the pre-fault window is long enough for every invariant judged to
// be able to fire (preFaultLength). Samples that fail are noted and do
// not count; when the window cannot be made long enough within twice its
// length and ten rounds more, it returns what it has and an error: a
// shorter window could not show the breakage the check is for.
func (r *run) samplePreFault(ctx context.Context, baseline evidence.Snapshot) ([]evidence.Snapshot, error) {
	st := r.suite
	every := st.cfg.SampleEvery
	rounds, span := preFaultLength(r.applicable(st.cfg.Applicability), every)
	need := max(span, time.Duration(rounds)*every)
	start := time.Now()
	defer r.timed("pre-fault", start)
	deadline := start.Add(2*need + 10*every)
	var out []evidence.Snapshot
	failed := 0
	for !preFaultLongEnough(baseline, out, rounds, span) {
		if !time.Now().Before(deadline) {
			return out, fmt.Errorf("%d samples in %s (%d failed), short of the %d rounds spanning more than %s after the baseline that every invariant needs to be able to fire",
				len(out), time.Since(start).Round(time.Millisecond), failed, rounds, span)
		}
		if !sleepCtx(ctx, every) {
			return out, fmt.Errorf("interrupted after %d samples: %w", len(out), context.Cause(ctx))
		}
		snap, events, err := st.cfg.Sampler.Sample(ctx, st.lab)
		if ctx.Err() != nil {
			return out, fmt.Errorf("interrupted after %d samples: %w", len(out), context.Cause(ctx))
		}
		if err != nil {
			failed++
			r.event("sample-failed", "in the pre-fault window: "+err.Error())
			continue
		}
		r.addEvents(events)
		out = append(out, snap)
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
	for _, name := range r.sc.ControlOf {
		if j, ok := r.decided[name]; ok && (j.Verdict == verdict.NotApplicable || j.Verdict == verdict.DetectorInvalid) {
			out = append(out, fmt.Sprintf("positive control of %s: it was %s before the fault, so the control shows nothing: %s", name, j.Verdict, j.Reason))
		}
	}
	return out
}

func (r *run) isWatched() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watched
}

func (r *run) isInterrupted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.interrupted != ""
}

// settle judges, over snap, every convergence invariant still to be judged
// that has not settled in an earlier sample, and notes snap in settledIn
// for those it settles: neither violated nor short of evidence. Right
// after a heal the sources are often still unreadable (API servers
// reconnecting to etcd, a VIP moving back); a sample that merely shows no
// violation would give INSUFFICIENT_DATA for what a few seconds more would
// have answered, so it does not settle the invariant. It returns the names
// settled by snap, and whether every one has settled now. An invariant
// short of evidence for good costs the whole settle bound.
func (r *run) settle(snap *evidence.Snapshot, settledIn map[string]*evidence.Snapshot) (newly []string, all bool) {
	in := invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{*snap}, Timeline: r.timeline.Timeline(), Baseline: r.record.Baseline}
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
		if slices.Contains(r.sc.ControlOf, inv.Name()) {
			// A positive control: the breakage is what it must show.
			g.Expect(in).NotTo(m, "positive control of %s", inv.Name())
		} else {
			g.Expect(in).To(m)
		}
		if j, ok := m.Judgement(); ok {
			j.During = r.during(j, in)
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

func (r *run) addProbe(p probe) {
	r.mu.Lock()
	r.probes = append(r.probes, p)
	r.mu.Unlock()
	detail := p.Effect.Detail
	kind := "probe-no-effect"
	switch {
	case p.Err != nil:
		kind, detail = "probe-failed", p.Err.Error()
	case p.Effect.Observed:
		kind = "probe-effect"
	}
	r.timeline.Add(evidence.Event{At: p.At.UTC(), Source: "faultline", Subject: "fault/" + r.sc.Fault.Kind(), Kind: kind, Detail: detail})
}

// checkClean refuses to start a run on a lab that still holds a fault in
// its ledger, or that says it is not up.
func checkClean(ctx context.Context, st *suiteState) error {
	led, err := ledger.Open(st.lab.StateDir())
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
	status, err := st.lab.Status(ctx)
	if err != nil {
		return fmt.Errorf("asking the lab's status: %w", err)
	}
	if !status.Up {
		return fmt.Errorf("lab %s is not up after reset", status.Info.Name)
	}
	return nil
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
