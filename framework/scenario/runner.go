package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/verdict"
)

// The phases in their order: start (reset, then pre-fault), inject,
// window, and end (heal, settle, judge, release), with the last-resort
// cleanup beside them. Runner takes a scenario through them in plain Go,
// as the Ginkgo nodes of spec.go do.

// Runner runs a suite's scenarios one after another in plain Go, without
// Ginkgo: the phase algorithm the Ginkgo specs call, whole. It writes no
// run folder; each Run returns the run's record and evidence.
type Runner struct {
	eng *engine
	// Ledger is what the heal ledger held when the runner started, and
	// what was done with it.
	Ledger ledger.Report
}

// NewRunner opens the suite's lab, refuses what is not a lab of the
// suite's shape (nothing is touched then), and heals whatever the lab's
// heal ledger holds, as a suite does on start. s is checked as Register
// checks it; out, if not nil, gets a line per step.
func NewRunner(ctx context.Context, s Suite, out io.Writer) (*Runner, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, err
	}
	eng := &engine{name: s.Name, cfg: s, out: out}
	if err := eng.open(ctx); err != nil {
		return nil, err
	}
	rep, err := eng.healLedger(ctx)
	if err != nil {
		eng.lab.Close()
		return nil, err
	}
	return &Runner{eng: eng, Ledger: rep}, nil
}

// Close closes the lab.
func (rn *Runner) Close() error { return rn.eng.lab.Close() }

// Result is what one run came to.
type Result struct {
	// Record is the run's record; zero when the run was skipped before
	// it began.
	Record   verdict.Run
	Evidence evidence.Record
	// Skipped says why the run reached no verdict without failing: the
	// lab lacks the scenario's shape (no record), or the lab cannot run
	// its fault (an ABORTED record).
	Skipped string
	// Failure is why the run's spec would fail, "" if it would pass.
	Failure string
}

// Run runs one scenario through every phase. When ctx ends mid-run the
// run is cut short and ABORTED; heal, release and the record still
// happen, under a context that is not cancelled with ctx.
func (rn *Runner) Run(ctx context.Context, sc Scenario) (Result, error) {
	if err := sc.Validate(); err != nil {
		return Result{}, err
	}
	if err := rn.eng.fits(sc); err != nil {
		return Result{Skipped: err.Error()}, nil
	}
	r := newRun(sc, rn.eng, time.Now())
	after := context.WithoutCancel(ctx)
	var res Result
	failure := func(err error) {
		if res.Failure == "" && err != nil {
			res.Failure = err.Error()
		}
	}
	err := r.start(ctx)
	if err == nil {
		err = r.inject(ctx, nil)
		var se *stepError
		if errors.As(err, &se) && se.unsupported {
			res.Skipped = se.msg
			err = nil
		} else if err == nil {
			r.window(ctx)
		}
	}
	if ctx.Err() != nil {
		r.interrupt(fmt.Sprintf("the run was interrupted (%v)", context.Cause(ctx)))
	}
	failure(err)
	if msg := r.end(after, nil).failure(); msg != "" {
		failure(errors.New(msg))
	}
	failure(r.cleanup(after))
	res.Record = r.finish("")
	r.mu.Lock()
	res.Evidence = r.record
	r.mu.Unlock()
	return res, nil
}

// start runs PhaseReset and PhasePreFault.
func (r *run) start(ctx context.Context) error {
	baseline, err := r.reset(ctx)
	if err != nil {
		return err
	}
	return r.preFault(ctx, baseline)
}

// outcome is what the end of a run says of its spec.
type outcome struct {
	healErr, releaseErr                error
	safety, convergence, controlsEarly []string
}

// failure is the spec's failure message, "" when it passes: a failed heal
// or release, else every invariant that failed, listed at once.
func (o outcome) failure() string {
	switch {
	case o.healErr != nil:
		return fmt.Sprintf("heal failed: %v", o.healErr)
	case o.releaseErr != nil:
		return fmt.Sprintf("release failed: %v", o.releaseErr)
	}
	var parts []string
	if len(o.safety) > 0 {
		parts = append(parts, violations("safety", o.safety))
	}
	if len(o.convergence) > 0 {
		parts = append(parts, violations("convergence", o.convergence))
	}
	parts = append(parts, o.controlsEarly...)
	return strings.Join(parts, "\n\n")
}

// violations renders the failure messages of several invariants as one.
func violations(phase string, msgs []string) string {
	return fmt.Sprintf("%d %s invariant(s) VIOLATED (or, for a positive control, not VIOLATED):\n\n%s", len(msgs), phase, strings.Join(msgs, "\n\n"))
}

// end runs PhaseHeal to PhaseRelease. windowCut says why the window did
// not run to its end when the run was neither failed nor interrupted (a
// failure or panic in the driver); nil for a default reason.
func (r *run) end(ctx context.Context, windowCut error) outcome {
	l := r.eng.lab
	if r.isInjected() && !r.stopped() && !r.ranWhole(PhaseWindow) {
		if windowCut == nil {
			windowCut = errors.New("the window did not run to its end")
		}
		r.fail("window", windowCut)
	}
	var o outcome
	var healSampler evidence.Sampler
	watched := r.ranWhole(PhaseWindow)
	if watched {
		healSampler = r.eng.cfg.Sampler
	}
	if o.healErr = r.heal(ctx, l, healSampler); o.healErr != nil {
		r.abort("heal", o.healErr)
	}
	var settled *settleResult
	if !r.stopped() && r.isInjected() {
		settled = r.runSettle(ctx)
	}
	r.enter(PhaseJudge)
	if settled != nil {
		o.convergence = r.judgeConvergence(settled)
	}
	// Judged even when heal failed (the run is ABORTED then, but its
	// record shows what the evidence says); never after an interruption,
	// which left the evidence cut short.
	if watched && !r.isInterrupted() {
		o.safety = r.judgeSafety()
		o.controlsEarly = r.controlsDecidedBeforeTheFault()
	}
	r.complete(PhaseJudge)
	// A lingering fault's damage had to last through settling; the
	// verdicts are in, so it goes now.
	o.releaseErr = r.release(ctx, l)
	r.mu.Lock()
	r.ended = time.Now()
	r.mu.Unlock()
	return o
}

// cleanup is the last resort: it heals what is still unhealed and
// releases what is still unreleased (each at most once over the run), for
// when end could not run or did not get that far.
func (r *run) cleanup(ctx context.Context) error {
	r.mu.Lock()
	healed := r.st.phase >= PhaseHeal
	r.mu.Unlock()
	if !healed {
		if err := r.heal(ctx, r.eng.lab, nil); err != nil {
			return r.fail("heal", err)
		}
	}
	return r.release(ctx, r.eng.lab)
}
