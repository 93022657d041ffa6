package scenario

import (
	"context"
	"slices"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// Arm says whether a run injects its fault or the fault's null stand-in.
type Arm string

const (
	FaultArm Arm = "fault"
	NullArm  Arm = "null"
)

// Scenario is one experiment, as data.
type Scenario struct {
	// ID names the scenario in run records, reports and --focus.
	ID    string
	Title string
	// Labels are added to the labels generated from the scenario's fields
	// (AutoLabels): paper:, component:, ... Ginkgo filters on both.
	Labels []string
	// Topology is the lab topology the scenario needs, by name; empty
	// means any. Against another topology the spec is skipped and says
	// why. A scenario that needs hosts and roles rather than a name
	// declares a Shape instead.
	Topology string
	// Shape is the lab shape the scenario needs (label topology:<name>).
	// It is checked before the lab is reset; a lab without it skips the
	// spec, naming what is missing. Zero means any lab.
	Shape Shape
	// CI puts the scenario in the ci subset (label ci).
	CI bool
	// Writer names the control-plane host whose API server alone the
	// register writer writes through (label writer:<host>); empty means
	// the lab's usual address. The suite's Prepare reads it.
	Writer string
	Fault  fault.Fault
	// Decoy, when set, is what the null arm injects in Fault's place
	// (fault.NullWithDecoy): the same kind of action on something the
	// judged behaviour does not depend on, or the part of a compound fault
	// that is the scenario's condition (agents pinned to one API server)
	// without the part that is its fault. Nil: the null arm injects
	// nothing.
	Decoy fault.Fault
	// Change, when set, is what the scenario changes in the cluster while
	// the fault is in place (a policy created, a backend replaced): the
	// engine makes it in both arms, After into the window, and stamps it
	// on the timeline, so the null arm measures how fast a healthy lab
	// applies the same change.
	Change *Change
	// Arm defaults to FaultArm.
	Arm Arm
	// Window is how long the fault stays in place while evidence is sampled.
	Window time.Duration
	// Settle bounds how long the cluster may take to converge after heal.
	Settle     time.Duration
	Invariants []invariant.Invariant
	// ControlOf names the invariants the scenario is a positive control
	// of: its fault is built to break them (labels control:<invariant>).
	// Their verdicts are recorded as judged; in the fault arm VIOLATED is
	// what the spec expects of them, and any other verdict fails it (the
	// fault did not break what it should, or the detector did not see
	// it). The null arm keeps the field and its labels, and expects
	// nothing to break: with nothing injected it is the control's null
	// arm, and its record names no invariant it must break.
	ControlOf []string
	// ControlKinds narrows, for some of the invariants of ControlOf, what
	// counts as breaking them to the violation kinds
	// (verdict.Judgement.Violation) the control is built to make:
	// storage-integrity's filesystem-damaged, say, and not its
	// ledger-damaged, which another part of the stored state would give.
	// A VIOLATED of another kind fails the fault arm as a PRESERVED would:
	// the detector the control was built for did not fire. An invariant
	// it does not name counts a VIOLATED of any kind (reports say so).
	// Each entry names an invariant of ControlOf and at least one kind;
	// the run record keeps it (verdict.Run.ControlKinds).
	ControlKinds map[string][]string
	// ApplicationControl marks a correct-application control: the fault
	// of a finding against a workload built not to rely on the guarantee
	// the finding tests (label application-control). Its fault arm's role
	// is verdict.RoleApplication: its verdicts say what that application
	// kept, separating what the platform allowed from what the finding's
	// application assumed, and are reported beside the findings, never
	// pooled with them. Nothing is expected of them (the result is stated
	// either way). Its null arm is a null arm. Not with ControlOf.
	ApplicationControl bool
	// MinEffectShare is the share of the window the effect probes that
	// saw the fault's effect must attest for the fault arm's run to count
	// (each look what it saw and half a tick either side); below it
	// the run is FAULT_INEFFECTIVE. Zero takes the fault's own
	// (fault.EffectShareOf: its declaration, or fault.DefaultEffectShare).
	// Set it only for a scenario whose fault acts for part of the window
	// by design, and say why beside it.
	MinEffectShare float64
	// Emulation, when set, says what the lab emulates of what the scenario
	// stands on besides its fault (the storage two copies write, say), in
	// one line, empty where the lab has the real thing; the run record's
	// emulation gives it after the fault's.
	Emulation func(l lab.Lab) string
	// Quiesce, when set, runs after heal and before settling: it stops
	// what the scenario's final evidence must be read without (a workload
	// still writing the volume whose stored state is judged), as an
	// operator who checks the data stops the application first. Settle's
	// samples, and so the final snapshot, come after it; its start and
	// end are events of the timeline. An error aborts the run.
	Quiesce func(ctx context.Context, l lab.Lab) error
}

// Change is an action on the cluster a scenario makes during its window.
type Change struct {
	// Name says what is changed, in timeline events and reports.
	Name string
	// After is how far into the window the change is made; it must be
	// shorter than the window, leaving the rest to watch its effect.
	After time.Duration
	// Make makes the change. An error aborts the run: what was to be
	// watched did not happen.
	Make func(ctx context.Context, l lab.Lab) error
}

// Timeline event kinds of a change.
const (
	// QuiesceStartedEvent, QuiescedEvent and QuiesceFailedEvent bracket a
	// scenario's Quiesce.
	QuiesceStartedEvent = "quiesce-started"
	QuiescedEvent       = "quiesced"
	QuiesceFailedEvent  = "quiesce-failed"
	ChangeStartedEvent  = "change-started"
	ChangeMadeEvent     = "change-made"
	ChangeFailedEvent   = "change-failed"
)

// WithNullArms returns each scenario as its fault arm followed by its null
// arm: the same scenario with a fault that does nothing, which expects
// nothing to break (see ControlOf).
func WithNullArms(table ...Scenario) []Scenario {
	var out []Scenario
	for _, s := range table {
		f, n := s, s
		f.Arm, n.Arm = FaultArm, NullArm
		out = append(out, f, n)
	}
	return out
}

// mustBreakKinds are the violation kinds that count as breaking each of
// mustBreak's invariants where the control names them.
func (s Scenario) mustBreakKinds() map[string][]string {
	if len(s.mustBreak()) == 0 || len(s.ControlKinds) == 0 {
		return nil
	}
	out := map[string][]string{}
	for inv, kinds := range s.ControlKinds {
		out[inv] = slices.Clone(kinds)
	}
	return out
}

// mustBreak are the invariants the run must show VIOLATED: the positive
// control's, in its fault arm only. With nothing injected nothing is
// expected to break.
func (s Scenario) mustBreak() []string {
	if s.arm() == NullArm {
		return nil
	}
	return s.ControlOf
}

func (s Scenario) arm() Arm {
	if s.Arm == "" {
		return FaultArm
	}
	return s.Arm
}

// requiredEffectShare is the share of the window the fault arm's looks
// must show the effect in.
func (s Scenario) requiredEffectShare() float64 {
	if s.MinEffectShare > 0 {
		return s.MinEffectShare
	}
	return fault.EffectShareOf(s.Fault)
}

// role is the run's role: the null arm and a positive control test the
// detector; an application control's fault arm is one; any other fault
// arm is a finding.
func (s Scenario) role() string {
	switch {
	case s.arm() == NullArm:
		return verdict.RoleNull
	case len(s.mustBreak()) > 0:
		return verdict.RoleControl
	case s.ApplicationControl:
		return verdict.RoleApplication
	default:
		return verdict.RoleFinding
	}
}

// injected is what the run really injects: the fault, or its null arm.
func (s Scenario) injected() fault.Fault {
	if s.arm() == NullArm {
		if s.Decoy != nil {
			return fault.NullWithDecoy(s.Fault, s.Decoy)
		}
		return fault.Null(s.Fault)
	}
	return s.Fault
}
