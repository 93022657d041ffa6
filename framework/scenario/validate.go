package scenario

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/verdict"
)

// A scenario's labels, and the checks a table passes before any spec
// is built from it.

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
