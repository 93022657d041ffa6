package invariant

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The register model, for histories of a linearizable register with
// compare-and-swap (the register writer's ConfigMap, whose API server
// makes every write a compare-and-swap on the resourceVersion), the way
// etcd's robustness tests check theirs: a cas names the value it
// replaces, and an operation whose outcome is unknown (a timeout after the
// request was sent) may have taken effect at any moment after it was
// invoked, or never. A store that does not compare-and-swap needs
// another model.

// Register operations.
const (
	registerRead   = "read"
	registerCreate = "create"
	registerCAS    = "cas"
)

// registerState is the register: absent, or holding a value.
type registerState struct {
	Exists bool
	Value  string
}

// registerInput is what an operation asked.
type registerInput struct {
	// Op is registerRead, registerCreate or registerCAS.
	Op string
	// Value is what a create or cas writes.
	Value string
	// Expect is the value a cas replaces.
	Expect string
}

// registerOutput is what an operation returned.
type registerOutput struct {
	// Unknown: a write whose outcome is unknown.
	Unknown bool
	// Found and Value are what a read returned.
	Found bool
	Value string
}

// registerSteps is the register's step function, without its initial
// states: stepsModel sets them.
var registerSteps = porcupine.NondeterministicModel{
	Step: func(state, input, output any) []any {
		s, in, out := state.(registerState), input.(registerInput), output.(registerOutput)
		switch in.Op {
		case registerRead:
			if out.Found == s.Exists && (!s.Exists || out.Value == s.Value) {
				return []any{s}
			}
			return nil
		case registerCreate, registerCAS:
			applies := (in.Op == registerCreate && !s.Exists) || (in.Op == registerCAS && s.Exists && s.Value == in.Expect)
			next := registerState{Exists: true, Value: in.Value}
			switch {
			case out.Unknown && applies:
				return []any{s, next}
			case out.Unknown:
				return []any{s}
			case applies:
				return []any{next}
			}
			return nil
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(registerState) == b.(registerState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(registerInput), output.(registerOutput)
		switch {
		case in.Op == registerRead && !out.Found:
			return "read() → none"
		case in.Op == registerRead:
			return fmt.Sprintf("read() → %s", out.Value)
		case in.Op == registerCAS:
			return fmt.Sprintf("cas(%s → %s) unknown=%v", in.Expect, in.Value, out.Unknown)
		}
		return fmt.Sprintf("create(%s) unknown=%v", in.Value, out.Unknown)
	},
	DescribeState: describeRegister,
}

// stepsModel is the register model starting in any of init (absent
// when none is given), its operations' metadata described by describe
// (nil: none).
func stepsModel(describe func(metadata any) string, init ...registerState) porcupine.Model {
	if len(init) == 0 {
		init = []registerState{{}}
	}
	states := make([]any, len(init))
	for i, s := range init {
		states[i] = s
	}
	m := registerSteps
	m.Init = func() []any { return states }
	m.DescribeOperationMetadata = describe
	return m.ToModel()
}

// describeRegister is a register state as porcupine's visualisation shows
// it.
func describeRegister(state any) string {
	s := state.(registerState)
	if !s.Exists {
		return "absent"
	}
	return s.Value
}
