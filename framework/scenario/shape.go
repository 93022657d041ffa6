package scenario

import (
	"errors"
	"fmt"

	"github.com/faultline/faultline/lab"
)

// Shape is a lab shape a suite or scenario needs: the hosts, roles or
// racks its faults and fixtures name. A lab of any name that has them will
// do. The engine checks it before it touches the lab: a suite's when the
// suite starts (refusing to run), a scenario's before its reset (skipping
// the spec). Either way the message names what the lab lacks.
type Shape struct {
	// Name names the shape in the scenario's topology: label ("lab11").
	Name string
	// Check says what l lacks of the shape, naming every missing host or
	// role, and nil when l has it. It must not change the lab.
	Check func(l lab.Lab) error
}

func (s Shape) validate() error {
	switch {
	case s.Name == "" && s.Check != nil:
		return errors.New("a shape with a check but no name")
	case s.Name != "" && s.Check == nil:
		return fmt.Errorf("shape %s has no check", s.Name)
	}
	return nil
}

// check checks l against the shape; nil for the zero shape.
func (s Shape) check(l lab.Lab) error {
	if s.Check == nil {
		return nil
	}
	if err := s.Check(l); err != nil {
		return fmt.Errorf("lab %s does not have the shape %s: %w", l.Info().Name, s.Name, err)
	}
	return nil
}
