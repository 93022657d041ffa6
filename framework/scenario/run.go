package scenario

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// probe is one look of the effect probe during the window.
type probe struct {
	At     time.Time
	Effect fault.Effect
	Err    error
}

// run is the state of one scenario run, built up phase by phase and turned
// into a verdict.Run at the end.
type run struct {
	sc  Scenario
	eng *engine
	id  string
	// rep is the run's repetition of its scenario × arm, from 1.
	rep     int
	started time.Time
	ended   time.Time

	// act makes heal and release happen at most once each, whoever asks
	// first (the end of the run, or the last-resort cleanup).
	act sync.Mutex
	// mu guards the state and what the phases and the cleanup share.
	mu       sync.Mutex
	st       state
	timings  map[string]float64
	record   evidence.Record
	timeline evidence.Recorder
	decided  map[string]verdict.Judgement
	probes   []probe
	// The moments that bound the parts of the run a verdict's evidence
	// can fall in (phaseAt): zero until reached.
	injectStarted, healStarted, healEnded time.Time
	// load is the machine's load average at the run's start (and, once
	// finished, its end).
	load []verdict.Load
	// class is the fault class NOT_APPLICABLE is looked up under, when
	// not the scenario's fault's (a recorded run judged again).
	class string
	// judging is what the record keeps for judging the run again
	// (verdict.Judging), noted as each step is judged.
	judging verdict.Judging
	// replay is set when a recorded run is judged again (rejudge.go).
	replay *replay
}

func newRun(sc Scenario, eng *engine, now time.Time) *run {
	return newRepetition(sc, eng, now, 1, 1)
}

// newRepetition is the run of repetition rep of a suite run that runs
// each scenario × arm `of` times. Where there are several, the run's ID
// names its repetition: two repetitions of one pair can start in the same
// millisecond on two labs of a pool.
func newRepetition(sc Scenario, eng *engine, now time.Time, rep, of int) *run {
	id := fmt.Sprintf("%s-%s-%s", sc.ID, sc.arm(), now.UTC().Format("20060102T150405.000Z"))
	if of > 1 {
		id = fmt.Sprintf("%s-%s-rep%d-%s", sc.ID, sc.arm(), rep, now.UTC().Format("20060102T150405.000Z"))
	}
	r := &run{sc: sc, eng: eng, id: id, rep: rep, started: now, timings: map[string]float64{}, decided: map[string]verdict.Judgement{}}
	if l, ok := readLoad(); ok {
		r.load = append(r.load, l)
	}
	return r
}

// loadavgPath is where the machine's load average is read.
var loadavgPath = "/proc/loadavg"

// readLoad reads the machine's load average now; false when it cannot be
// read, so that a record never shows a load of zero it did not measure.
func readLoad() (verdict.Load, bool) {
	b, err := os.ReadFile(loadavgPath)
	if err != nil {
		return verdict.Load{}, false
	}
	return parseLoadavg(string(b), time.Now().UTC())
}

// parseLoadavg parses /proc/loadavg ("0.52 0.58 0.59 1/123 4567").
func parseLoadavg(text string, at time.Time) (verdict.Load, bool) {
	fields := strings.Fields(text)
	if len(fields) < 3 {
		return verdict.Load{}, false
	}
	var avg [3]float64
	for i := range avg {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil || v < 0 {
			return verdict.Load{}, false
		}
		avg[i] = v
	}
	return verdict.Load{At: at, One: avg[0], Five: avg[1], Fifteen: avg[2]}, true
}

func (r *run) abort(phase string, err error) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := fmt.Sprintf("%s failed: %v", phase, err)
	if r.st.failed == "" {
		r.st.failed = msg
	}
	return msg
}

func (r *run) event(kind, detail string) {
	r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: kind, Detail: detail})
}

// sampleFailed stamps a tick at which no snapshot could be taken on the
// timeline, at the tick's time (taken; now when the sampler gave none): the
// invariants count it as a round that could not tell, so no stretch is
// proven across it.
func (r *run) sampleFailed(taken time.Time, detail string) {
	if taken.IsZero() {
		taken = time.Now()
	}
	r.timeline.Add(evidence.Event{At: taken.UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: invariant.SampleFailedEvent, Detail: detail})
}

// progress prints a phase's line: how long it took and how often its
// snapshots came (the median and maximum interval between ticks, and the
// longest any source went without a value), with more said after it.
func (r *run) progress(phase string, since time.Time, snaps []evidence.Snapshot, more string) {
	c := evidence.CadenceOf(snaps)
	line := fmt.Sprintf("%s: %s %s, %d snapshots", r.id, phase, time.Since(since).Round(100*time.Millisecond), c.Snapshots)
	if c.Snapshots > 1 {
		line += fmt.Sprintf(" every %s (max %s)", c.Median.Round(10*time.Millisecond), c.Max.Round(10*time.Millisecond))
		if c.SlowestSource != "" && c.SourceMax > 2*c.Max {
			line += fmt.Sprintf(", %s %s without a value", c.SlowestSource, c.SourceMax.Round(100*time.Millisecond))
		}
	}
	if more != "" {
		line += ", " + more
	}
	r.eng.logf("%s", line)
}

func (r *run) timed(phase string, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timings[phase] += time.Since(since).Seconds()
}

func (r *run) decide(j verdict.Judgement) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decided[j.Invariant] = j
}

func (r *run) isDecided(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.decided[name]
	return ok
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

// The parts of a run a verdict's deciding evidence can fall in
// (verdict.Judgement.During).
const (
	duringPreFault = "pre-fault"
	duringWindow   = "window"
	duringHeal     = "heal"
	duringSettle   = "settle"
)

// phaseAt is the part of the run t fell in: before inject began,
// pre-fault; from then until heal began, window (a fault takes hold during
// its inject, a control's deletion after its cut); while heal ran, heal;
// after it, settle.
func (r *run) phaseAt(t time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.injectStarted.IsZero() || t.Before(r.injectStarted):
		return duringPreFault
	case r.healStarted.IsZero() || t.Before(r.healStarted):
		return duringWindow
	case r.healEnded.IsZero() || t.Before(r.healEnded):
		return duringHeal
	default:
		return duringSettle
	}
}

// during is the part of the run j's deciding evidence fell in: that of
// its moment when it has one, else that of its input when the whole input
// lies in one part. A verdict with no deciding moment over an input that
// spans several parts (a PRESERVED through window, heal and settle) has
// none: its evidence is all of them.
func (r *run) during(j verdict.Judgement, in invariant.Input) string {
	if !j.At.IsZero() {
		return r.phaseAt(j.At)
	}
	if len(in.Snapshots) == 0 {
		return ""
	}
	from, to := in.Span()
	if a, b := r.phaseAt(from), r.phaseAt(to); a == b {
		return a
	}
	return ""
}

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

// runVerdict decides what the whole run says. The rule for the two arms:
//   - any phase failed (reset, ledger, inject, heal) or the run was
//     interrupted → ABORTED: it reached no judgement to trust;
//   - fault arm whose probes saw the effect in a smaller share of the
//     window's probes than required → FAULT_INEFFECTIVE, with the
//     coverage: the verdicts would describe a cluster mostly without the
//     fault;
//   - null arm whose probe DID see the effect with nothing injected → the
//     control is contaminated → ABORTED, with the probe's detail;
//   - null arm whose probe saw nothing → JUDGED (that is the control
//     working, never FAULT_INEFFECTIVE);
//   - fault arm whose probes saw the effect in the required share or more
//     → JUDGED.
//
// A probe that could not look (error) did not see the effect: it counts
// among the probes, not among those that saw it.
func runVerdict(arm Arm, aborted, interrupted string, probes []probe, required float64) (verdict.RunVerdict, string) {
	if aborted != "" {
		return verdict.RunAborted, aborted
	}
	if interrupted != "" {
		return verdict.RunAborted, interrupted
	}
	var seen *probe
	var last string
	for i := range probes {
		p := probes[i]
		if p.Err != nil {
			last = "probe failed: " + p.Err.Error()
			continue
		}
		last = p.Effect.Detail
		if p.Effect.Observed && seen == nil {
			seen = &probes[i]
		}
	}
	if arm == NullArm {
		if seen != nil {
			return verdict.RunAborted, fmt.Sprintf("null arm: the effect probe saw the fault's effect at %s with nothing injected (%s); the control is contaminated and none of its verdicts count", seen.At.UTC().Format("15:04:05.000Z"), seen.Effect.Detail)
		}
		return verdict.RunJudged, ""
	}
	c := effectCoverage(probes, required)
	if seen != nil && c.Share() >= required {
		return verdict.RunJudged, ""
	}
	var reason string
	if seen == nil {
		reason = fmt.Sprintf("the effect probe saw no effect in %d probes during the window", c.Probes)
	} else {
		reason = fmt.Sprintf("the effect probe saw the effect in %d of %d probes during the window (%.0f%%), under the %.0f%% of probes the scenario requires for the fault to have held through it; first seen at %s (%s)",
			c.Observed, c.Probes, 100*c.Share(), 100*required, seen.At.UTC().Format("15:04:05.000Z"), seen.Effect.Detail)
	}
	if c.Failed > 0 {
		reason += fmt.Sprintf(" (%d of them could not look)", c.Failed)
	}
	if last != "" {
		reason += "; last: " + last
	}
	return verdict.FaultIneffective, reason
}

// finish turns the run into its record once: every invariant gets a
// verdict (those never judged get INSUFFICIENT_DATA saying why).
func (r *run) finish(specState string) verdict.Run {
	r.enter(PhaseDone)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.finished != nil {
		if specState != "" {
			r.st.finished.SpecState = specState
		}
		return *r.st.finished
	}
	if r.ended.IsZero() {
		r.ended = time.Now()
	}
	required := r.sc.requiredEffectShare()
	if r.sc.arm() == NullArm {
		required = 0
	}
	rv, reason := runVerdict(r.sc.arm(), r.st.failed, r.st.interrupted, r.probes, required)
	var coverage *verdict.EffectCoverage
	if len(r.probes) > 0 || r.st.whole[PhaseWindow] {
		c := effectCoverage(r.probes, required)
		coverage = &c
	}
	if l, ok := readLoad(); ok {
		r.load = append(r.load, l)
	}
	js := judgementsOf(r.sc.Invariants, r.decided, reason)
	r.record.Timeline = r.timeline.Timeline()
	st := r.eng
	out := verdict.Run{
		RunID: r.id, Suite: st.name, Scenario: r.sc.ID, Title: r.sc.Title, Arm: string(r.sc.arm()),
		FaultClass: string(r.sc.Fault.Class()), FaultKind: r.sc.Fault.Kind(),
		Labels:  sortedLabels(r.sc),
		Started: r.started.UTC(), Ended: r.ended.UTC(),
		RunVerdict: rv, RunReason: reason, Judgements: js, Timings: r.timings,
		Lab: st.labInfo, GitCommit: st.commit, ConfigHash: st.configHash, SpecState: specState,
		Role: r.sc.role(), ControlOf: slices.Clone(r.sc.mustBreak()), ControlKinds: r.sc.mustBreakKinds(), Load: r.load, Effect: coverage,
		Emulation: r.sc.emulation(st.lab), Repetition: r.rep,
	}
	out.Judging = r.judgingRecord()
	r.st.finished = &out
	r.st.whole[PhaseDone] = true
	return out
}

// faultClass is the class NOT_APPLICABLE is looked up under: the
// scenario's fault's, or the recorded one of a run judged again.
func (r *run) faultClass() string {
	if r.class != "" || r.sc.Fault == nil {
		return r.class
	}
	return string(r.sc.Fault.Class())
}

// judgementsOf are the verdicts of invs, in their order: those decided,
// and for any other INSUFFICIENT_DATA saying it was not judged and why
// the run stopped (reason, "" when it did not).
func judgementsOf(invs []invariant.Invariant, decided map[string]verdict.Judgement, reason string) []verdict.Judgement {
	notJudged := "not judged: " + reason
	if reason == "" {
		notJudged = "not judged"
	}
	var js []verdict.Judgement
	for _, inv := range invs {
		j, ok := decided[inv.Name()]
		if !ok {
			j = verdict.Judgement{Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.InsufficientData, Reason: notJudged}
		}
		js = append(js, j)
	}
	return js
}

func sortedLabels(s Scenario) []string {
	ls := s.AllLabels()
	sort.Strings(ls)
	return ls
}

// violations renders the failure messages of several matchers as one.
func violations(phase string, msgs []string) string {
	return fmt.Sprintf("%d %s invariant(s) VIOLATED (or, for a positive control, not VIOLATED):\n\n%s", len(msgs), phase, strings.Join(msgs, "\n\n"))
}

// verdictLine is a run's closing line: its run verdict (with the reason
// when it reached no judgement) and how many invariants came out each way,
// naming the VIOLATED ones.
func verdictLine(id string, rec verdict.Run) string {
	line := fmt.Sprintf("%s: %s", id, rec.RunVerdict)
	if rec.RunReason != "" {
		line += " (" + rec.RunReason + ")"
	}
	counts := map[verdict.Verdict]int{}
	var order []verdict.Verdict
	var violated []string
	for _, j := range rec.Judgements {
		if counts[j.Verdict] == 0 {
			order = append(order, j.Verdict)
		}
		counts[j.Verdict]++
		if j.Verdict == verdict.Violated {
			violated = append(violated, j.Invariant)
		}
	}
	var parts []string
	for _, v := range order {
		part := fmt.Sprintf("%d %s", counts[v], v)
		if v == verdict.Violated {
			part += " (" + strings.Join(violated, ", ") + ")"
		}
		parts = append(parts, part)
	}
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	return line
}

// emulation is what the lab emulates of the run: the fault's, then the
// scenario's own, joined.
func (s Scenario) emulation(l lab.Lab) string {
	parts := []string{fault.EmulationOf(s.Fault, l)}
	if s.Emulation != nil && l != nil {
		parts = append(parts, s.Emulation(l))
	}
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
