package checker

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The leader-elected writer's store model: one counter key of
// fixtures/electorlog's store, as porcupine checks it. It differs from the
// register model (framework/invariant's) in what an increment of unknown
// outcome may do, because the store does not do a compare-and-swap:
//
//   - unfenced, the write is a plain put: a put whose client timed out may
//     still commit, at any moment after it was invoked, over whatever the
//     key holds then, or never;
//   - fenced, the write is one transaction that compares the token key
//     only (not the counter): it commits when the highest token the store
//     accepted is not above the writer's, and then puts the counter and
//     the writer's token; refused otherwise.
//
// An acknowledged increment stays a compare-and-swap from what it read to
// what it wrote: that is what a read-modify-write promises when one copy
// makes it, and what two copies break (a lost update); fenced, its commit
// also passed the token check. A read returns the value.
//
// The fence is kept per key: the store's token key is shared by every
// counter, so another key's writes may have raised it further than the
// model knows. A lower fence lets more writes through, never fewer, so
// the model allows every order the store allows: it never calls a history
// that fits "not linearizable" for want of the other keys.

// Store operations of the model.
const (
	storeRead = "read"
	// storeCAS and storeCreate: an acknowledged increment (create: it
	// read none).
	storeCAS    = "cas"
	storeCreate = "create"
	// storePut: an increment of unknown outcome, as the store makes it.
	storePut = "put"
)

// noFence is the fence before any fenced write: below every token.
const noFence = int64(-1)

// storeState is one counter key and the highest token its fenced writes
// set.
type storeState struct {
	Exists bool
	Value  string
	Fence  int64
}

// storeInput is what an operation asked.
type storeInput struct {
	Op     string
	Value  string
	Expect string
	// Fenced: the write is the fenced transaction, with Token.
	Fenced bool
	Token  int64
}

// storeOutput is what an operation returned.
type storeOutput struct {
	// Found and Value are what a read returned.
	Found bool
	Value string
}

// admits says whether the fenced transaction's token check passes in s.
func (in storeInput) admits(s storeState) bool { return !in.Fenced || s.Fence <= in.Token }

func (in storeInput) write(s storeState) storeState {
	next := storeState{Exists: true, Value: in.Value, Fence: s.Fence}
	if in.Fenced {
		next.Fence = in.Token
	}
	return next
}

var storeSteps = porcupine.NondeterministicModel{
	Step: func(state, input, output any) []any {
		s, in, out := state.(storeState), input.(storeInput), output.(storeOutput)
		switch in.Op {
		case storeRead:
			if out.Found == s.Exists && (!s.Exists || out.Value == s.Value) {
				return []any{s}
			}
			return nil
		case storeCAS, storeCreate:
			matches := (in.Op == storeCreate && !s.Exists) || (in.Op == storeCAS && s.Exists && s.Value == in.Expect)
			if matches && in.admits(s) {
				return []any{in.write(s)}
			}
			return nil
		case storePut:
			// Unknown: applied here, or not (later, or never).
			if in.admits(s) {
				return []any{s, in.write(s)}
			}
			return []any{s}
		}
		return nil
	},
	Equal: func(a, b any) bool { return a.(storeState) == b.(storeState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(storeInput), output.(storeOutput)
		fence := ""
		if in.Fenced {
			fence = fmt.Sprintf(", token %d", in.Token)
		}
		switch in.Op {
		case storeRead:
			if !out.Found {
				return "read() → none"
			}
			return fmt.Sprintf("read() → %s", out.Value)
		case storeCAS:
			return fmt.Sprintf("cas(%s → %s%s)", in.Expect, in.Value, fence)
		case storeCreate:
			return fmt.Sprintf("create(%s%s)", in.Value, fence)
		}
		return fmt.Sprintf("put(%s%s) unknown", in.Value, fence)
	},
	DescribeState: func(state any) string {
		s := state.(storeState)
		v := "absent"
		if s.Exists {
			v = s.Value
		}
		if s.Fence != noFence {
			v += fmt.Sprintf(" (fence %d)", s.Fence)
		}
		return v
	},
}

// storeModel is the model starting with the key absent, or holding start
// when start is given, and no fence.
func storeModel(describe func(metadata any) string, start *string) porcupine.Model {
	init := []any{storeState{Fence: noFence}}
	if start != nil {
		init = append(init, storeState{Exists: true, Value: *start, Fence: noFence})
	}
	m := storeSteps
	m.Init = func() []any { return init }
	m.DescribeOperationMetadata = describe
	return m.ToModel()
}
