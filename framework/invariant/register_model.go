package invariant

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"

	"github.com/faultline/faultline/framework/evidence"
)

// The register writer's history is checked against the register
// model (a linearizable register with compare-and-swap); every write of
// this writer has a unique value.

// Writer op outcomes (fixtures/images/writer).
const (
	outcomeOK      = "ok"
	outcomeFail    = "fail"
	outcomeUnknown = "unknown"
)

// registerModel is the model for one history. The register starts absent,
// unless the history's first operation is a read that found a value no
// operation of the history wrote: then the writer started on a register
// that was already there (a writer restarted, a lab reset that is only a
// cleanup), and that value is a possible start too.
func registerModel(ops []evidence.RegisterOp) porcupine.Model {
	init := []registerState{{}}
	if v, ok := preexisting(ops); ok {
		init = append(init, registerState{Exists: true, Value: v})
	}
	return stepsModel(describeOpMetadata, init...)
}

func preexisting(ops []evidence.RegisterOp) (string, bool) {
	var first *evidence.RegisterOp
	written := map[string]bool{}
	for i, op := range ops {
		if op.Outcome == outcomeFail {
			continue
		}
		if op.Op != "read" {
			written[op.Value] = true
		}
		if first == nil || op.Invoke.Before(first.Invoke) {
			first = &ops[i]
		}
	}
	if first == nil || first.Op != "read" || first.Outcome != outcomeOK || (first.Found != nil && !*first.Found) || written[first.Value] {
		return "", false
	}
	return first.Value, true
}

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
		o := porcupine.Operation{ClientId: clients[op.Writer], Call: op.Invoke.UnixNano(), Return: op.Return.UnixNano(),
			Metadata: opMetadata{writer: op.Writer, round: op.Round, outcome: op.Outcome, version: op.Version}}
		switch op.Op {
		case "read":
			if op.Outcome != outcomeOK {
				continue // a read of unknown outcome says nothing
			}
			found := op.Found == nil || *op.Found
			o.Input, o.Output = registerInput{Op: registerRead}, registerOutput{Found: found, Value: op.Value}
		case "create", "cas":
			o.Input = registerInput{Op: op.Op, Value: op.Value, Expect: op.Expect}
			o.Output = registerOutput{Unknown: op.Outcome == outcomeUnknown}
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

// lostWrites returns the writes acknowledged before the final read began
// that are not in the chain of writes leading to the value it read (each
// cas names the value it replaced). A write acknowledged after the read
// began may legitimately not show in it.
func lostWrites(ops []evidence.RegisterOp, final evidence.RegisterOp) []evidence.RegisterOp {
	byValue := map[string]evidence.RegisterOp{}
	for _, op := range ops {
		if (op.Op == "create" || op.Op == "cas") && op.Outcome != outcomeFail {
			byValue[op.Value] = op
		}
	}
	chain := map[string]bool{}
	for v := final.Value; v != "" && !chain[v]; {
		chain[v] = true
		op, ok := byValue[v]
		if !ok || op.Op == "create" {
			break
		}
		v = op.Expect
	}
	var lost []evidence.RegisterOp
	for _, op := range ops {
		if (op.Op == "create" || op.Op == "cas") && op.Outcome == outcomeOK && op.Return.Before(final.Invoke) && !chain[op.Value] {
			lost = append(lost, op)
		}
	}
	sort.SliceStable(lost, func(i, j int) bool { return lost[i].Return.Before(lost[j].Return) })
	return lost
}

// staleRead is a read that returned an older value than a write
// acknowledged before the read began.
type staleRead struct {
	read, newer evidence.RegisterOp
}

// staleReads returns the reads, in invoke order, that returned no value,
// or a value the chain of writes had already replaced, when a write had
// been acknowledged before they began: each is compared with the latest
// such write.
func staleReads(ops []evidence.RegisterOp) []staleRead {
	byValue := map[string]evidence.RegisterOp{}
	var acked, reads []evidence.RegisterOp
	for _, op := range ops {
		switch {
		case op.Op == "read" && op.Outcome == outcomeOK:
			reads = append(reads, op)
		case op.Op != "read" && op.Outcome != outcomeFail:
			byValue[op.Value] = op
			if op.Outcome == outcomeOK {
				acked = append(acked, op)
			}
		}
	}
	sort.SliceStable(acked, func(i, j int) bool { return acked[i].Return.Before(acked[j].Return) })
	sort.SliceStable(reads, func(i, j int) bool { return reads[i].Invoke.Before(reads[j].Invoke) })
	var out []staleRead
	k := -1
	for _, r := range reads {
		for k+1 < len(acked) && acked[k+1].Return.Before(r.Invoke) {
			k++
		}
		if k < 0 {
			continue
		}
		newer := acked[k]
		found := r.Found == nil || *r.Found
		if !found || (r.Value != newer.Value && replacedBefore(r.Value, newer.Value, byValue)) {
			out = append(out, staleRead{read: r, newer: newer})
		}
	}
	return out
}

// replacedBefore reports whether old is in the chain of writes leading to
// value, before it.
func replacedBefore(old, value string, byValue map[string]evidence.RegisterOp) bool {
	seen := map[string]bool{}
	for v := value; !seen[v]; {
		seen[v] = true
		op, ok := byValue[v]
		if !ok || op.Op == "create" {
			return false
		}
		if op.Expect == old {
			return true
		}
		v = op.Expect
	}
	return false
}

// describeRead renders what a read returned, for reasons.
func describeRead(op evidence.RegisterOp) string {
	if op.Found != nil && !*op.Found {
		return "no value"
	}
	return fmt.Sprintf("%q", op.Value)
}
