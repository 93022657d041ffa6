package checker

import (
	"fmt"
	"sort"

	"github.com/faultline/faultline/fixtures/electorlog"
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
		// Tokens counts the distinct tokens accepted.
		Tokens int `json:"tokens"`
	} `json:"looked"`
	// Down is the first accepted write, in the store's order, whose token
	// is below one accepted before it, with that earlier write.
	Down *[2]KVOp `json:"down,omitempty"`
	// Shared is the first accepted write whose token's transitions were
	// accepted before from another holder, with that earlier write.
	Shared *[2]KVOp `json:"shared,omitempty"`
}

// Broken reports whether the check found either.
func (f Fencing) Broken() bool { return f.Down != nil || f.Shared != nil }

func (f Fencing) String() string {
	s := fmt.Sprintf("%d writer(s), %d fenced; %d write(s) accepted with %d token(s), %d refused, %d unknown (not counted)",
		f.Looked.Writers, f.Looked.Fenced, f.Looked.Accepted, f.Looked.Tokens, f.Looked.Refused, f.Looked.Unknown)
	if f.Down != nil {
		s += fmt.Sprintf("; token went down: %s accepted after %s", f.Down[1], f.Down[0])
	}
	if f.Shared != nil {
		s += fmt.Sprintf("; one token, two holders: %s accepted after %s", f.Shared[1], f.Shared[0])
	}
	return s
}

// CheckFencing orders the accepted writes (acknowledged increments) by
// the store revision each committed at, the store's own order, with no
// clock, and finds a token that went down (a write accepted with a lower
// leaseTransitions than one accepted before it) and a token two holders
// were accepted with. Refused writes changed nothing; a write of unknown
// outcome may or may not have been accepted and is never counted. Two
// accepted writes with one revision are refused as a malformed history.
func CheckFencing(hs []electorlog.History) (Fencing, error) {
	var f Fencing
	f.Looked.Writers = len(hs)
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
			case electorlog.OutcomeOK:
				accepted = append(accepted, KVOp{Writer: h.Start.Writer, Op: op})
			case electorlog.OutcomeUnknown:
				f.Looked.Unknown++
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
	f.Looked.Tokens = len(byTransitions)
	return f, nil
}
