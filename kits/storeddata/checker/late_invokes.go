package checker

import (
	"fmt"
	"strings"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/kvdb"
	"github.com/faultline/faultline/fixtures/ledgerlog"
)

// A writer stores each operation's invoke before it makes the operation,
// and when that put fails (a timeout: unknown whether it committed) it
// makes no operation and gives the number to its next one. A put that
// timed out can still commit later, after the puts of the operation that
// reused its number: the key then holds the abandoned invoke, with no
// outcome, and the operation that was made (acknowledged, perhaps) is gone
// from the history. Every put of a key after its invoke carries more (the
// value an increment is about to write, an outcome), so a key that holds
// only an invoke although it was put more than once may hold such a late
// put over what was done (or the reusing operation's own invoke over a
// timed-out put that committed at once, its outcome then never stored:
// the two cannot be told apart, and a check refuses both). A key put
// once, holding only its invoke, is an operation still in flight, or
// whose outcome its writer could not store before it died: what the
// histories' unknown outcome stands for.

// RewrittenInvoke is an operation whose history key holds only an invoke
// where a later put may have replaced what was done under its number.
type RewrittenInvoke struct {
	Writer history.Identity `json:"writer"`
	N      int              `json:"n"`
	// Why says what shows it.
	Why string `json:"why"`
}

func (r RewrittenInvoke) String() string {
	return fmt.Sprintf("operation %d of %s: %s", r.N, r.Writer, r.Why)
}

// Rewritten is the error of a history with rewritten invokes.
type Rewritten []RewrittenInvoke

func (r Rewritten) Error() string {
	var parts []string
	for _, x := range r[:min(len(r), 3)] {
		parts = append(parts, x.String())
	}
	more := ""
	if len(r) > 3 {
		more = fmt.Sprintf(" (and %d more)", len(r)-3)
	}
	return fmt.Sprintf("%d operation(s) hold only an invoke that may have replaced the operation made under their number: %s%s; the history does not say what was done",
		len(r), strings.Join(parts, "; "), more)
}

// rewrittenInvoke applies the rule to operation n of a writer whose last
// operation is last, whose key holds only an invoke: with the key's
// revisions, rewritten when it was put more than once; without them, when
// the writer made a later operation (a late put cannot then be told from
// an outcome not yet stored), which a key put once and read with its
// revisions rules out.
func rewrittenInvoke(order StoreOrder, w history.Identity, n, last int) *RewrittenInvoke {
	s, ok := order[OpRef{Incarnation: w.Incarnation, N: n}]
	switch {
	case ok && s.Modified > s.Created:
		return &RewrittenInvoke{Writer: w, N: n, Why: fmt.Sprintf("its history key was put more than once (first at revision %d, last at %d) yet holds only an invoke: an invoke put that timed out and committed after the puts of the operation that reused its number", s.Created, s.Modified)}
	case !ok && n < last:
		return &RewrittenInvoke{Writer: w, N: n, Why: fmt.Sprintf("its history key, read without revisions, holds only an invoke while the writer made operation %d after it: an invoke put that committed late, over the operation that reused its number, cannot be told from an outcome not yet stored", last)}
	}
	return nil
}

// rewrittenInvokes applies the rule to every operation of hs still in
// flight, as inFlight says.
func rewrittenInvokes[S history.Starter, O history.Operation](hs []history.History[S, O], order StoreOrder, inFlight func(O) bool) Rewritten {
	var out Rewritten
	for _, h := range hs {
		for _, op := range h.Ops {
			if inFlight(op) {
				if r := rewrittenInvoke(order, h.Writer(), history.NumberOf(op), len(h.Ops)); r != nil {
					out = append(out, *r)
				}
			}
		}
	}
	return out
}

// LedgerRewrittenInvokes finds the ledger writers' operations a late
// invoke put may have rewritten (an append with no outcome), the keys
// placed by order (StoreOrderOf the same answer).
func LedgerRewrittenInvokes(hs []ledgerlog.History, order StoreOrder) Rewritten {
	return rewrittenInvokes(hs, order, func(op ledgerlog.Op) bool { return op.Outcome == "" })
}

// KVDBRewrittenInvokes is LedgerRewrittenInvokes for the embedded
// database workload (an operation with no outcome).
func KVDBRewrittenInvokes(hs []kvdb.History, order StoreOrder) Rewritten {
	return rewrittenInvokes(hs, order, func(op kvdb.Op) bool { return op.Outcome == "" })
}

// ElectorRewrittenInvokes is LedgerRewrittenInvokes for the
// leader-elected writer: an operation with no outcome and no value it
// was about to write (an increment stores that value before it writes,
// so one in flight with a value had its invoke stored and then more).
func ElectorRewrittenInvokes(hs []electorlog.History, order StoreOrder) Rewritten {
	return rewrittenInvokes(hs, order, func(op electorlog.Op) bool { return op.Outcome == "" && op.Value == "" })
}
