package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// Phase is one step of a run, in the order the runner takes them. A run
// enters each phase at most once and never goes back; it may skip phases
// (a run whose inject failed is healed but never watched or settled).
type Phase int

const (
	PhaseNew Phase = iota
	// PhaseReset resets the lab, checks it starts clean (empty ledger,
	// up), runs Suite.Prepare and takes the baseline.
	PhaseReset
	// PhasePreFault samples the pre-fault window and decides what is
	// NOT_APPLICABLE or DETECTOR_INVALID.
	PhasePreFault
	// PhaseInject writes the fault to the heal ledger, then injects it.
	PhaseInject
	// PhaseWindow samples and probes while the fault is in place.
	PhaseWindow
	// PhaseHeal heals the fault, sampling while it runs.
	PhaseHeal
	// PhaseSettle samples until every convergence invariant has settled.
	PhaseSettle
	// PhaseJudge judges the convergence and safety invariants.
	PhaseJudge
	// PhaseRelease releases a lingering fault once the run is judged.
	PhaseRelease
	// PhaseDone: the run's record is made.
	PhaseDone
	numPhases
)

var phaseNames = [numPhases]string{"new", "reset", "pre-fault", "inject", "window", "heal", "settle", "judge", "release", "done"}

func (p Phase) String() string {
	if p < 0 || p >= numPhases {
		return fmt.Sprintf("phase(%d)", int(p))
	}
	return phaseNames[p]
}

// state is a run's one phase state: the phase it is in, which phases ran
// to their end, and how it stopped early if it did. Everything the run's
// verdict rests on (ABORTED, watched, healed, released) is read from it;
// run.mu guards it.
type state struct {
	phase Phase
	// whole[p] is set when phase p ran to its end without failing.
	whole [numPhases]bool
	// failed is the first failure ("<step> failed: <why>"); the run is
	// ABORTED with it.
	failed string
	// interrupted says why the run was cut short; the run is ABORTED.
	interrupted string
	// active is the fault's heal-ledger entry, once written.
	active              *ledger.Active
	healErr, releaseErr error
	finished            *verdict.Run
}

// enter moves the run into p, if it has not reached p yet.
func (r *run) enter(p Phase) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p <= r.st.phase {
		return false
	}
	r.st.phase = p
	return true
}

// complete notes that p ran to its end.
func (r *run) complete(p Phase) {
	r.mu.Lock()
	r.st.whole[p] = true
	r.mu.Unlock()
}

func (r *run) ranWhole(p Phase) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.whole[p]
}

// stepError is a step's failure, worded as the run's ABORTED reason.
type stepError struct {
	msg string
	// unsupported: the lab cannot run the fault; the spec is skipped.
	unsupported bool
}

func (e *stepError) Error() string { return e.msg }

// fail notes that step failed (the first failure is the run's reason) and
// returns the failure.
func (r *run) fail(step string, err error) *stepError {
	return &stepError{msg: r.abort(step, err)}
}

// interrupt notes that the run was cut short, unless it already was.
func (r *run) interrupt(why string) {
	r.mu.Lock()
	if r.st.interrupted == "" {
		r.st.interrupted = why
	}
	r.mu.Unlock()
}

// stopped reports whether the run failed or was cut short.
func (r *run) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.failed != "" || r.st.interrupted != ""
}

func (r *run) isInterrupted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.interrupted != ""
}

func (r *run) isInjected() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.active != nil
}

// engine is what one suite process shares across its runs: the suite, its
// lab and the provenance every record carries.
type engine struct {
	name    string
	cfg     Suite
	lab     lab.Lab
	labInfo verdict.LabInfo
	// entry is the lab of a pool this engine runs on (Suite.OpenLabEntry
	// opens it); "" for a suite run on one lab (Suite.OpenLab).
	entry      string
	commit     string
	configHash string
	// out gets a line of progress per step; nil discards.
	out io.Writer
}

func (e *engine) logf(format string, args ...any) {
	if e.out != nil {
		fmt.Fprintf(e.out, format+"\n", args...)
	}
}

// open opens the lab once and refuses, before anything touches it, a
// config that is not a lab, a lab without the suite's shape, and one
// VerifyLab refuses.
func (e *engine) open(ctx context.Context) error {
	if e.lab != nil {
		return nil
	}
	var l lab.Lab
	var err error
	if e.entry != "" {
		l, err = e.cfg.OpenLabEntry(ctx, e.entry)
	} else {
		l, err = e.cfg.OpenLab(ctx)
	}
	if err != nil {
		return fmt.Errorf("opening the lab: %v", err)
	}
	if err := RefuseNonLab(l); err != nil {
		l.Close()
		return err
	}
	if err := e.cfg.Shape.check(l); err != nil {
		l.Close()
		return fmt.Errorf("refusing to run: %v (nothing was touched)", err)
	}
	if e.cfg.VerifyLab != nil {
		if err := e.cfg.VerifyLab(ctx, l); err != nil {
			l.Close()
			return fmt.Errorf("lab %s: refusing to run: %v (nothing was touched)", l.Info().Name, err)
		}
	}
	info := l.Info()
	e.labInfo = verdict.LabInfo{
		Name: info.Name, Kind: info.Kind, Topology: info.Topology, ResetKind: string(info.ResetKind),
		KubernetesVersion: info.KubernetesVersion, EtcdVersion: info.EtcdVersion,
		TimerProfile: info.TimerProfile, Timers: info.Timers,
	}
	if e.commit, e.configHash, err = provenance(ctx, l); err != nil {
		l.Close()
		return err
	}
	e.lab = l
	return nil
}

// healLedger heals whatever the lab's heal ledger holds (a run killed
// after inject left it there), and refuses to go on if it cannot, or if a
// live process holds a fault on the lab.
func (e *engine) healLedger(ctx context.Context) (ledger.Report, error) {
	rep, err := ledger.HealAll(ctx, e.lab)
	if err != nil {
		return rep, fmt.Errorf("healing what the heal ledger of lab %s holds before the suite: %v\n%s", e.lab.Info().Name, err, rep)
	}
	if len(rep.Busy) > 0 {
		return rep, fmt.Errorf("lab %s has faults held by another running process; two runs on one lab would judge each other's faults:\n%s", e.lab.Info().Name, rep)
	}
	return rep, nil
}

// fits says why the lab cannot run sc (its topology or shape), or nil.
func (e *engine) fits(sc Scenario) error {
	info := e.lab.Info()
	if sc.Topology != "" && info.Topology != sc.Topology {
		return fmt.Errorf("scenario %s needs topology %s; lab %s is %s", sc.ID, sc.Topology, info.Name, info.Topology)
	}
	if err := sc.Shape.check(e.lab); err != nil {
		return fmt.Errorf("scenario %s: %w", sc.ID, err)
	}
	return nil
}

// start runs PhaseReset and PhasePreFault.
func (r *run) start(ctx context.Context) error {
	st := r.eng
	l := st.lab
	r.enter(PhaseReset)
	begin := time.Now()
	var resetTimed bool
	timeReset := func() {
		if !resetTimed {
			resetTimed = true
			r.timed("reset", begin)
		}
	}
	defer timeReset()
	r.healLeftovers(ctx, l, leftoversBeforeReset)
	if err := l.Reset(ctx); err != nil {
		return r.fail("reset", err)
	}
	r.event("lab-reset", "")
	if err := r.checkCleanAfterReset(ctx, l); err != nil {
		return r.fail("clean-start check", err)
	}
	if st.cfg.Prepare != nil {
		if err := st.cfg.Prepare(ctx, l, r.sc); err != nil {
			return r.fail("prepare", err)
		}
	}
	baseline, events, err := st.cfg.Sampler.Sample(ctx, l)
	if err != nil {
		return r.fail("baseline snapshot", err)
	}
	r.addEvents(events)
	timeReset()
	r.complete(PhaseReset)

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

// outcome is what the end of a run says of its spec.
type outcome struct {
	healErr, releaseErr                error
	safety, convergence, controlsEarly []string
}

// failure is the spec's failure message, "" when it passes: a failed heal
// or release, else every matcher that failed, listed at once.
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
