package invariants

import (
	"fmt"
	"sort"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/kvdb"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/verdict"
)

// acked is one acknowledged write: when it was invoked and when it was
// acknowledged, on its writer's clock.
type acked struct{ invoke, ret time.Time }

// writeOverlap is how long two or more writers had writes accepted at once.
type writeOverlap struct {
	// Seconds two or more writers' stretches share, summed.
	Seconds float64
	// Within counts every writer's acknowledgements in those seconds.
	Within int
	// Pace is the workload's interval as its histories show it: the
	// median time between the invokes of a writer's acknowledged writes
	// in a row, over every writer (0 when no writer had two).
	Pace time.Duration
}

// gap is the longest a writer may go without an acknowledgement and
// still be counted accepted throughout: twice its pace. The workloads
// invoke a write every interval on a ticker (at once when the tick has
// passed), so a writer whose writes are accepted invokes its next write
// at most one interval after the last returned; the second interval
// leaves room for the outcome's put to the history store, made between
// the two, and lets one failed write between two acknowledged ones pass.
// A longer silence (a frozen writer, a leadership handed away and back,
// a stall) is no acceptance.
func (o writeOverlap) gap() time.Duration { return 2 * o.Pace }

// overlapOf measures how long two or more writers had writes accepted at
// once (measureOverlap).
func overlapOf(acks [][]acked) (seconds float64, within int) {
	o := measureOverlap(acks)
	return o.Seconds, o.Within
}

// measureOverlap measures how long two or more writers had writes
// accepted at once. Each acknowledged write was accepted at some moment
// between its invoke and its acknowledgement; a writer's stretches run
// through its acknowledged writes, split wherever the next one was
// invoked more than the gap (writeOverlap.gap) after the last was
// acknowledged, and a write held longer than the gap (a frozen writer's
// write in flight, a stalled disk) counts only the gap before its
// acknowledgement: its wait is no acceptance. The seconds two or more
// writers' stretches share are summed; within counts every writer's
// acknowledgements in them. The times are the writers' clocks.
func measureOverlap(acks [][]acked) writeOverlap {
	var o writeOverlap
	var steps []time.Duration
	for _, w := range acks {
		w = byInvoke(w)
		for i := 1; i < len(w); i++ {
			steps = append(steps, w[i].invoke.Sub(w[i-1].invoke))
		}
	}
	if len(steps) > 0 {
		sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
		o.Pace = steps[len(steps)/2]
		if len(steps)%2 == 0 {
			o.Pace = (steps[len(steps)/2-1] + steps[len(steps)/2]) / 2
		}
	}
	gap := o.gap()
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, w := range acks {
		w = byInvoke(w)
		var from, to time.Time
		for i, a := range w {
			begin := a.invoke
			if gap > 0 && a.ret.Sub(begin) > gap {
				begin = a.ret.Add(-gap)
			}
			if i > 0 && (gap <= 0 || begin.Sub(to) <= gap) {
				if a.ret.After(to) {
					to = a.ret
				}
				continue
			}
			if i > 0 {
				edges = append(edges, edge{from, +1}, edge{to, -1})
			}
			from, to = begin, a.ret
		}
		if len(w) > 0 {
			edges = append(edges, edge{from, +1}, edge{to, -1})
		}
	}
	// Opening edges before closing ones at one instant: two stretches
	// that touch share that instant.
	sort.Slice(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].delta > edges[j].delta
	})
	var shared [][2]time.Time
	open := 0
	var since time.Time
	for _, e := range edges {
		before := open
		open += e.delta
		switch {
		case before < 2 && open >= 2:
			since = e.at
		case before >= 2 && open < 2:
			shared = append(shared, [2]time.Time{since, e.at})
			o.Seconds += e.at.Sub(since).Seconds()
		}
	}
	for _, w := range acks {
		for _, a := range w {
			for _, s := range shared {
				if !a.ret.Before(s[0]) && !a.ret.After(s[1]) {
					o.Within++
					break
				}
			}
		}
	}
	return o
}

// byInvoke is a writer's acknowledged writes in the order invoked.
func byInvoke(w []acked) []acked {
	out := append([]acked(nil), w...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].invoke.Before(out[j].invoke) })
	return out
}

// lossQuantities are a loss count and the overlap it came from, as a
// judgement's quantities and as words for its reason: lost writes (what
// names them, "appends"), the seconds two copies both had writes accepted
// (measureOverlap over each writer's acknowledged writes, on its clock), the
// writes acknowledged in them and per second. Under a fault that can skew
// clocks the seconds are not measured: the writers' clocks cannot time
// them.
func lossQuantities(lost int, what string, acks [][]acked, skewable bool) (map[string]verdict.Quantity, string) {
	q := map[string]verdict.Quantity{verdict.QuantityLost: {Value: float64(lost), Unit: what}}
	if skewable {
		return q, fmt.Sprintf("; %s lost: %d; the seconds in which two copies had %s acknowledged are not measured: under a clock-skew fault the writers' clocks cannot time them", what, lost, what)
	}
	o := measureOverlap(acks)
	secs, within := o.Seconds, o.Within
	q[verdict.QuantityOverlap] = verdict.Quantity{Value: secs, Unit: "s"}
	how := "each copy's acknowledged writes, on the writers' clocks"
	if o.Pace > 0 {
		how = fmt.Sprintf("each copy's acknowledged writes, on the writers' clocks, a stretch split where none came for over %s, twice the workload's interval of %s as its histories show it", o.gap(), o.Pace)
	}
	if secs == 0 {
		return q, fmt.Sprintf("; %s lost: %d, over no stretch in which two copies both had %s acknowledged (%s: the copies wrote one after the other)", what, lost, what, how)
	}
	rate := float64(within) / secs
	q[verdict.QuantityAcknowledgedInOverlap] = verdict.Quantity{Value: float64(within), Unit: what}
	q[verdict.QuantityAcknowledgedRate] = verdict.Quantity{Value: rate, Unit: what + "/s"}
	// A loss scales with how long both copies were accepted and how
	// fast: reports give it per (seconds × writes per second), the
	// share of what was acknowledged in the overlap.
	lostQ := q[verdict.QuantityLost]
	lostQ.Per = []string{verdict.QuantityOverlap, verdict.QuantityAcknowledgedRate}
	q[verdict.QuantityLost] = lostQ
	return q, fmt.Sprintf("; %s lost: %d, from %.3f s in which two copies had %s acknowledged (%s), with %d %s acknowledged in them, %.1f %s/s",
		what, lost, secs, what, how, within, what, rate, what)
}

// ledgerAcked are, per writer, its acknowledged appends.
func ledgerAcked(hs []ledgerlog.History) [][]acked {
	var out [][]acked
	for _, h := range hs {
		var w []acked
		for _, op := range h.Ops {
			if op.Settled() == ledgerlog.OutcomeOK {
				w = append(w, acked{op.Invoke, op.Return})
			}
		}
		out = append(out, w)
	}
	return out
}

// kvdbAcked are, per writer, its acknowledged operations.
func kvdbAcked(hs []kvdb.History) [][]acked {
	var out [][]acked
	for _, h := range hs {
		var w []acked
		for _, op := range h.Ops {
			if op.Settled() == history.OutcomeOK {
				w = append(w, acked{op.Invoke, op.Return})
			}
		}
		out = append(out, w)
	}
	return out
}

// electorAcked are, per writer, its acknowledged increments.
func electorAcked(hs []electorlog.History) [][]acked {
	var out [][]acked
	for _, h := range hs {
		var w []acked
		for _, op := range h.Ops {
			if op.Kind == electorlog.OpIncrement && op.Settled() == history.OutcomeOK {
				w = append(w, acked{op.Invoke, op.Return})
			}
		}
		out = append(out, w)
	}
	return out
}
