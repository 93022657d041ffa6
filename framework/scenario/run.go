package scenario

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/ledger"
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
	sc      Scenario
	suite   *suiteState
	id      string
	started time.Time
	ended   time.Time

	// mu guards what the DeferCleanup heal and the phases share.
	mu       sync.Mutex
	timings  map[string]float64
	record   evidence.Record
	timeline evidence.Recorder
	decided  map[string]verdict.Judgement
	probes   []probe
	// aborted names the phase that failed and why; empty if none did.
	aborted     string
	interrupted string
	// watched is set when the It judged the safety invariants.
	watched bool
	active  *ledger.Active
	healed  bool
	healErr error
	// released is set once a lingering fault's Release ran (or there was
	// nothing to release).
	released   bool
	releaseErr error
	finished   *verdict.Run
}

func newRun(sc Scenario, st *suiteState, now time.Time) *run {
	id := fmt.Sprintf("%s-%s-%s", sc.ID, sc.arm(), now.UTC().Format("20060102T150405.000Z"))
	return &run{sc: sc, suite: st, id: id, started: now, timings: map[string]float64{}, decided: map[string]verdict.Judgement{}}
}

func (r *run) abort(phase string, err error) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := fmt.Sprintf("%s failed: %v", phase, err)
	if r.aborted == "" {
		r.aborted = msg
	}
	return msg
}

func (r *run) isAborted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.aborted != ""
}

func (r *run) event(kind, detail string) {
	r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: kind, Detail: detail})
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

// judgePreFault decides the invariants that are settled before the fault:
// NOT_APPLICABLE from the table, and DETECTOR_INVALID for any invariant the
// baseline already violates.
func (r *run) judgePreFault(table invariant.Table, baseline evidence.Snapshot) {
	class := string(r.sc.Fault.Class())
	in := invariant.Input{Moment: invariant.PreFault, Snapshots: []evidence.Snapshot{baseline}, Timeline: r.timeline.Timeline(), Baseline: &baseline}
	for _, inv := range r.sc.Invariants {
		if reason, na := table.Lookup(class, inv.Name()); na {
			r.decide(verdict.Judgement{Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.NotApplicable,
				Reason: fmt.Sprintf("fault class %s cannot reach what %s reads: %s", class, inv.Name(), reason)})
			continue
		}
		j := invariant.Judge(inv, in)
		if j.Verdict == verdict.Violated {
			r.decide(verdict.Judgement{Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.DetectorInvalid,
				Reason: "already violated before the fault: " + j.Reason, Sources: j.Sources, At: j.At})
		}
	}
}

// heal heals the injected fault once, whoever asks first (AfterEach, or
// the DeferCleanup that stands in when AfterEach cannot run), and settles
// its ledger entry: removed when healed, kept for the next start if not.
func (r *run) heal(ctx context.Context, l lab.Lab) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.healed || r.active == nil {
		return r.healErr
	}
	start := time.Now()
	r.timeline.Add(evidence.Event{At: start.UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: invariant.HealStartedEvent, Detail: fault.Describe(r.sc.injected())})
	err := r.sc.injected().Heal(ctx, l)
	r.timings["heal"] += time.Since(start).Seconds()
	r.healed = true
	if err != nil {
		r.healErr = fmt.Errorf("healing %s: %w (it stays in the heal ledger for the next start or `faultline heal`)", fault.Describe(r.sc.injected()), err)
		if kerr := r.active.Keep(); kerr != nil {
			r.healErr = fmt.Errorf("%w; releasing its ledger entry: %v", r.healErr, kerr)
		}
		r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: "heal-failed", Detail: err.Error()})
		return r.healErr
	}
	r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: invariant.FaultHealedEvent, Detail: fault.Describe(r.sc.injected())})
	if _, lingers := r.sc.injected().(fault.Lingering); lingers {
		return nil // the entry stays until release
	}
	r.released = true
	if derr := r.active.Done(); derr != nil {
		r.healErr = fmt.Errorf("fault healed, but %w", derr)
	}
	return r.healErr
}

// release releases a lingering fault once its run has been judged, and
// then removes its ledger entry; for any other fault heal already did all
// of it. A failed release keeps the entry for the next start or
// `faultline heal`. It does nothing when heal did not succeed: the entry
// then stays whole, and healing it from the ledger releases it too.
func (r *run) release(ctx context.Context, l lab.Lab) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released || !r.healed || r.healErr != nil || r.active == nil {
		return r.releaseErr
	}
	r.released = true
	lf := r.sc.injected().(fault.Lingering)
	start := time.Now()
	err := lf.Release(ctx, l)
	r.timings["release"] += time.Since(start).Seconds()
	if err != nil {
		r.releaseErr = fmt.Errorf("releasing what %s left after heal: %w (it stays in the heal ledger for the next start or `faultline heal`)", fault.Describe(lf), err)
		if kerr := r.active.Keep(); kerr != nil {
			r.releaseErr = fmt.Errorf("%w; releasing its ledger entry: %v", r.releaseErr, kerr)
		}
		r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: "release-failed", Detail: err.Error()})
		return r.releaseErr
	}
	r.timeline.Add(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "scenario/" + r.sc.ID, Kind: "fault-released", Detail: fault.Describe(lf)})
	if derr := r.active.Done(); derr != nil {
		r.releaseErr = fmt.Errorf("released, but %w", derr)
	}
	return r.releaseErr
}

// runVerdict decides what the whole run says. The rule for the two arms:
//   - any phase failed (reset, ledger, inject, heal) or the run was
//     interrupted → ABORTED: it reached no judgement to trust;
//   - fault arm whose probe never saw the effect → FAULT_INEFFECTIVE;
//   - null arm whose probe DID see the effect with nothing injected → the
//     control is contaminated → ABORTED, with the probe's detail;
//   - null arm whose probe saw nothing → JUDGED (that is the control
//     working, never FAULT_INEFFECTIVE);
//   - fault arm whose probe saw the effect → JUDGED.
//
// A probe that could not look (error) saw nothing; a fault arm whose every
// probe failed is FAULT_INEFFECTIVE, since no effect was observed.
func runVerdict(arm Arm, aborted, interrupted string, probes []probe) (verdict.RunVerdict, string) {
	if aborted != "" {
		return verdict.RunAborted, aborted
	}
	if interrupted != "" {
		return verdict.RunAborted, interrupted
	}
	var seen *probe
	var failed int
	var last string
	for i := range probes {
		p := probes[i]
		if p.Err != nil {
			failed++
			last = "probe failed: " + p.Err.Error()
			continue
		}
		last = p.Effect.Detail
		if p.Effect.Observed && seen == nil {
			seen = &probes[i]
		}
	}
	switch arm {
	case NullArm:
		if seen != nil {
			return verdict.RunAborted, fmt.Sprintf("null arm: the effect probe saw the fault's effect at %s with nothing injected (%s); the control is contaminated and none of its verdicts count", seen.At.UTC().Format("15:04:05.000Z"), seen.Effect.Detail)
		}
		return verdict.RunJudged, ""
	default:
		if seen == nil {
			reason := fmt.Sprintf("the effect probe saw no effect in %d probes during the window", len(probes))
			if failed > 0 {
				reason += fmt.Sprintf(" (%d of them could not look)", failed)
			}
			if last != "" {
				reason += "; last: " + last
			}
			return verdict.FaultIneffective, reason
		}
		return verdict.RunJudged, ""
	}
}

// finish turns the run into its record once: every invariant gets a
// verdict (those never judged get INSUFFICIENT_DATA saying why).
func (r *run) finish(specState string) verdict.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished != nil {
		if specState != "" {
			r.finished.SpecState = specState
		}
		return *r.finished
	}
	if r.ended.IsZero() {
		r.ended = time.Now()
	}
	rv, reason := runVerdict(r.sc.arm(), r.aborted, r.interrupted, r.probes)
	notJudged := "not judged: " + reason
	if reason == "" {
		notJudged = "not judged"
	}
	var js []verdict.Judgement
	for _, inv := range r.sc.Invariants {
		j, ok := r.decided[inv.Name()]
		if !ok {
			j = verdict.Judgement{Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.InsufficientData, Reason: notJudged}
		}
		js = append(js, j)
	}
	r.record.Timeline = r.timeline.Timeline()
	st := r.suite
	out := verdict.Run{
		RunID: r.id, Suite: st.name, Scenario: r.sc.ID, Title: r.sc.Title, Arm: string(r.sc.arm()),
		FaultClass: string(r.sc.Fault.Class()), FaultKind: r.sc.Fault.Kind(),
		Labels:  sortedLabels(r.sc),
		Started: r.started.UTC(), Ended: r.ended.UTC(),
		RunVerdict: rv, RunReason: reason, Judgements: js, Timings: r.timings,
		Lab: st.labInfo, GitCommit: st.commit, ConfigHash: st.configHash, SpecState: specState,
	}
	r.finished = &out
	return out
}

func sortedLabels(s Scenario) []string {
	ls := append(s.AutoLabels(), s.Labels...)
	sort.Strings(ls)
	return ls
}

// violations renders the failure messages of several matchers as one.
func violations(phase string, msgs []string) string {
	return fmt.Sprintf("%d %s invariant(s) VIOLATED (or, for a positive control, not VIOLATED):\n\n%s", len(msgs), phase, strings.Join(msgs, "\n\n"))
}
