package invariant

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/faultline/faultline/framework/evidence"
)

// The register writer's history is checked as a linearizable register with
// compare-and-swap, the way etcd's robustness tests check theirs: every
// write has a unique value, a cas names the value it replaces, and an
// operation whose outcome is unknown (a timeout after the request was
// sent) may have taken effect at any moment after it was invoked, or never.

// Writer op outcomes (fixtures/images/writer).
const (
	outcomeOK      = "ok"
	outcomeFail    = "fail"
	outcomeUnknown = "unknown"
)

type registerState struct {
	exists bool
	value  string
}

type registerInput struct {
	op     string // read, create, cas
	value  string // written
	expect string // cas: the value replaced
}

type registerOutput struct {
	unknown bool
	found   bool   // read
	value   string // read
}

var registerModel = (&porcupine.NondeterministicModel{
	Init: func() []any { return []any{registerState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(registerState), input.(registerInput), output.(registerOutput)
		switch in.op {
		case "read":
			if out.found == s.exists && (!s.exists || out.value == s.value) {
				return []any{s}
			}
			return nil
		case "create", "cas":
			applies := (in.op == "create" && !s.exists) || (in.op == "cas" && s.exists && s.value == in.expect)
			next := registerState{exists: true, value: in.value}
			switch {
			case out.unknown && applies:
				return []any{s, next}
			case out.unknown:
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
		case in.op == "read" && !out.found:
			return "read() → none"
		case in.op == "read":
			return fmt.Sprintf("read() → %s", out.value)
		case in.op == "cas":
			return fmt.Sprintf("cas(%s → %s) unknown=%v", in.expect, in.value, out.unknown)
		}
		return fmt.Sprintf("create(%s) unknown=%v", in.value, out.unknown)
	},
}).ToModel()

// historyOf turns the writer's ops into porcupine operations. Failed ops
// changed nothing and are left out; an unknown write's return is the end
// of time.
func historyOf(ops []evidence.RegisterOp) ([]porcupine.Operation, error) {
	clients := map[string]int{}
	var out []porcupine.Operation
	for i, op := range ops {
		if op.Outcome == outcomeFail {
			continue
		}
		if op.Outcome != outcomeOK && op.Outcome != outcomeUnknown {
			return nil, fmt.Errorf("op %d (%s round %d): outcome %q is not ok, fail or unknown", i, op.Writer, op.Round, op.Outcome)
		}
		if _, ok := clients[op.Writer]; !ok {
			clients[op.Writer] = len(clients)
		}
		o := porcupine.Operation{ClientId: clients[op.Writer], Call: op.Invoke.UnixNano(), Return: op.Return.UnixNano()}
		switch op.Op {
		case "read":
			if op.Outcome != outcomeOK {
				continue // a read of unknown outcome says nothing
			}
			found := op.Found == nil || *op.Found
			o.Input, o.Output = registerInput{op: "read"}, registerOutput{found: found, value: op.Value}
		case "create", "cas":
			o.Input = registerInput{op: op.Op, value: op.Value, expect: op.Expect}
			o.Output = registerOutput{unknown: op.Outcome == outcomeUnknown}
			if op.Outcome == outcomeUnknown {
				o.Return = math.MaxInt64
			}
		default:
			return nil, fmt.Errorf("op %d (%s round %d): unknown op %q", i, op.Writer, op.Round, op.Op)
		}
		if o.Return < o.Call {
			return nil, fmt.Errorf("op %d (%s round %d): returns before it was invoked", i, op.Writer, op.Round)
		}
		out = append(out, o)
	}
	return out, nil
}

// lostWrites returns the acknowledged writes that are not in the chain of
// writes leading to final (each cas names the value it replaced).
func lostWrites(ops []evidence.RegisterOp, final string) []evidence.RegisterOp {
	byValue := map[string]evidence.RegisterOp{}
	for _, op := range ops {
		if (op.Op == "create" || op.Op == "cas") && op.Outcome != outcomeFail {
			byValue[op.Value] = op
		}
	}
	chain := map[string]bool{}
	for v := final; v != "" && !chain[v]; {
		chain[v] = true
		op, ok := byValue[v]
		if !ok || op.Op == "create" {
			break
		}
		v = op.Expect
	}
	var lost []evidence.RegisterOp
	for _, op := range ops {
		if (op.Op == "create" || op.Op == "cas") && op.Outcome == outcomeOK && !chain[op.Value] {
			lost = append(lost, op)
		}
	}
	sort.SliceStable(lost, func(i, j int) bool { return lost[i].Return.Before(lost[j].Return) })
	return lost
}
