package invariant

import (
	"fmt"
	"sort"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/kvdb"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/verdict"
)

// acked is one acknowledged write: when it was invoked and when it was
// acknowledged, on its writer's clock.
type acked struct{ invoke, ret time.Time }

// overlapOf measures how long two or more writers had writes accepted at
// once: each writer's stretch runs from the invoke of its first
// acknowledged write to the acknowledgement of its last (one process,
// writing on throughout), and the seconds two or more stretches cover are
// summed; within counts every writer's acknowledgements in those seconds.
// The times are the writers' clocks.
func overlapOf(acks [][]acked) (seconds float64, within int) {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, w := range acks {
		if len(w) == 0 {
			continue
		}
		from, to := w[0].invoke, w[0].ret
		for _, a := range w {
			if a.invoke.Before(from) {
				from = a.invoke
			}
			if a.ret.After(to) {
				to = a.ret
			}
		}
		edges = append(edges, edge{from, +1}, edge{to, -1})
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
			seconds += e.at.Sub(since).Seconds()
		}
	}
	for _, w := range acks {
		for _, a := range w {
			for _, s := range shared {
				if !a.ret.Before(s[0]) && !a.ret.After(s[1]) {
					within++
					break
				}
			}
		}
	}
	return seconds, within
}

// lossQuantities are a loss count and the overlap it came from, as a
// judgement's quantities and as words for its reason: lost writes (what
// names them, "appends"), the seconds two copies both had writes accepted
// (overlapOf over each writer's acknowledged writes, on its clock), the
// writes acknowledged in them and per second. Under a fault that can skew
// clocks the seconds are not measured: the writers' clocks cannot time
// them.
func lossQuantities(lost int, what string, acks [][]acked, skewable bool) (map[string]verdict.Quantity, string) {
	q := map[string]verdict.Quantity{verdict.QuantityLost: {Value: float64(lost), Unit: what}}
	if skewable {
		return q, fmt.Sprintf("; %s lost: %d; the seconds in which two copies had %s acknowledged are not measured: under a clock-skew fault the writers' clocks cannot time them", what, lost, what)
	}
	secs, within := overlapOf(acks)
	q[verdict.QuantityOverlap] = verdict.Quantity{Value: secs, Unit: "s"}
	if secs == 0 {
		return q, fmt.Sprintf("; %s lost: %d, over no stretch in which two copies both had %s acknowledged (the copies wrote one after the other)", what, lost, what)
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
	return q, fmt.Sprintf("; %s lost: %d, from %.3f s in which two copies had %s acknowledged (each copy's first acknowledged write's invoke to its last acknowledgement, on the writers' clocks), with %d %s acknowledged in them, %.1f %s/s",
		what, lost, secs, what, within, what, rate, what)
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
			if op.Settled() == kvdb.OutcomeOK {
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
			if op.Kind == electorlog.OpIncrement && op.Settled() == electorlog.OutcomeOK {
				w = append(w, acked{op.Invoke, op.Return})
			}
		}
		out = append(out, w)
	}
	return out
}
