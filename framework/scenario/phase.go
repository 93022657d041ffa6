package scenario

import (
	"fmt"

	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/verdict"
)

// The phases of a run, and the one state that says where a run is: the
// phase it is in, which phases ran to their end, and how it stopped early
// if it did. Each phase is a file of its own (reset.go, prefault.go,
// inject.go, window.go, heal.go, settle.go, judge.go, release.go,
// done.go); runner.go takes them in order.

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

func (r *run) abort(phase string, err error) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	msg := fmt.Sprintf("%s failed: %v", phase, err)
	if r.st.failed == "" {
		r.st.failed = msg
	}
	return msg
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
