package checker

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
// invoked, or never. The leader-elected writer's store does not
// compare-and-swap: its model is kv_model.go's.

// Register operations.
const (
	RegisterRead   = "read"
	RegisterCreate = "create"
	RegisterCAS    = "cas"
)

// RegisterState is the register: absent, or holding a value.
type RegisterState struct {
	Exists bool
	Value  string
}

// RegisterInput is what an operation asked.
type RegisterInput struct {
	// Op is RegisterRead, RegisterCreate or RegisterCAS.
	Op string
	// Value is what a create or cas writes.
	Value string
	// Expect is the value a cas replaces.
	Expect string
}

// RegisterOutput is what an operation returned.
type RegisterOutput struct {
	// Unknown: a write whose outcome is unknown.
	Unknown bool
	// Found and Value are what a read returned.
	Found bool
	Value string
}

// RegisterSteps is the register's step function, without its initial
// states: RegisterModel sets them.
var RegisterSteps = porcupine.NondeterministicModel{
	Step: func(state, input, output any) []any {
		s, in, out := state.(RegisterState), input.(RegisterInput), output.(RegisterOutput)
		switch in.Op {
		case RegisterRead:
			if out.Found == s.Exists && (!s.Exists || out.Value == s.Value) {
				return []any{s}
			}
			return nil
		case RegisterCreate, RegisterCAS:
			applies := (in.Op == RegisterCreate && !s.Exists) || (in.Op == RegisterCAS && s.Exists && s.Value == in.Expect)
			next := RegisterState{Exists: true, Value: in.Value}
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
	Equal: func(a, b any) bool { return a.(RegisterState) == b.(RegisterState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(RegisterInput), output.(RegisterOutput)
		switch {
		case in.Op == RegisterRead && !out.Found:
			return "read() → none"
		case in.Op == RegisterRead:
			return fmt.Sprintf("read() → %s", out.Value)
		case in.Op == RegisterCAS:
			return fmt.Sprintf("cas(%s → %s) unknown=%v", in.Expect, in.Value, out.Unknown)
		}
		return fmt.Sprintf("create(%s) unknown=%v", in.Value, out.Unknown)
	},
	DescribeState: DescribeRegister,
}

// RegisterModel is the register model starting in any of init (absent
// when none is given), its operations' metadata described by describe
// (nil: none).
func RegisterModel(describe func(metadata any) string, init ...RegisterState) porcupine.Model {
	if len(init) == 0 {
		init = []RegisterState{{}}
	}
	states := make([]any, len(init))
	for i, s := range init {
		states[i] = s
	}
	m := RegisterSteps
	m.Init = func() []any { return states }
	m.DescribeOperationMetadata = describe
	return m.ToModel()
}

// DescribeRegister is a register state as porcupine's visualisation shows
// it.
func DescribeRegister(state any) string {
	s := state.(RegisterState)
	if !s.Exists {
		return "absent"
	}
	return s.Value
}
