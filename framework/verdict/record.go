package verdict

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Phase says when an invariant is judged.
type Phase string

const (
	// Safety invariants are judged over the fault window.
	Safety Phase = "safety"
	// Convergence invariants are judged after heal and settle.
	Convergence Phase = "convergence"
)

// Judgement is one invariant's verdict in one run, with the evidence that
// backs it named.
type Judgement struct {
	Invariant string  `json:"invariant"`
	Phase     Phase   `json:"phase"`
	Verdict   Verdict `json:"verdict"`
	Reason    string  `json:"reason"`
	// Sources are the evidence sources the verdict was judged from.
	Sources []string `json:"sources,omitempty"`
	// At is the moment the deciding evidence was read (zero if none).
	At time.Time `json:"at,omitempty"`
	// Exercised says, for a PRESERVED or VIOLATED verdict, whether the
	// thing the invariant guards happened in the run (a pod that moved, a
	// deletion, a disagreement that had to resolve): each invariant's doc
	// comment gives its rule. A PRESERVED that was never exercised shows
	// the guarantee was not challenged, not that it held under challenge.
	// Nil when not recorded (records written before the field, or a
	// verdict that does not count).
	Exercised *bool `json:"exercised,omitempty"`
	// Exercise says what exercised the invariant, or why nothing did.
	Exercise string `json:"exercise,omitempty"`
	// Violation names the kind of a VIOLATED verdict where an invariant
	// tells several apart (acknowledged-writes-survive: lost-write or
	// stale-read), so reports can count them apart.
	Violation string `json:"violation,omitempty"`
	// Anomalies name what the run showed that this verdict does not count
	// (acknowledged-writes-survive: a stale-read in a history that lost
	// no write), so reports can show them beside the rates.
	Anomalies []string `json:"anomalies,omitempty"`
	// During names the part of the run the deciding evidence fell in:
	// pre-fault, window, heal or settle.
	During string `json:"during,omitempty"`
	// Quantities are what the verdict measured, by name (a stretch's
	// length, appends lost, the seconds two copies overlapped), so that
	// reports can give their median and range over the repetitions of a
	// scenario. Nil where the invariant measures nothing, and in records
	// written before the field. The stored-data invariants' names are
	// the Quantity* constants below.
	Quantities map[string]Quantity `json:"quantities,omitempty"`
}

// Quantity is one number a verdict measured, with its unit.
type Quantity struct {
	Value float64 `json:"value"`
	// Unit is what Value counts ("s", "appends", "appends/s").
	Unit string `json:"unit"`
	// Per names the quantities of the same judgement this one scales
	// with (appends lost scale with the seconds both copies wrote and
	// with the rate of appends): reports give it divided by their
	// product beside its own value, so that runs of different windows or
	// rates compare. Empty where it does not scale.
	Per []string `json:"per,omitempty"`
}

// Names of Judgement.Quantities that the stored-data invariants give with a
// loss count (acknowledged-data-survives, single-history): a quantity
// not measured (an overlap timed by clocks a clock-skew fault may have
// set apart, a rate over no overlap) is absent.
const (
	// QuantityLost: acknowledged writes lost (unit: what they are,
	// "appends", "operations", "increments"), Per the overlap and the
	// rate; for the kvdb workload also QuantityLostIncrements and
	// QuantityLostRegisterWrites, a register write being no increment.
	QuantityLost               = "lost"
	QuantityLostIncrements     = "lost-increments"
	QuantityLostRegisterWrites = "lost-register-writes"
	// QuantityOverlap: the seconds in which two copies both had writes
	// accepted (each copy's stretches of acknowledged writes, split where
	// none came for over twice the workload's interval, the seconds two
	// such stretches share summed), "s".
	QuantityOverlap = "overlap"
	// QuantityAcknowledgedInOverlap: the writes of all copies
	// acknowledged in those seconds (unit as QuantityLost's), and
	// QuantityAcknowledgedRate, that count per second of them
	// ("<writes>/s").
	QuantityAcknowledgedInOverlap = "acknowledged-in-overlap"
	QuantityAcknowledgedRate      = "acknowledged-rate"
)

// Exercised and NotExercised build Judgement.Exercised values.
func Exercised() *bool    { t := true; return &t }
func NotExercised() *bool { f := false; return &f }

// Roles of a run. A finding is a scenario's fault arm: the only runs whose
// verdicts a paper quotes as rates. A control (a positive control's fault
// arm, built to break the invariants it names) and a null arm (the fault
// replaced by one that does nothing) test the detector: they are reported
// beside findings and never pooled with them. An application control
// (RoleApplication) is the fault arm of a scenario whose workload does
// not rely on the guarantee the findings test (a correct application
// under the same fault): its verdicts separate what the platform allowed
// from what an application assumed, and are reported beside findings,
// never pooled with them, with nothing expected of them.
const (
	RoleFinding     = "finding"
	RoleControl     = "control"
	RoleNull        = "null"
	RoleApplication = "application-control"
)

// LabelApplicationControl is the label of an application control's runs
// (both arms), from which RunRole derives the role of a record written
// without one.
const LabelApplicationControl = "application-control"

// Load is the load average of the machine faultline ran on, as
// /proc/loadavg gives it, at one moment.
type Load struct {
	At   time.Time `json:"at"`
	One  float64   `json:"one"`
	Five float64   `json:"five"`
	// Fifteen is the 15-minute load average.
	Fifteen float64 `json:"fifteen"`
}

// EffectCoverage is how much of the window the fault's effect probe saw
// the effect.
type EffectCoverage struct {
	Probes   int `json:"probes"`
	Observed int `json:"observed"`
	// Failed probes could not look; they count as not seeing the effect.
	Failed int `json:"failed,omitempty"`
	// Required is the share of the window the scenario declares the
	// effect must be shown in for the run to count (JUDGED); below it the
	// run is FAULT_INEFFECTIVE.
	Required float64 `json:"required"`
	// Window is how long the window's probing lasted, and Resolution how
	// far either side of what a look saw the look speaks for (half the
	// suite's tick). Both are zero in records written before coverage was
	// measured in time.
	Window     Duration `json:"window,omitempty"`
	Resolution Duration `json:"resolution,omitempty"`
	// Covered is the share of the window the looks that saw the effect
	// attest: each the stretch it saw the effect hold (a moment, or the
	// wait of a connect that timed out) widened by Resolution either side,
	// cut halfway to a neighbouring look that did not see it or could not
	// look. The run verdict holds it against Required.
	Covered float64 `json:"covered,omitempty"`
}

// Share is the share of probes that saw the effect (0 when none ran).
func (c EffectCoverage) Share() float64 {
	if c.Probes == 0 {
		return 0
	}
	return float64(c.Observed) / float64(c.Probes)
}

// InTime says whether the record measured coverage in time (Covered),
// rather than only counting probes.
func (c EffectCoverage) InTime() bool { return c.Window > 0 }

// LabInfo is what a run record says about the lab.
type LabInfo struct {
	Name              string            `json:"name"`
	Kind              string            `json:"kind"`
	Topology          string            `json:"topology,omitempty"`
	ResetKind         string            `json:"resetKind,omitempty"`
	KubernetesVersion string            `json:"kubernetesVersion,omitempty"`
	EtcdVersion       string            `json:"etcdVersion,omitempty"`
	TimerProfile      string            `json:"timerProfile,omitempty"`
	Timers            map[string]string `json:"timers,omitempty"`
}

// Run is one record of verdicts.jsonl: one scenario, one arm, one run.
type Run struct {
	RunID      string     `json:"runID"`
	Suite      string     `json:"suite"`
	Scenario   string     `json:"scenario"`
	Title      string     `json:"title,omitempty"`
	Arm        string     `json:"arm"`
	FaultClass string     `json:"faultClass,omitempty"`
	FaultKind  string     `json:"faultKind,omitempty"`
	Labels     []string   `json:"labels,omitempty"`
	Started    time.Time  `json:"started"`
	Ended      time.Time  `json:"ended"`
	RunVerdict RunVerdict `json:"runVerdict"`
	// RunReason explains a run verdict other than JUDGED.
	RunReason  string      `json:"runReason,omitempty"`
	Judgements []Judgement `json:"judgements"`
	// Timings are phase durations in seconds (reset, inject, window, heal, settle).
	Timings    map[string]float64 `json:"timings,omitempty"`
	Lab        LabInfo            `json:"lab"`
	GitCommit  string             `json:"gitCommit,omitempty"`
	ConfigHash string             `json:"configHash,omitempty"`
	// Judging keeps what judging the run's evidence again needs (see
	// Judging); nil in records written before it was kept.
	Judging *Judging `json:"judging,omitempty"`
	// Rejudged is set on a record made by judging a recorded run again;
	// nil on the record the engine wrote as the run ended.
	Rejudged *Rejudged `json:"rejudged,omitempty"`
	// SpecState is Ginkgo's outcome for the spec (passed, failed, ...).
	SpecState string `json:"specState,omitempty"`
	// Role is finding, control or null (see RoleFinding).
	Role string `json:"role,omitempty"`
	// ControlOf names the invariants a control run must break.
	ControlOf []string `json:"controlOf,omitempty"`
	// ControlKinds names, for those of ControlOf whose control declares
	// them, the violation kinds (Judgement.Violation) that count as its
	// hit: a VIOLATED of another kind is not one. An invariant it does not
	// name counts a VIOLATED of any kind, as every control did in records
	// written before the field.
	ControlKinds map[string][]string `json:"controlKinds,omitempty"`
	// Load is the machine's load average when the run started and ended.
	Load []Load `json:"load,omitempty"`
	// Effect is the effect probe's coverage of the window.
	Effect *EffectCoverage `json:"effect,omitempty"`
	// Emulation says how the lab emulated the fault and what the
	// emulation does not reach (fault.Emulated); empty for the real thing.
	Emulation string `json:"emulation,omitempty"`
	// Repetition is which run of its scenario × arm this is, from 1, in a
	// suite run that repeats each (-faultline.repeat); 0 in records
	// written before the field (RepetitionNumber reads it as 1).
	Repetition int `json:"repetition,omitempty"`
}

// RepetitionNumber is the run's repetition, 1 for records written before
// repetitions were recorded (each ran once).
func (r Run) RepetitionNumber() int {
	if r.Repetition < 1 {
		return 1
	}
	return r.Repetition
}

// Counted reports whether the run's verdicts count towards rates.
func (r Run) Counted() bool { return r.RunVerdict == RunJudged }

// RunRole is the run's role; for records written without one it is
// derived from the arm and the controlOf field: a fault arm whose labels
// carry "selfcheck" or "control:" is a control, one labelled
// LabelApplicationControl an application control.
func (r Run) RunRole() string {
	if r.Role != "" {
		return r.Role
	}
	if r.Arm == "null" {
		return RoleNull
	}
	if len(r.ControlOf) > 0 {
		return RoleControl
	}
	for _, l := range r.Labels {
		if l == "selfcheck" || strings.HasPrefix(l, "control:") {
			return RoleControl
		}
	}
	for _, l := range r.Labels {
		if l == LabelApplicationControl {
			return RoleApplication
		}
	}
	return RoleFinding
}

// ControlKindsOf are the violation kinds that count as the control run's
// hit on inv; nil where any kind does.
func (r Run) ControlKindsOf(inv string) []string { return r.ControlKinds[inv] }

// OtherKind says why j, a VIOLATED verdict, is no hit of a positive
// control that counts only the violation kinds kinds: it names the kind
// j gave and the kinds needed. It is "" when j is a hit: kinds is empty
// (any kind counts) or names j's kind.
func OtherKind(j Judgement, kinds []string) string {
	if len(kinds) == 0 || slices.Contains(kinds, j.Violation) {
		return ""
	}
	got := "of kind " + j.Violation
	if j.Violation == "" {
		got = "naming no kind"
	}
	return fmt.Sprintf("VIOLATED %s, not of the kind the control is built to break (%s)", got, strings.Join(kinds, " or "))
}

// KindsText says which violation kinds count as a control's hit: the
// kinds, or "any kind" where none is declared.
func KindsText(kinds []string) string {
	if len(kinds) == 0 {
		return "any kind"
	}
	return "of kind " + strings.Join(kinds, " or ")
}

// Inapplicable is one row of the applicability table: a fault class that
// cannot reach what an invariant reads, and why. Every report prints the
// table it was judged with.
type Inapplicable struct {
	FaultClass string `json:"faultClass"`
	Invariant  string `json:"invariant"`
	Reason     string `json:"reason"`
}
