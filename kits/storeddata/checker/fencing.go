package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/history"
)

// Fencing is the fencing check of the leader-elected writer's histories.
type Fencing struct {
	Looked struct {
		// Fenced counts the writers whose start says they fenced.
		Fenced  int `json:"fenced"`
		Writers int `json:"writers"`
		// Accepted counts the acknowledged increments, each with the
		// store revision it committed at; Refused the fenced ones the
		// store refused; Unknown those of unknown outcome, which are
		// never counted as accepted.
		Accepted int `json:"accepted"`
		Refused  int `json:"refused"`
		Unknown  int `json:"unknown"`
		// Proven counts the writes of unknown outcome a later read proves
		// accepted (Proven), counted apart from Accepted and Unknown.
		Proven int `json:"proven,omitempty"`
		// Tokens counts the distinct tokens accepted; Holders the
		// distinct holders accepted (a shared token needs two).
		Tokens  int `json:"tokens"`
		Holders int `json:"holders"`
	} `json:"looked"`
	// Proven are the writes of unknown outcome a later read proves
	// accepted: the read returned the value only that write wrote.
	Proven []ProvenWrite `json:"proven,omitempty"`
	// Down is the first accepted write, in the store's order, whose token
	// is below one accepted before it, with that earlier write.
	Down *[2]KVOp `json:"down,omitempty"`
	// Shared is the first accepted write whose token's transitions were
	// accepted before from another holder, with that earlier write.
	Shared *[2]KVOp `json:"shared,omitempty"`
}

// ProvenWrite is a write of unknown outcome and the read that proves it
// accepted.
type ProvenWrite struct {
	Write KVOp `json:"write"`
	Read  KVOp `json:"read"`
}

// provenBy is the read that proves o accepted, when o is a proven write.
func (f Fencing) provenBy(o KVOp) (KVOp, bool) {
	for _, p := range f.Proven {
		if p.Write.Writer.Incarnation == o.Writer.Incarnation && p.Write.Op.N == o.Op.N {
			return p.Read, true
		}
	}
	return KVOp{}, false
}

// Describe names a write of the check, with the read that proves it
// accepted when its own outcome is unknown.
func (f Fencing) Describe(o KVOp) string {
	if r, ok := f.provenBy(o); ok {
		return fmt.Sprintf("%s, proven accepted by %s", o, r)
	}
	return o.String()
}

// At is when the check's evidence of o's acceptance came: its
// acknowledgement, or for a proven write the return of the read that
// proves it.
func (f Fencing) At(o KVOp) time.Time {
	if r, ok := f.provenBy(o); ok {
		return r.Op.Return
	}
	return o.Op.Return
}

// Accepted says in words what the store accepted and refused.
func (f Fencing) Accepted() string {
	return fmt.Sprintf("the store accepted writes of %d holder(s) with %d token value(s), and refused %d", f.Looked.Holders, f.Looked.Tokens, f.Looked.Refused)
}

// Exercise says whether the check could have found a shared token, with
// what it exercised and what held, in words. It could where the store
// accepted writes of two or more holders and the run's fault (of class)
// can give the Lease holders outside one election's history
// (splittable). With one holder accepted no token can be shared; with one
// Lease history written only by client-go's election, leaseTransitions
// rises on every change of holder, so tokens are unique by construction.
// Refusals are the store's transaction at work and exercise nothing.
func (f Fencing) Exercise(class string, splittable bool) (exercised bool, exercise, held string) {
	switch {
	case f.Looked.Holders < 2:
		return false, fmt.Sprintf("not exercised: the store accepted writes of %d holder(s), so no token could be shared (it refused %d, which its transaction does by construction)", f.Looked.Holders, f.Looked.Refused),
			"not exercised: one holder's writes were accepted, so no token could be shared"
	case !splittable:
		return false, "not exercised: one Lease history, tokens unique by construction (client-go's election raises leaseTransitions on every change of holder, and nothing in the run could give the Lease a second history or write it outside the election); " + f.Accepted(),
			"each token accepted has one holder, by construction (one Lease history: not exercised)"
	}
	return true, f.Accepted() + ", under a fault of class " + class + ", which can give the Lease holders outside one election's history",
		"each token accepted has one holder"
}

// Broken reports whether the check found either.
func (f Fencing) Broken() bool { return f.Down != nil || f.Shared != nil }

func (f Fencing) String() string {
	s := fmt.Sprintf("%d writer(s), %d fenced; %d write(s) accepted with %d token(s) of %d holder(s), %d refused, %d unknown (not counted)",
		f.Looked.Writers, f.Looked.Fenced, f.Looked.Accepted+f.Looked.Proven, f.Looked.Tokens, f.Looked.Holders, f.Looked.Refused, f.Looked.Unknown)
	if n := len(f.Proven); n > 0 {
		s += fmt.Sprintf("; %d of the accepted of unknown outcome, proven accepted by a later read (the only write of the value it returned), first %s", n, f.Describe(f.Proven[0].Write))
	}
	if f.Down != nil {
		s += fmt.Sprintf("; token went down: %s accepted after %s", f.Down[1], f.Down[0])
	}
	if f.Shared != nil {
		s += fmt.Sprintf("; one token, two holders: %s accepted after %s", f.Describe(f.Shared[1]), f.Describe(f.Shared[0]))
	}
	return s
}

// provenAccepted finds the writes of unknown outcome a read proves
// accepted: an acknowledged read of the key (a follower's, or an
// increment's own read) returned the value the write wrote, and no other
// increment that may have taken effect wrote that value to that key, so
// only that write can have put it there. As CheckKV's start rule, a value
// an increment of the history wrote is taken not to have been in the
// store before the history; a read of it made by the write's own writer
// before the write (its program order, no clock) proves nothing.
func provenAccepted(hs []electorlog.History) []ProvenWrite {
	type kv struct{ key, value string }
	writers := map[kv][]KVOp{}
	for _, h := range hs {
		for _, op := range h.Ops {
			if op.Kind == electorlog.OpIncrement && op.Value != "" && op.Settled() != history.OutcomeFail {
				k := kv{op.Key, op.Value}
				writers[k] = append(writers[k], KVOp{Writer: h.Start.Writer, Op: op})
			}
		}
	}
	var out []ProvenWrite
	for k, ws := range writers {
		if len(ws) != 1 || ws[0].Op.Settled() != history.OutcomeUnknown {
			continue
		}
		w := ws[0]
		for _, h := range hs {
			found := false
			for _, op := range h.Ops {
				readIt := op.Key == k.key && op.Found && op.Read == k.value &&
					(op.Kind == electorlog.OpIncrement || op.Settled() == history.OutcomeOK)
				before := h.Start.Writer.Incarnation == w.Writer.Incarnation && op.N <= w.Op.N
				if readIt && !before {
					out = append(out, ProvenWrite{Write: w, Read: KVOp{Writer: h.Start.Writer, Op: op}})
					found = true
					break
				}
			}
			if found {
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Write, out[j].Write
		if a.Writer.Incarnation != b.Writer.Incarnation {
			return a.Writer.Incarnation < b.Writer.Incarnation
		}
		return a.Op.N < b.Op.N
	})
	return out
}

// CheckFencing orders the accepted writes (acknowledged increments) by
// the store revision each committed at, the store's own order, with no
// clock, and finds a token that went down (a write accepted with a lower
// leaseTransitions than one accepted before it) and a token two holders
// were accepted with. Refused writes changed nothing. A write of unknown
// outcome may or may not have been accepted and is not counted, unless a
// later read proves it accepted (provenAccepted): then it counts for a
// shared token, which needs no order; having no revision, it has no place
// in the order a token going down is read from. Two accepted writes with
// one revision are refused as a malformed history.
//
// The fenced store's transaction refuses a token below the highest it
// accepted, so on its history no token goes down by construction: Down
// can only come from a store that did not run that transaction (an
// unfenced history, a store whose token key was lost). Two holders with
// one token the transaction lets through (it refuses only lower ones).
func CheckFencing(hs []electorlog.History) (Fencing, error) {
	var f Fencing
	f.Looked.Writers = len(hs)
	f.Proven = provenAccepted(hs)
	f.Looked.Proven = len(f.Proven)
	var accepted []KVOp
	for _, h := range hs {
		if h.Start.Fencing == electorlog.FencingLeaseTransitions {
			f.Looked.Fenced++
		}
		for _, op := range h.Ops {
			if op.Kind != electorlog.OpIncrement {
				continue
			}
			switch op.Settled() {
			case history.OutcomeOK:
				accepted = append(accepted, KVOp{Writer: h.Start.Writer, Op: op})
			case history.OutcomeUnknown:
				if _, ok := f.provenBy(KVOp{Writer: h.Start.Writer, Op: op}); !ok {
					f.Looked.Unknown++
				}
			default:
				if op.Refused != "" {
					f.Looked.Refused++
				}
			}
		}
	}
	sort.SliceStable(accepted, func(i, j int) bool { return accepted[i].Op.Revision < accepted[j].Op.Revision })
	f.Looked.Accepted = len(accepted)
	var highest *KVOp
	byTransitions := map[int32]KVOp{}
	for i := range accepted {
		o := accepted[i]
		if i > 0 && accepted[i-1].Op.Revision == o.Op.Revision {
			return Fencing{}, fmt.Errorf("%s and %s committed at one store revision", accepted[i-1], o)
		}
		tok := *o.Op.Token
		if highest != nil && tok.Transitions < highest.Op.Token.Transitions && f.Down == nil {
			f.Down = &[2]KVOp{*highest, o}
		}
		if prev, ok := byTransitions[tok.Transitions]; ok {
			if prev.Op.Token.Holder != tok.Holder && f.Shared == nil {
				f.Shared = &[2]KVOp{prev, o}
			}
		} else {
			byTransitions[tok.Transitions] = o
		}
		if highest == nil || tok.Transitions > highest.Op.Token.Transitions {
			highest = &accepted[i]
		}
	}
	// The proven writes, after the acknowledged ones: a shared token
	// needs no order.
	for _, p := range f.Proven {
		o := p.Write
		if o.Op.Token == nil {
			continue
		}
		tok := *o.Op.Token
		if prev, ok := byTransitions[tok.Transitions]; ok {
			if prev.Op.Token.Holder != tok.Holder && f.Shared == nil {
				f.Shared = &[2]KVOp{prev, o}
			}
		} else {
			byTransitions[tok.Transitions] = o
		}
	}
	holders := map[string]bool{}
	for _, o := range accepted {
		holders[o.Op.Token.Holder] = true
	}
	for _, p := range f.Proven {
		if p.Write.Op.Token != nil {
			holders[p.Write.Op.Token.Holder] = true
		}
	}
	f.Looked.Tokens, f.Looked.Holders = len(byTransitions), len(holders)
	return f, nil
}
