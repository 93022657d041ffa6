package checker

import (
	"fmt"

	"github.com/faultline/faultline/fixtures/ledgerlog"
)

// WritersLooked is what CheckWriters read.
type WritersLooked struct {
	Writers int `json:"writers"`
	// Acknowledging is how many writers had an append acknowledged.
	Acknowledging int `json:"acknowledging"`
	Appends       int `json:"appends"`
	OK            int `json:"ok"`
	Failed        int `json:"failed"`
	Unknown       int `json:"unknown"`
	// Unplaced counts, in the store's order, the acknowledged appends
	// whose history keys were read without revisions: they cannot be
	// placed.
	Unplaced int `json:"unplaced,omitempty"`
}

func (l WritersLooked) String() string {
	s := fmt.Sprintf("%d writer history(ies), %d with an acknowledged append, %d append(s) (%d ok, %d fail, %d unknown or never completed)",
		l.Writers, l.Acknowledging, l.Appends, l.OK, l.Failed, l.Unknown)
	if l.Unplaced > 0 {
		s += fmt.Sprintf("; %d acknowledged append(s) without the store's revisions", l.Unplaced)
	}
	return s
}

// Writers is what CheckWriters found in the histories alone.
type Writers struct {
	Looked WritersLooked `json:"looked"`
	// InStoreOrder: the appends were placed by the history store's order
	// (CheckWritersInStoreOrder), not by the writers' clocks.
	InStoreOrder bool `json:"inStoreOrder,omitempty"`
	// Overlap is the earliest proof that two writers' acknowledged
	// appends interleaved in time (nil when none).
	Overlap *Overlap `json:"overlap,omitempty"`
	// Possible, when no overlap is proven, is the earliest append of
	// unknown outcome invoked between two acknowledged appends of another
	// writer: had it taken effect, two writers were accepted at once.
	Possible *Overlap `json:"possible,omitempty"`
	// Apart says that the placing proves the writers one at a time:
	// every acknowledging writer's acknowledged appends, from the first
	// one's beginning to the last one's end, lie wholly before or wholly
	// after every other's (on the writers' clocks for CheckWriters, in
	// the store's order for CheckWritersInStoreOrder).
	Apart bool `json:"apart,omitempty"`
	// Forks are sequences two writers both acknowledged.
	Forks []Fork `json:"forks,omitempty"`
}

// CheckWriters checks the writers' histories for two writers accepted at
// once: the earliest acknowledged append of one made wholly between two
// acknowledged appends of another (Overlap), else the earliest append of
// unknown outcome invoked between two (Possible); whether the writers
// were one at a time (Apart); and the forks. The
// appends are placed by their writers' clocks, each its host's: one clock
// on one kernel, the nodes' elsewhere; under a clock-skew fault they
// prove nothing (CheckWritersInStoreOrder).
func CheckWriters(histories []ledgerlog.History) Writers {
	w := lookAtWriters(histories)
	w.Overlap = firstOverlap(histories, clockPlacing, func(op ledgerlog.Op) bool { return op.Settled() == ledgerlog.OutcomeOK }, true)
	if w.Overlap == nil {
		w.Possible = firstOverlap(histories, clockPlacing, func(op ledgerlog.Op) bool { return op.Settled() == ledgerlog.OutcomeUnknown }, false)
	}
	w.Apart = apart(histories, clockPlacing, &w.Looked)
	return w
}

// CheckWritersInStoreOrder is CheckWriters with every append placed by
// the history store's order instead of a clock (StoreOrder): an append
// began after its invoke's put and had returned before its outcome's put,
// so one writer's acknowledged append lies wholly between two of
// another's when the holder's outcome put of the first precedes the
// other's invoke put, and the other's outcome put precedes the holder's
// invoke put of the second. The store's order is coarser than the appends
// (each is widened to its puts), so it proves fewer overlaps than true
// clocks would, never one that did not happen; Apart says when it proves
// the writers one at a time.
func CheckWritersInStoreOrder(histories []ledgerlog.History, order StoreOrder) Writers {
	w := lookAtWriters(histories)
	w.InStoreOrder = true
	p := storePlacing(order)
	w.Overlap = firstOverlap(histories, p, func(op ledgerlog.Op) bool { return op.Settled() == ledgerlog.OutcomeOK }, true)
	if w.Overlap == nil {
		w.Possible = firstOverlap(histories, p, func(op ledgerlog.Op) bool { return op.Settled() == ledgerlog.OutcomeUnknown }, false)
	}
	w.Apart = apart(histories, p, &w.Looked)
	return w
}

// apart says whether p proves the writers one at a time: each
// acknowledging writer's acknowledged appends, from the first one's
// beginning to the last one's end, lie wholly before or wholly after
// every other's. An acknowledged append p cannot place is counted in
// looked.Unplaced and makes it unproven.
func apart(histories []ledgerlog.History, p placing, looked *WritersLooked) bool {
	type span struct{ from, to int64 }
	var spans []span
	unplaced := 0
	for _, h := range histories {
		inc := h.Start.Writer.Incarnation
		var sp *span
		for _, op := range h.Ops {
			if op.Settled() != ledgerlog.OutcomeOK {
				continue
			}
			b, okB := p.begin(inc, op)
			e, okE := p.end(inc, op)
			if !okB || !okE {
				unplaced++
				continue
			}
			if sp == nil {
				sp = &span{b, e}
			}
			sp.from, sp.to = min(sp.from, b), max(sp.to, e)
		}
		if sp != nil {
			spans = append(spans, *sp)
		}
	}
	looked.Unplaced += unplaced
	for i := range spans {
		for j := i + 1; j < len(spans); j++ {
			if !(spans[i].to < spans[j].from || spans[j].to < spans[i].from) {
				return false
			}
		}
	}
	return unplaced == 0
}

func lookAtWriters(histories []ledgerlog.History) Writers {
	w := Writers{Looked: WritersLooked{Writers: len(histories)}}
	for _, h := range histories {
		acked := false
		for _, op := range h.Ops {
			w.Looked.Appends++
			switch op.Settled() {
			case ledgerlog.OutcomeOK:
				w.Looked.OK++
				acked = true
			case ledgerlog.OutcomeFail:
				w.Looked.Failed++
			default:
				w.Looked.Unknown++
			}
		}
		if acked {
			w.Looked.Acknowledging++
		}
	}
	w.Forks = forks(histories)
	return w
}

// placing puts an append of a writer (its incarnation) on one line: a
// point at or before it began, and one at or after it returned, as
// comparable numbers; false when it cannot be placed.
type placing struct {
	begin, end func(inc string, op ledgerlog.Op) (int64, bool)
	// store, when the numbers are the store's revisions.
	store StoreOrder
}

// clockPlacing places an append by its writer's clock: its invoke and its
// return.
var clockPlacing = placing{
	begin: func(_ string, op ledgerlog.Op) (int64, bool) { return op.Invoke.UnixNano(), !op.Invoke.IsZero() },
	end:   func(_ string, op ledgerlog.Op) (int64, bool) { return op.Return.UnixNano(), !op.Return.IsZero() },
}

// storePlacing places an append by the history store's revisions of its
// invoke's put and its outcome's.
func storePlacing(o StoreOrder) placing {
	return placing{
		begin: func(inc string, op ledgerlog.Op) (int64, bool) { return o.began(inc, op.N) },
		end:   func(inc string, op ledgerlog.Op) (int64, bool) { return o.ended(inc, op.N, op.Outcome != "") },
		store: o,
	}
}

// firstOverlap finds the earliest append of one writer that between
// accepts, made between two acknowledged appends of another: wholly
// between (beginning at or after the first's end, ending at or before
// the second's beginning) when wholly, else merely beginning between; each
// placed by p. Appends p cannot place prove nothing and are passed over.
func firstOverlap(histories []ledgerlog.History, p placing, between func(ledgerlog.Op) bool, wholly bool) *Overlap {
	type placed struct {
		op         ledgerlog.Op
		begin, end int64
	}
	acked := make([][]placed, len(histories))
	for i, h := range histories {
		inc := h.Start.Writer.Incarnation
		for _, op := range h.Ops {
			if op.Settled() != ledgerlog.OutcomeOK {
				continue
			}
			b, okB := p.begin(inc, op)
			e, okE := p.end(inc, op)
			if okB && okE {
				acked[i] = append(acked[i], placed{op, b, e})
			}
		}
	}
	var best *Overlap
	var bestBegin int64
	for hi, holder := range acked {
		if len(holder) < 2 {
			continue
		}
		for oi, other := range histories {
			if hi == oi {
				continue
			}
			inc := other.Start.Writer.Incarnation
			for _, b := range other.Ops {
				if !between(b) {
					continue
				}
				bBegin, ok := p.begin(inc, b)
				if !ok {
					continue
				}
				bEnd, okEnd := p.end(inc, b)
				if wholly && !okEnd {
					continue
				}
				// The holder's last acknowledged append ended by b's
				// beginning, and its first after that which began at or
				// after b's end (or after b's beginning); its appends are
				// one at a time, in order.
				k := -1
				for i, a := range holder {
					if a.end <= bBegin {
						k = i
					}
				}
				if k < 0 {
					continue
				}
				m := -1
				for i := k + 1; i < len(holder); i++ {
					if (wholly && holder[i].begin >= bEnd) || (!wholly && holder[i].begin > bBegin) {
						m = i
						break
					}
				}
				if m < 0 {
					continue
				}
				if best == nil || bBegin < bestBegin {
					best = &Overlap{Holder: histories[hi].Start.Writer, Before: holder[k].op, After: holder[m].op,
						Other: other.Start.Writer, Between: b}
					if p.store != nil {
						best.Store = &OverlapRevisions{BeforeOutcome: holder[k].end, BetweenInvoke: bBegin, AfterInvoke: holder[m].begin}
						if okEnd {
							best.Store.BetweenOutcome = bEnd
						}
					}
					bestBegin = bBegin
				}
				break // the other's later appends are later
			}
		}
	}
	return best
}
