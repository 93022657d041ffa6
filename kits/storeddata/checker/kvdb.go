package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/kvdb"
)

// DBOp is one operation of the embedded database workload as its writer's
// history has it.
type DBOp struct {
	Writer history.Identity `json:"writer"`
	Op     kvdb.Op          `json:"op"`
}

func (o DBOp) String() string {
	s := fmt.Sprintf("operation %d (%s: ", o.Op.N, o.Op.Key)
	if kind, _ := kvdb.KindOf(o.Op.Key); kind == kvdb.Counter {
		s += fmt.Sprintf("%d+1", o.Op.Base.Count())
	} else {
		s += "write"
	}
	s += fmt.Sprintf(" = %d) by %s, invoked %s", o.Op.Wrote.V, o.Writer, stamp(o.Op.Invoke))
	if o.Op.Outcome != "" {
		s += fmt.Sprintf(", %s at %s", o.Op.Outcome, stamp(o.Op.Return))
	} else {
		s += ", never completed"
	}
	return s
}

// LostUpdate is an acknowledged operation whose effect is not in the
// final database.
type LostUpdate struct {
	DBOp
	// Why says what the database holds instead.
	Why string `json:"why"`
}

// UnwrittenValue is a value in the final database, or one an operation
// read, that no operation of any history wrote as it is.
type UnwrittenValue struct {
	Key string `json:"key"`
	// Value is the value, when it decodes as one of the workload's.
	Value *kvdb.Value `json:"value,omitempty"`
	// ReadBy, when set, is the operation that read it; else it is in the
	// final database.
	ReadBy *DBOp  `json:"readBy,omitempty"`
	Why    string `json:"why"`
}

func (u UnwrittenValue) String() string {
	where := "in the final database"
	if u.ReadBy != nil {
		where = "read by " + u.ReadBy.String()
	}
	v := "a value"
	if u.Value != nil {
		v = u.Value.String()
	}
	return fmt.Sprintf("%s at %s %s: %s", v, u.Key, where, u.Why)
}

// SettledDBOp is an operation of unknown outcome, settled against the
// final database and what other operations read.
type SettledDBOp struct {
	DBOp
	// Final: its value is the key's final value, or (a counter) an
	// increment the final count counts. It took effect, and it stays.
	Final bool `json:"final,omitempty"`
	// ReadLater: another operation read its value. It took effect (and,
	// when not Final, was later lost or written over).
	ReadLater bool `json:"readLater,omitempty"`
}

// TookEffect says whether the final content proves the operation took
// effect; false is no proof that it did not.
func (s SettledDBOp) TookEffect() bool { return s.Final || s.ReadLater }

// DBLooked is what CheckKVDB read.
type DBLooked struct {
	Keys    int `json:"keys"`
	Foreign int `json:"foreign,omitempty"`
	Writers int `json:"writers"`
	Ops     int `json:"ops"`
	// Acked's Required is how many acknowledged operations had to be in
	// the database.
	Acked
}

func (l DBLooked) String() string {
	s := fmt.Sprintf("a database of %d key(s) of the workload's", l.Keys)
	if l.Foreign > 0 {
		s += fmt.Sprintf(" and %d it does not write", l.Foreign)
	}
	return s + l.against(l.Writers, l.Ops, "operation")
}

// KVDB is what CheckKVDB found.
type KVDB struct {
	Looked DBLooked `json:"looked"`
	// Lost are acknowledged operations whose effect the final database
	// does not hold, oldest acknowledgement first.
	Lost []LostUpdate `json:"lost,omitempty"`
	// Unwritten are values nobody wrote as they are.
	Unwritten []UnwrittenValue `json:"unwritten,omitempty"`
	// Unknown are the operations of unknown outcome, settled.
	Unknown []SettledDBOp `json:"unknown,omitempty"`
	// Unplaced, in the store's order, are the acknowledged operations
	// whose effect the database does not hold and which the store's order
	// cannot call lost or excused: after the read-time cut, or a register
	// write whose history keys' revisions overlap the final write's.
	Unplaced []LostUpdate `json:"unplaced,omitempty"`
	// Counts are each counter's final count and how many acknowledged
	// increments it had to count.
	Counts []CounterCount `json:"counts,omitempty"`
}

// CounterCount is one counter's final count against its increments.
type CounterCount struct {
	Key   string `json:"key"`
	Final int64  `json:"final"`
	// Acknowledged is how many of its increments were acknowledged (and
	// had to be counted).
	Acknowledged int `json:"acknowledged"`
}

// KVDBOptions tune CheckKVDB.
type KVDBOptions struct {
	// AckedBefore, when set, is when the database was read, on the
	// writers' clocks: an operation acknowledged after it need not be in
	// it. Leave it zero when no writer ran while it was read.
	AckedBefore time.Time
	// InStoreOrder, when set, places the operations by the history
	// store's order instead of the writers' clocks (which a clock-skew
	// fault can set apart), as CheckLedger's: the register rule compares
	// revisions, and AckedByRevision replaces AckedBefore.
	InStoreOrder StoreOrder
	// AckedByRevision, with InStoreOrder, is the history store's revision
	// read just before the database's read began (0: no cut): an
	// acknowledged operation whose outcome was stored at or below it must
	// be in the database; one above it, missing, is Unplaced.
	AckedByRevision int64
}

// CheckKVDB checks the embedded database workload's final content against
// its writers' histories. Every value in the database names the operation
// that wrote it, and every counter operation names the value it
// incremented (its base), so a counter's final value is the end of a chain
// of increments, each tied to one operation of one history, never by a
// clock:
//
//   - lost (counters): an acknowledged increment not on the chain behind
//     the counter's final value: a later write was computed from a value
//     that did not count it (two copies each believing their own cache);
//     every acknowledged increment of a key absent from the database. A
//     chain that reaches a value nobody wrote says nothing of what lies
//     below it: that key's increments are then not called lost (the value
//     is reported as unwritten);
//   - lost (registers): an acknowledged write invoked after the write of
//     the register's final value had returned: the final value should
//     have been written over (this one reads the writers' clocks: one on
//     one kernel, the nodes' elsewhere);
//   - unwritten: a final value whose operation no history has, that wrote
//     another value or another key, or that failed (rolled back); the
//     same for every value an operation read; a key or value the workload
//     does not write; a chain that reaches a base nobody wrote;
//   - every operation of unknown outcome settled: final (on the chain, or
//     the final value), read later by another operation (it took effect),
//     or neither (no proof either way). An unknown operation is never
//     counted lost, and its value never counts as one nobody wrote.
func CheckKVDB(content kvdb.Content, histories []kvdb.History, o KVDBOptions) KVDB {
	r := KVDB{Looked: DBLooked{Keys: len(content.Values), Foreign: len(content.Foreign), Writers: len(histories), Acked: Acked{AckedBefore: o.AckedBefore, AckedByRevision: o.AckedByRevision}}}
	ops := map[kvdb.Tag]DBOp{}
	byKey := map[string][]DBOp{}
	for _, h := range histories {
		for _, op := range h.Ops {
			k := DBOp{Writer: h.Start.Writer, Op: op}
			ops[kvdb.Tag{Incarnation: h.Start.Writer.Incarnation, Op: op.N}] = k
			byKey[op.Key] = append(byKey[op.Key], k)
			r.Looked.Ops++
			r.Looked.count(op.Settled())
		}
	}
	// why a value at key is not one its operation wrote ("" when it is).
	unwritten := func(key string, v kvdb.Value) string {
		op, ok := ops[v.Tag()]
		switch {
		case !ok:
			return fmt.Sprintf("no history has operation %d of incarnation %s", v.Op, v.Writer.Incarnation)
		case op.Op.Key != key:
			return fmt.Sprintf("operation %d of %s wrote %s, not %s", v.Op, op.Writer, op.Op.Key, key)
		case op.Op.Wrote != v:
			return fmt.Sprintf("operation %d of %s wrote %s", v.Op, op.Writer, op.Op.Wrote)
		case op.Op.Settled() == history.OutcomeFail:
			return fmt.Sprintf("operation %d of %s failed and was rolled back (%s)", v.Op, op.Writer, op.Op.Error)
		}
		return ""
	}
	for _, f := range content.Foreign {
		r.Unwritten = append(r.Unwritten, UnwrittenValue{Key: f.Key, Why: f.Why})
	}
	readLater := map[kvdb.Tag]bool{}
	for _, h := range histories {
		for _, op := range h.Ops {
			if op.Read == nil {
				continue
			}
			readLater[op.Read.Tag()] = true
			if why := unwritten(op.Key, *op.Read); why != "" {
				by := DBOp{Writer: h.Start.Writer, Op: op}
				v := *op.Read
				r.Unwritten = append(r.Unwritten, UnwrittenValue{Key: op.Key, Value: &v, ReadBy: &by, Why: why})
			}
		}
	}

	final := map[kvdb.Tag]bool{} // operations whose effect the final content holds
	keys := map[string]bool{}
	for k := range content.Values {
		keys[k] = true
	}
	for k := range byKey {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	storeCut := o.InStoreOrder != nil && o.AckedByRevision > 0
	required := func(op DBOp) bool {
		if op.Op.Settled() != history.OutcomeOK {
			return false
		}
		switch {
		case storeCut:
			end, ok := o.InStoreOrder.ended(op.Writer.Incarnation, op.Op.N, true)
			return ok && end <= o.AckedByRevision
		case o.InStoreOrder == nil && !o.AckedBefore.IsZero():
			return !op.Op.Return.After(o.AckedBefore)
		}
		return true
	}
	// unplaced: acknowledged, not required by the store's cut, and
	// missing: it may have returned before the read or after.
	unplaced := func(op DBOp, why string) {
		if storeCut && op.Op.Settled() == history.OutcomeOK && !required(op) {
			r.Unplaced = append(r.Unplaced, LostUpdate{DBOp: op, Why: why + "; the store's order cannot place its outcome before the read"})
		}
	}
	for _, key := range sorted {
		v, present := content.Values[key]
		kind, err := kvdb.KindOf(key)
		if err != nil {
			continue // a history with such a key does not decode; the content's are Foreign
		}
		if present {
			if why := unwritten(key, v); why != "" {
				vv := v
				r.Unwritten = append(r.Unwritten, UnwrittenValue{Key: key, Value: &vv, Why: why})
			}
		}
		acked := 0
		for _, op := range byKey[key] {
			if required(op) {
				acked++
			}
		}
		r.Looked.Required += acked
		if !present {
			for _, op := range byKey[key] {
				why := fmt.Sprintf("the database holds no %s", key)
				if required(op) {
					r.Lost = append(r.Lost, LostUpdate{DBOp: op, Why: why})
				}
				unplaced(op, why)
			}
			continue
		}
		switch kind {
		case kvdb.Counter:
			r.Counts = append(r.Counts, CounterCount{Key: key, Final: v.V, Acknowledged: acked})
			chain, broken := counterChain(v, ops)
			for t := range chain {
				final[t] = true
			}
			if broken != "" {
				if len(chain) > 0 { // else the final value itself is reported above
					vv := v
					r.Unwritten = append(r.Unwritten, UnwrittenValue{Key: key, Value: &vv, Why: broken})
				}
				// Below a value nobody wrote, what the count counts is
				// not known: no increment of the key is called lost.
				continue
			}
			for _, op := range byKey[key] {
				if chain[kvdb.Tag{Incarnation: op.Writer.Incarnation, Op: op.Op.N}] {
					continue
				}
				why := fmt.Sprintf("the final count %s does not count it: a later increment was made from a count without it", v)
				if required(op) {
					r.Lost = append(r.Lost, LostUpdate{DBOp: op, Why: why})
				}
				unplaced(op, why)
			}
		case kvdb.Register:
			final[v.Tag()] = true
			w, ok := ops[v.Tag()]
			if !ok || w.Op.Outcome == "" {
				continue // when the final write took effect is not known
			}
			for _, op := range byKey[key] {
				same := op.Op.N == w.Op.N && op.Writer.Incarnation == w.Writer.Incarnation
				if same || op.Op.Settled() != history.OutcomeOK {
					continue
				}
				if o.InStoreOrder == nil {
					if required(op) && op.Op.Invoke.After(w.Op.Return) {
						r.Lost = append(r.Lost, LostUpdate{DBOp: op, Why: fmt.Sprintf("it was invoked after %s returned, and that write's value %d is final", w, v.V)})
					}
					continue
				}
				// In the store's order: it wrote after the final write
				// when the final write's outcome was stored before its
				// invoke was (it commits after its invoke's put, the
				// final write had committed before its outcome's put);
				// before, when its own outcome was stored before the
				// final write's invoke. Between, either may be last.
				wEnd, okW := o.InStoreOrder.ended(w.Writer.Incarnation, w.Op.N, true)
				wBegin, okWB := o.InStoreOrder.began(w.Writer.Incarnation, w.Op.N)
				xBegin, okX := o.InStoreOrder.began(op.Writer.Incarnation, op.Op.N)
				xEnd, okXE := o.InStoreOrder.ended(op.Writer.Incarnation, op.Op.N, true)
				switch {
				case okW && okX && wEnd < xBegin:
					why := fmt.Sprintf("in the history store's order it was invoked (revision %d) after %s returned (outcome stored at %d), and that write's value %d is final", xBegin, w, wEnd, v.V)
					if required(op) {
						r.Lost = append(r.Lost, LostUpdate{DBOp: op, Why: why})
					} else {
						unplaced(op, why)
					}
				case okWB && okXE && xEnd < wBegin:
				default:
					r.Unplaced = append(r.Unplaced, LostUpdate{DBOp: op, Why: fmt.Sprintf("the history store's order cannot say whether it wrote before or after %s, whose value %d is final (their revisions overlap, or are missing)", w, v.V)})
				}
			}
		}
	}
	sort.SliceStable(r.Lost, func(i, j int) bool { return r.Lost[i].Op.Return.Before(r.Lost[j].Op.Return) })

	for _, h := range histories {
		for _, op := range h.Ops {
			if op.Settled() != history.OutcomeUnknown {
				continue
			}
			t := kvdb.Tag{Incarnation: h.Start.Writer.Incarnation, Op: op.N}
			r.Unknown = append(r.Unknown, SettledDBOp{DBOp: DBOp{Writer: h.Start.Writer, Op: op}, Final: final[t], ReadLater: readLater[t]})
		}
	}
	return r
}

// counterChain follows a counter's final value back through each
// operation's base to the count's start: the operations whose increments
// the final count counts. broken says why the chain stops short (a base
// nobody wrote as it is, a loop), "" when it reaches the start.
func counterChain(final kvdb.Value, ops map[kvdb.Tag]DBOp) (map[kvdb.Tag]bool, string) {
	chain := map[kvdb.Tag]bool{}
	v := &final
	for v != nil {
		t := v.Tag()
		if chain[t] {
			return chain, fmt.Sprintf("the chain of increments behind it loops at operation %d of %s", t.Op, t.Incarnation)
		}
		op, ok := ops[t]
		if !ok || op.Op.Wrote != *v {
			return chain, fmt.Sprintf("the chain of increments behind it reaches %s, which no operation wrote as it is", v)
		}
		chain[t] = true
		v = op.Op.Base
	}
	return chain, ""
}

// Nobody counts the values nobody wrote as they are.
func (r KVDB) Nobody() int { return len(r.Unwritten) }

// String says what was checked and what was found.
func (r KVDB) String() string {
	var found []string
	if n := len(r.Lost); n > 0 {
		found = append(found, fmt.Sprintf("%d acknowledged operation(s) lost, first %s: %s", n, r.Lost[0].DBOp, r.Lost[0].Why))
	}
	if n := len(r.Unwritten); n > 0 {
		found = append(found, fmt.Sprintf("%d value(s) nobody wrote, first %s", n, r.Unwritten[0]))
	}
	if n := len(r.Unplaced); n > 0 {
		found = append(found, fmt.Sprintf("%d acknowledged operation(s) the store's order cannot call lost or kept, first %s: %s", n, r.Unplaced[0].DBOp, r.Unplaced[0].Why))
	}
	var counts []string
	for _, c := range r.Counts {
		counts = append(counts, fmt.Sprintf("%s %d after %d acknowledged increment(s)", c.Key, c.Final, c.Acknowledged))
	}
	s := "checked " + r.Looked.String()
	if len(counts) > 0 {
		s += " (" + strings.Join(counts, ", ") + ")"
	}
	if len(r.Unknown) > 0 {
		fin, read := 0, 0
		for _, u := range r.Unknown {
			if u.Final {
				fin++
			} else if u.ReadLater {
				read++
			}
		}
		s += fmt.Sprintf("; %d unknown operation(s) settled: %d final, %d took effect and were read later, %d unproven", len(r.Unknown), fin, read, len(r.Unknown)-fin-read)
	}
	if len(found) == 0 {
		return s + ": every acknowledged operation's effect is there, and nothing nobody wrote"
	}
	return s + ": " + strings.Join(found, "; ")
}
