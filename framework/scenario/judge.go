package scenario

import (
	"fmt"
	"slices"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// The judge phase (PhaseJudge): each convergence invariant judged over
// the sample it settled in (or the final snapshot), each safety invariant
// over the window's, heal's and settle's samples, each verdict recorded
// with the part of the run its deciding evidence fell in, and the spec's
// failures collected. It hands release a run whose verdicts are in, and
// done those verdicts and the failures.

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

// settleTimeoutOf is " of <timeout>", or nothing for a timeout a record
// does not hold.
func settleTimeoutOf(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf(" of %s", d)
}

// judgeSafety judges every safety invariant still to be judged (assert)
// over the window's, heal's and settle's samples (the final snapshot
// included), and returns the failure messages.
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

// assert judges every invariant of the phase not yet decided with
// invariant.Judge and records each verdict. A finding fails the spec when
// VIOLATED (lack of evidence is not a violation); a positive control when
// anything else, or VIOLATED of a kind it is not built to make. It
// collects the failure messages instead of failing at the first, so one
// violation never hides the verdicts of the others.
func (r *run) assert(phase verdict.Phase, in invariant.Input) []string {
	return r.assertEach(phase, func(string) invariant.Input { return in })
}

// assertEach is assert with each invariant judged over the input inputFor
// gives for its name.
func (r *run) assertEach(phase verdict.Phase, inputFor func(name string) invariant.Input) []string {
	var failures []string
	for _, inv := range r.sc.Invariants {
		if inv.Phase() != phase || r.isDecided(inv.Name()) {
			continue
		}
		in := inputFor(inv.Name())
		j := invariant.Judge(inv, in)
		control := slices.Contains(r.sc.mustBreak(), inv.Name())
		switch {
		case control && j.Verdict != verdict.Violated:
			// A positive control: the breakage is what it must show.
			failures = append(failures, fmt.Sprintf("positive control of %s\n%s", inv.Name(), invariant.NotViolatedMessage(j, in)))
		case !control && j.Verdict == verdict.Violated:
			failures = append(failures, invariant.ViolatedMessage(j, in))
		}
		j.During = r.during(j, in)
		if j.Verdict == verdict.Violated && control {
			if other := verdict.OtherKind(j, r.sc.ControlKinds[inv.Name()]); other != "" {
				// The invariant broke, but not as the control breaks it:
				// its detector did not fire.
				failures = append(failures, fmt.Sprintf("positive control of %s: %s: %s", inv.Name(), other, j.Reason))
			}
		}
		r.decide(j)
	}
	return failures
}
