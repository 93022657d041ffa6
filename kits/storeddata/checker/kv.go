package checker

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/history"
)

// KVOp is one operation of the leader-elected writer, with its writer.
type KVOp struct {
	Writer history.Identity `json:"writer"`
	Op     electorlog.Op    `json:"op"`
}

func (o KVOp) String() string {
	s := fmt.Sprintf("%s %d of %s by %s", o.Op.Kind, o.Op.N, o.Op.Key, o.Writer)
	if o.Op.Kind == electorlog.OpIncrement {
		read := "none"
		if o.Op.Found {
			read = o.Op.Read
		}
		s += fmt.Sprintf(" (%s → %s", read, o.Op.Value)
		if o.Op.Token != nil {
			s += ", token " + o.Op.Token.String()
		}
		s += ")"
	}
	s += fmt.Sprintf(", invoked %s, %s", stamp(o.Op.Invoke), o.Op.Settled())
	if !o.Op.Return.IsZero() {
		s += " at " + stamp(o.Op.Return)
	}
	if o.Op.Revision > 0 {
		s += fmt.Sprintf(", store revision %d", o.Op.Revision)
	}
	return s
}

// Linearizability is what porcupine said of one key's history.
type Linearizability string

const (
	Linearizable    Linearizability = "linearizable"
	NotLinearizable Linearizability = "not linearizable"
	// Undecided: the checker ran out of time.
	Undecided Linearizability = "undecided"
)

// KeyHistory is one key's check.
type KeyHistory struct {
	Key    string          `json:"key"`
	Result Linearizability `json:"result"`
	// Checked counts the operations given to the checker: acknowledged
	// reads, and increments acknowledged or of unknown outcome.
	Checked int `json:"checked"`
	// Reads and Increments count the acknowledged ones; Unknown the
	// increments of unknown outcome (they may or may not have taken
	// effect, and are never taken as values read).
	Reads      int `json:"reads"`
	Increments int `json:"increments"`
	Unknown    int `json:"unknown"`
	// Start is the value the key held before the history, when its first
	// operation read one no operation wrote ("" when it starts absent).
	Start string `json:"start,omitempty"`
	// LostUpdates, for a key that fits no order, are pairs of
	// acknowledged increments that replaced the same value (both read it
	// and both wrote over it): one of the two increments is lost. A value
	// an increment of unknown outcome wrote is left out: its put may land
	// late and bring the value back for a later increment to replace.
	LostUpdates [][2]KVOp `json:"lostUpdates,omitempty"`
}

// KV is the check of every key the leader-elected writer's histories
// touch.
type KV struct {
	Looked struct {
		Writers int `json:"writers"`
		Ops     int `json:"ops"`
		// Fail counts operations that changed nothing (left out).
		Fail int `json:"fail"`
	} `json:"looked"`
	Keys []KeyHistory `json:"keys"`
}

// Result is the worst of the keys' results: not linearizable when one
// key is, else undecided when one is, else linearizable.
func (k KV) Result() Linearizability {
	out := Linearizable
	for _, kh := range k.Keys {
		switch kh.Result {
		case NotLinearizable:
			return NotLinearizable
		case Undecided:
			out = Undecided
		}
	}
	return out
}

func (k KV) String() string {
	var parts []string
	for _, kh := range k.Keys {
		s := fmt.Sprintf("%s %s (%d checked: %d reads, %d increments acknowledged, %d unknown", kh.Key, kh.Result, kh.Checked, kh.Reads, kh.Increments, kh.Unknown)
		if kh.Start != "" {
			s += ", starting at " + kh.Start
		}
		s += ")"
		if len(kh.LostUpdates) > 0 {
			l := kh.LostUpdates[0]
			s += fmt.Sprintf("; %d lost update(s), the first: %s and %s", len(kh.LostUpdates), l[0], l[1])
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%d writer(s), %d operation(s) (%d changed nothing); %s", k.Looked.Writers, k.Looked.Ops, k.Looked.Fail, strings.Join(parts, "; "))
}

// CheckKV checks each key's history against the store's model
// (kv_model.go): an acknowledged increment is one operation from the
// invoke of its read to the return of its write, a cas from what it read
// to what it wrote (a create when it read none), which is what a
// read-modify-write promises when one copy makes it; fenced, its commit
// also passed the store's token check. An increment that failed changed
// nothing and is left out; one of unknown outcome is what the store does
// with a write whose client gave up: unfenced a plain put, fenced a
// transaction that checks the token only, either taking effect at any
// moment after its invoke or never (one whose value never reached the
// history made no write: the writer stores the value before it writes); a
// read that did not return a value is left out. Each key's check gives up
// after timeout.
//
// The store itself (one etcd) is linearizable, so its puts and gets always
// fit one order; what does not is two leaders' increments: both read one
// value and both write over it, and one increment is lost. Lost-update
// pairs are named only for a key that fits no order.
func CheckKV(hs []electorlog.History, timeout time.Duration) (KV, error) {
	return checkKVBy(hs, timeout, clockSpan)
}

// CheckKVInStoreOrder is CheckKV with every operation placed by the
// history store's order instead of its writer's clock (StoreOrder): from
// the revision of its invoke's put, stored before it began, to that of
// its outcome's, stored after it returned. Each operation is widened to
// its puts, so the check allows every order the clocks would and more: it
// never calls a history that fits "not linearizable" for want of clocks,
// and needs none a clock-skew fault can set apart. An operation the order
// cannot place (its key read without revisions) is an error.
func CheckKVInStoreOrder(hs []electorlog.History, order StoreOrder, timeout time.Duration) (KV, error) {
	return checkKVBy(hs, timeout, func(o KVOp) (int64, int64, error) {
		inc := o.Writer.Incarnation
		call, ok := order.began(inc, o.Op.N)
		if !ok {
			return 0, 0, fmt.Errorf("%s: its history key has no revisions, so the store's order cannot place it", o)
		}
		if o.Op.Settled() == history.OutcomeUnknown {
			return call, math.MaxInt64, nil
		}
		ret, ok := order.ended(inc, o.Op.N, o.Op.Outcome != "")
		if !ok {
			return 0, 0, fmt.Errorf("%s: its outcome's put has no revision, so the store's order cannot place it", o)
		}
		return call, ret, nil
	})
}

// spanOf places an operation: when it began and had returned by, as
// porcupine's call and return; an unknown operation returns at the end
// of time.
type spanOf func(KVOp) (call, ret int64, err error)

// clockSpan places an operation by its writer's clock.
func clockSpan(o KVOp) (int64, int64, error) {
	if o.Op.Settled() == history.OutcomeUnknown {
		return o.Op.Invoke.UnixNano(), math.MaxInt64, nil
	}
	return o.Op.Invoke.UnixNano(), o.Op.Return.UnixNano(), nil
}

func checkKVBy(hs []electorlog.History, timeout time.Duration, span spanOf) (KV, error) {
	var k KV
	k.Looked.Writers = len(hs)
	byKey := map[string][]KVOp{}
	fencedBy := map[string]bool{}
	for _, h := range hs {
		fencedBy[h.Start.Writer.Incarnation] = h.Start.Fencing == electorlog.FencingLeaseTransitions
		for _, op := range h.Ops {
			k.Looked.Ops++
			if op.Settled() == history.OutcomeFail {
				k.Looked.Fail++
				continue
			}
			if op.Kind == electorlog.OpRead && op.Settled() != history.OutcomeOK {
				continue
			}
			if op.Kind == electorlog.OpIncrement && op.Value == "" {
				// Died before its write's value was stored: it wrote
				// nothing (the write follows the store).
				continue
			}
			byKey[op.Key] = append(byKey[op.Key], KVOp{Writer: h.Start.Writer, Op: op})
		}
	}
	keys := make([]string, 0, len(byKey))
	for key := range byKey {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		kh, err := checkKey(key, byKey[key], fencedBy, timeout, span)
		if err != nil {
			return KV{}, err
		}
		k.Keys = append(k.Keys, kh)
	}
	return k, nil
}

func checkKey(key string, ops []KVOp, fencedBy map[string]bool, timeout time.Duration, span spanOf) (KeyHistory, error) {
	type timed struct {
		KVOp
		call, ret int64
	}
	ts := make([]timed, len(ops))
	for i, o := range ops {
		call, ret, err := span(o)
		if err != nil {
			return KeyHistory{}, err
		}
		ts[i] = timed{o, call, ret}
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].call < ts[j].call })
	for i := range ts {
		ops[i] = ts[i].KVOp
	}
	kh := KeyHistory{Key: key}
	clients := map[string]int{}
	written := map[string]bool{}
	var hist []porcupine.Operation
	for i, o := range ops {
		op := o.Op
		inc := o.Writer.Incarnation
		if _, ok := clients[inc]; !ok {
			clients[inc] = len(clients)
		}
		p := porcupine.Operation{ClientId: clients[inc], Call: ts[i].call, Return: ts[i].ret, Metadata: o}
		switch op.Kind {
		case electorlog.OpRead:
			kh.Reads++
			p.Input = storeInput{Op: storeRead}
			p.Output = storeOutput{Found: op.Found, Value: op.Read}
		case electorlog.OpIncrement:
			written[op.Value] = true
			in := storeInput{Op: storeCreate, Value: op.Value}
			if op.Found {
				in.Op, in.Expect = storeCAS, op.Read
			}
			if fencedBy[inc] && op.Token != nil {
				in.Fenced, in.Token = true, int64(op.Token.Transitions)
			}
			if op.Settled() == history.OutcomeUnknown {
				// What the store does with a write it may have taken:
				// a put (fenced: behind the token check), at any moment
				// after the invoke, or never.
				kh.Unknown++
				in.Op, in.Expect = storePut, ""
			} else {
				kh.Increments++
			}
			p.Input, p.Output = in, storeOutput{}
		default:
			return KeyHistory{}, fmt.Errorf("%s: kind %q is neither %s nor %s", o, op.Kind, electorlog.OpRead, electorlog.OpIncrement)
		}
		if p.Return < p.Call {
			return KeyHistory{}, fmt.Errorf("%s returns before it was invoked", o)
		}
		hist = append(hist, p)
	}
	kh.Checked = len(hist)
	var start *string
	// A key that held a value before the history (a writer restarted on a
	// store that was not emptied): the first operation read it, and no
	// operation of the history wrote it.
	if len(ops) > 0 && ops[0].Op.Found && !written[ops[0].Op.Read] && (ops[0].Op.Kind == electorlog.OpIncrement || ops[0].Op.Settled() == history.OutcomeOK) {
		kh.Start = ops[0].Op.Read
		start = &kh.Start
	}
	switch porcupine.CheckOperationsTimeout(storeModel(describeKVOp, start), hist, timeout) {
	case porcupine.Ok:
		kh.Result = Linearizable
	case porcupine.Illegal:
		kh.Result = NotLinearizable
	default:
		kh.Result = Undecided
	}
	if kh.Result == NotLinearizable {
		kh.LostUpdates = lostUpdates(ops)
	}
	return kh, nil
}

// lostUpdates pairs the acknowledged increments that replaced one value,
// in invoke order. A value an increment of unknown outcome wrote can come
// back whenever its put lands, so two increments that replaced it are no
// proof that one was lost, and are not paired.
func lostUpdates(ops []KVOp) [][2]KVOp {
	first := map[string]KVOp{}
	late := map[string]bool{}
	for _, o := range ops {
		if o.Op.Kind == electorlog.OpIncrement && o.Op.Settled() == history.OutcomeUnknown {
			late[o.Op.Value] = true
		}
	}
	var out [][2]KVOp
	for _, o := range ops {
		if o.Op.Kind != electorlog.OpIncrement || o.Op.Settled() != history.OutcomeOK {
			continue
		}
		replaced := "\x00absent"
		if o.Op.Found {
			replaced = o.Op.Read
		}
		if late[replaced] {
			continue
		}
		if prev, ok := first[replaced]; ok {
			out = append(out, [2]KVOp{prev, o})
			continue
		}
		first[replaced] = o
	}
	return out
}

func describeKVOp(metadata any) string {
	o, ok := metadata.(KVOp)
	if !ok {
		return ""
	}
	return o.String()
}
