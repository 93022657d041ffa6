package scenario

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
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

// labelText is what Ginkgo accepts in a label.
var labelText = regexp.MustCompile(`^[^&|!,()/]+$`)

// Prefixes and names of the labels generated from a scenario's fields.
const (
	LabelArm      = "arm:"
	LabelFault    = "fault:"
	LabelClass    = "class:"
	LabelTopology = "topology:"
	LabelControl  = "control:"
	LabelWriter   = "writer:"
	LabelCI       = "ci"
	// LabelApplicationControl is generated from ApplicationControl.
	LabelApplicationControl = verdict.LabelApplicationControl
	// LabelRepetition is the round of a suite run with repetitions
	// (-faultline.repeat): repetition:2 on the specs of the second.
	LabelRepetition = "repetition:"
)

// AutoLabels are the labels every scenario gets from its fields: arm:,
// fault:, class:, topology: (Topology or Shape), ci (CI), control: (one
// per ControlOf), application-control (ApplicationControl) and writer:
// (Writer).
func (s Scenario) AutoLabels() []string {
	ls := []string{LabelArm + string(s.arm())}
	if s.Fault != nil {
		ls = append(ls, LabelFault+s.Fault.Kind(), LabelClass+string(s.Fault.Class()))
	}
	if s.Topology != "" {
		ls = append(ls, LabelTopology+s.Topology)
	}
	if s.Shape.Name != "" {
		ls = append(ls, LabelTopology+s.Shape.Name)
	}
	if s.CI {
		ls = append(ls, LabelCI)
	}
	for _, c := range s.ControlOf {
		ls = append(ls, LabelControl+c)
	}
	if s.ApplicationControl {
		ls = append(ls, LabelApplicationControl)
	}
	if s.Writer != "" {
		ls = append(ls, LabelWriter+s.Writer)
	}
	return ls
}

// AllLabels are the scenario's generated labels followed by its own: the
// labels its spec carries.
func (s Scenario) AllLabels() []string {
	return append(s.AutoLabels(), s.Labels...)
}

// Validate checks one scenario.
func (s Scenario) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.ID == "" {
		bad("no ID")
	}
	if s.Title == "" {
		bad("no title")
	}
	if s.Fault == nil {
		bad("no fault")
	} else if _, isNull := fault.StandsFor(s.Fault); isNull {
		bad("Fault is a null fault: give the real fault and set Arm to null")
	}
	if s.Decoy != nil {
		if _, isNull := fault.StandsFor(s.Decoy); isNull {
			bad("Decoy is a null fault: a decoy is what the null arm injects")
		}
	}
	switch s.Arm {
	case "", FaultArm, NullArm:
	default:
		bad("arm %q is not fault or null", s.Arm)
	}
	if c := s.Change; c != nil {
		switch {
		case c.Name == "" || c.Make == nil:
			bad("a change needs a name and a Make")
		case c.After < 0 || (s.Window > 0 && c.After >= s.Window):
			bad("change %q at %s is not inside the %s window", c.Name, c.After, s.Window)
		}
	}
	if s.Window <= 0 {
		bad("window must be positive")
	}
	if s.Settle <= 0 {
		bad("settle timeout must be positive")
	}
	if s.MinEffectShare < 0 || s.MinEffectShare > 1 {
		bad("minimum effect share %v is not between 0 and 1", s.MinEffectShare)
	}
	if len(s.Invariants) == 0 {
		bad("no invariants")
	}
	names := map[string]bool{}
	for _, inv := range s.Invariants {
		switch inv.Phase() {
		case verdict.Safety, verdict.Convergence:
		default:
			bad("invariant %s has phase %q (safety or convergence)", inv.Name(), inv.Phase())
		}
		if names[inv.Name()] {
			bad("invariant %s is listed twice", inv.Name())
		}
		names[inv.Name()] = true
	}
	for _, c := range s.ControlOf {
		if !names[c] {
			bad("positive control of %s, which the scenario does not judge", c)
		}
	}
	for _, inv := range sortedKindKeys(s.ControlKinds) {
		kinds := s.ControlKinds[inv]
		switch {
		case !slices.Contains(s.ControlOf, inv):
			bad("violation kinds %s given for %s, which the scenario is no positive control of", orNone(kinds), inv)
		case len(kinds) == 0:
			bad("no violation kind given for %s: name the kinds that count as its hit, or leave it out to count any", inv)
		}
		for i, k := range kinds {
			switch {
			case k == "":
				bad("an empty violation kind given for %s", inv)
			case slices.Contains(kinds[:i], k):
				bad("violation kind %s given twice for %s", k, inv)
			}
		}
	}
	if s.ApplicationControl && len(s.ControlOf) > 0 {
		bad("both a positive control (of %s) and an application control: a positive control must break what it names, an application control expects nothing", strings.Join(s.ControlOf, ", "))
	}
	if s.Topology != "" && s.Shape.Name != "" {
		bad("both a topology (%s) and a shape (%s): give one", s.Topology, s.Shape.Name)
	}
	if err := s.Shape.validate(); err != nil {
		bad("%v", err)
	}
	for _, l := range s.Labels {
		// These labels mean something to the engine only through the
		// fields they are generated from.
		switch {
		case strings.HasPrefix(l, LabelControl):
			bad("label %q: set ControlOf; the engine generates control: labels from it", l)
		case strings.HasPrefix(l, LabelWriter):
			bad("label %q: set Writer; the engine generates the writer: label from it", l)
		case l == LabelApplicationControl:
			bad("label %q: set ApplicationControl; the engine generates the label from it", l)
		case strings.HasPrefix(l, LabelRepetition):
			bad("label %q: the engine labels each round of a suite run with repetitions (-faultline.repeat)", l)
		}
	}
	if s.Fault != nil {
		for _, l := range s.AllLabels() {
			if !labelText.MatchString(l) {
				bad("label %q has a character Ginkgo does not allow in labels (&|!,()/)", l)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("scenario %q [%s]: %w", s.ID, s.arm(), err)
	}
	return nil
}

func sortedKindKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "(none)"
	}
	return strings.Join(ss, ", ")
}

// ValidateTable checks every scenario and that no ID and arm repeat.
func ValidateTable(table []Scenario) error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range table {
		if err := s.Validate(); err != nil {
			errs = append(errs, err)
		}
		key := s.ID + "\x00" + string(s.arm())
		if seen[key] {
			errs = append(errs, fmt.Errorf("scenario %q [%s] is in the table twice", s.ID, s.arm()))
		}
		seen[key] = true
	}
	if len(table) == 0 {
		errs = append(errs, errors.New("the scenario table is empty"))
	}
	return errors.Join(errs...)
}
