package checker

import (
	"github.com/faultline/faultline/fixtures/history"
)

// The history store's order: the writers' clocks are the hosts' clocks,
// which a clock-skew fault can set apart from each other and from
// faultline's. Every workload stores each operation's invoke before it
// makes the operation and its outcome after the operation returned, under
// one key per operation, in one linearizable store (etcd); so the store's
// revisions of that key's first put and its last bound the operation in
// real time, with no clock: it began after the first put was stored and
// had returned before the last was, when the last holds an outcome.

// OpRef names one operation of one writer.
type OpRef struct {
	Incarnation string
	N           int
}

// Stored is where an operation's history key lies in the store's order.
type Stored struct {
	// Created is the revision of the key's first put: the operation's
	// invoke, stored before the operation was made.
	Created int64
	// Modified is the revision of its last put: for an operation whose
	// history holds an outcome, the outcome, stored after it returned.
	Modified int64
}

// StoreOrder is the store's order of every operation's history key.
type StoreOrder map[OpRef]Stored

// StoreOrderOf reads the revisions of the operation keys among kvs, under
// prefix in the layout every workload's history has
// ("<prefix><incarnation>/op/<n>"); keys of another shape, and keys read
// without revisions, are left out.
func StoreOrderOf(prefix string, kvs []history.KV) StoreOrder {
	o := StoreOrder{}
	for _, kv := range kvs {
		if kv.CreateRevision <= 0 || kv.ModRevision < kv.CreateRevision {
			continue
		}
		if ref, ok := history.OpRefOf(prefix, kv.Key); ok {
			o[OpRef(ref)] = Stored{Created: kv.CreateRevision, Modified: kv.ModRevision}
		}
	}
	return o
}

// began is the revision the operation began after (its invoke's put).
func (o StoreOrder) began(inc string, n int) (int64, bool) {
	s, ok := o[OpRef{inc, n}]
	return s.Created, ok && s.Created > 0
}

// ended is the revision the operation had returned by (its outcome's put),
// known only for an operation whose history holds an outcome.
func (o StoreOrder) ended(inc string, n int, hasOutcome bool) (int64, bool) {
	s, ok := o[OpRef{inc, n}]
	return s.Modified, ok && hasOutcome && s.Modified > s.Created
}
