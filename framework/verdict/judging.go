package verdict

import (
	"encoding/json"
	"time"
)

// Judging is what a run record keeps so that the run's evidence can be
// judged again by a later checker (faultline rejudge): the invariants
// with their parameters, and what the engine took from the evidence at
// each step of the judgement. The evidence file holds the snapshots of
// each part of the run (baseline, pre-fault, window, heal, settle, final)
// and the whole timeline; the timeline an invariant is handed is the
// events seen by the moment it was judged, so each moment is kept here.
// Nil in records written before the field.
type Judging struct {
	// Invariants are the scenario's invariants, in its order.
	Invariants []JudgedInvariant `json:"invariants"`
	// SampleEvery is the suite's sampling interval: the pre-fault window
	// each invariant needs is counted in it.
	SampleEvery Duration `json:"sampleEvery"`
	// Settle is the scenario's settle timeout.
	Settle Duration `json:"settle"`
	// OwnApplicability says the suite judged with its own applicability
	// table rather than the framework's (invariant.Applicability), whose
	// rows for the run's fault class are then NotApplicable. A run judged
	// with the framework's table is judged again with the table as it is
	// then.
	OwnApplicability bool           `json:"ownApplicability,omitempty"`
	NotApplicable    []Inapplicable `json:"notApplicable,omitempty"`
	// InjectStarted, HealStarted and HealEnded bound the parts of the run
	// a verdict's evidence falls in (Judgement.During); zero when the run
	// did not get there.
	InjectStarted time.Time `json:"injectStarted,omitzero"`
	HealStarted   time.Time `json:"healStarted,omitzero"`
	HealEnded     time.Time `json:"healEnded,omitzero"`
	// WindowStarted and WindowEnded are when the window's effect probing
	// started and stopped (the window's deadline at the latest; the
	// sampler may read on past it): the stretch the effect coverage is
	// measured over. Zero when the run did not get there, and in
	// records written before they were kept.
	WindowStarted time.Time `json:"windowStarted,omitzero"`
	WindowEnded   time.Time `json:"windowEnded,omitzero"`
	// PreFaultAt is when every invariant was judged over the baseline and
	// the pre-fault window; zero when the run stopped before.
	PreFaultAt time.Time `json:"preFaultAt,omitzero"`
	// SettleAt are when the settle samples (those of the evidence's
	// settle part, then its final snapshot) were each judged for whether
	// the convergence invariants had settled.
	SettleAt []time.Time `json:"settleAt,omitempty"`
	// SettleEnded is how settling ended: SettleEndedSettled (every
	// convergence invariant settled, so sampling stopped) or
	// SettleEndedTimeout; empty when the run did not settle.
	SettleEnded string `json:"settleEnded,omitempty"`
	// SettledIn are, per convergence invariant that settled, when the
	// settle sample it settled in (and was judged on) was taken; one not
	// named was judged on the final snapshot.
	SettledIn map[string]time.Time `json:"settledIn,omitempty"`
	// ConvergenceAt and SafetyAt are when the convergence and the safety
	// invariants were judged; zero when they were not (a run stopped
	// before it settled, or cut short in its window).
	ConvergenceAt time.Time `json:"convergenceAt,omitzero"`
	SafetyAt      time.Time `json:"safetyAt,omitzero"`
	// FaultClasses are the classes of what the run injected (every part
	// of a compound fault; none in a null arm that injects nothing), as
	// the invariants judged after the fault were given them
	// (invariant.Input.FaultClasses: whether clocks could be skewed).
	FaultClasses []string `json:"faultClasses,omitempty"`
	// Failed and Interrupted are why the run stopped early, if it did (a
	// step that failed, the run cut short): they make it ABORTED whatever
	// its effect probes saw.
	Failed      string `json:"failed,omitempty"`
	Interrupted string `json:"interrupted,omitempty"`
}

// How settling ended (Judging.SettleEnded).
const (
	SettleEndedSettled = "settled"
	SettleEndedTimeout = "timeout"
)

// JudgedInvariant is one invariant as judged: its name, its phase and its
// parameters (its bounds), from which the invariant's registered decoder
// builds it again (invariant.Decode).
type JudgedInvariant struct {
	Name   string          `json:"name"`
	Phase  Phase           `json:"phase"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Rejudged marks a record made by judging a recorded run's evidence again:
// when, by which checker, and what could not be judged again. Its
// judgements are all the new checker's; an invariant it could not judge
// has none and is named in NotRejudged.
type Rejudged struct {
	At time.Time `json:"at"`
	// GitCommit is the checker's commit ("+dirty" with uncommitted
	// changes); the record's own GitCommit stays that of the run.
	GitCommit   string        `json:"gitCommit"`
	NotRejudged []NotRejudged `json:"notRejudged,omitempty"`
	// Notes say what re-judging took from the record other than as the
	// engine recorded it (a moment read from the timeline in a record
	// written before it was kept).
	Notes []string `json:"notes,omitempty"`
}

// NotRejudged is an invariant re-judging could not judge, and why.
type NotRejudged struct {
	Invariant string `json:"invariant"`
	Why       string `json:"why"`
}
