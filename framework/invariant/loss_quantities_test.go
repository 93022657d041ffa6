package invariant

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/framework/verdict"
)

// A loss count comes with the overlap it came from: the seconds in which
// two copies both had writes acknowledged, and the writes acknowledged
// per second in them, in the reason and in the judgement's quantities.

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// ack is an append invoked a tenth of a second before its
// acknowledgement at s.
func ack(s float64) acked { return acked{at(s - 0.1), at(s)} }

func TestOverlapOfAcknowledgements(t *testing.T) {
	for _, c := range []struct {
		name    string
		acks    [][]acked
		seconds float64
		within  int
	}{
		{"one writer", [][]acked{{ack(1), ack(2), ack(3)}}, 0, 0},
		{"one after the other", [][]acked{{ack(1), ack(2)}, {ack(3), ack(4)}}, 0, 0},
		{"two at once", [][]acked{{ack(1), ack(2), ack(3), ack(4), ack(5)}, {ack(2.6), ack(3.5), ack(6), ack(7)}}, 2.5, 5},
		{"one write of a second copy inside the first's", [][]acked{{ack(1), ack(3)}, {ack(2)}}, 0.1, 1},
		{"three, two stretches", [][]acked{{ack(1), ack(10)}, {ack(2), ack(3)}, {ack(8), ack(12)}}, 1.1 + 2.1, 4},
	} {
		s, n := overlapOf(c.acks)
		if math.Abs(s-c.seconds) > 1e-9 || n != c.within {
			t.Errorf("%s: %v s with %d acknowledged, want %v s with %d", c.name, s, n, c.seconds, c.within)
		}
	}
}

func wantQuantity(t *testing.T, j verdict.Judgement, name, unit string, check func(float64) bool) float64 {
	t.Helper()
	q, ok := j.Quantities[name]
	if !ok || q.Unit != unit || (check != nil && !check(q.Value)) {
		t.Errorf("%s: quantity %s = %+v (present %v), want unit %q", j.Invariant, name, q, ok, unit)
	}
	return q.Value
}

func TestAcknowledgedDataReportsTheLossWithItsOverlap(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(3)
	c := b.start(ledgerID("c", "worker2"))
	for i := 0; i < 3; i++ {
		a.append(1)
		c.append(1)
	}
	j := expect(t, AcknowledgedDataSurvives(), finalLedger(t, b), verdict.Violated, "lost append", "two copies had appends acknowledged", "appends/s")
	hs, err := ledgerHistories(b.historyValue())
	if err != nil {
		t.Fatal(err)
	}
	wantSeconds, wantWithin := overlapOf(ledgerAcked(hs))
	lost := wantQuantity(t, j, verdict.QuantityLost, "appends", func(v float64) bool { return v > 0 })
	if !strings.Contains(j.Reason, fmt.Sprintf("lost append: %d acknowledged append(s) missing", int(lost))) {
		t.Errorf("the quantity lost is not the reason's count: %v", lost)
	}
	s := wantQuantity(t, j, verdict.QuantityOverlap, "s", func(v float64) bool { return v == wantSeconds && v > 0 })
	n := wantQuantity(t, j, verdict.QuantityAcknowledgedInOverlap, "appends", func(v float64) bool { return v == float64(wantWithin) })
	wantQuantity(t, j, verdict.QuantityAcknowledgedRate, "appends/s", func(v float64) bool { return math.Abs(v-n/s) < 1e-9 })
	if per := j.Quantities[verdict.QuantityLost].Per; len(per) != 2 || per[0] != verdict.QuantityOverlap || per[1] != verdict.QuantityAcknowledgedRate {
		t.Errorf("the loss scales with %v, want the overlap and the rate", per)
	}

	// Under a clock-skew fault the overlap is not timed from the clocks.
	j = expect(t, AcknowledgedDataSurvives(), skewed(finalLedger(t, b)), verdict.Violated, "not measured")
	wantQuantity(t, j, verdict.QuantityLost, "appends", nil)
	if _, ok := j.Quantities[verdict.QuantityOverlap]; ok {
		t.Errorf("an overlap timed by clocks a fault may skew: %+v", j.Quantities)
	}

	// One writer: nothing lost, no overlap, both said.
	one := newLedgerBench(t)
	one.start(ledgerID("a", "worker1")).append(4)
	j = expect(t, AcknowledgedDataSurvives(), finalLedger(t, one), verdict.Preserved, "no stretch")
	wantQuantity(t, j, verdict.QuantityLost, "appends", func(v float64) bool { return v == 0 })
	wantQuantity(t, j, verdict.QuantityOverlap, "s", func(v float64) bool { return v == 0 })
	if _, ok := j.Quantities[verdict.QuantityAcknowledgedRate]; ok || len(j.Quantities[verdict.QuantityLost].Per) != 0 {
		t.Errorf("a rate over no overlap: %+v", j.Quantities)
	}
}

// The kvdb's losses are increments and register writes, counted apart:
// a register write is no increment.
func TestAcknowledgedDataKVDBCountsIncrementsAndRegisterWritesApart(t *testing.T) {
	// Two copies take turns, and the database is then rolled back to
	// how it was before the last turns: increments and a register write
	// lost.
	b := newKVDBBench(t)
	a := b.start(ledgerID("a", "worker1"))
	c := b.start(ledgerID("c", "worker2"))
	for i := 0; i < 3; i++ {
		kvdbOps(t, a, 1)
		kvdbOps(t, c, 1)
	}
	older := b.dbValue()
	for i := 0; i < 3; i++ {
		kvdbOps(t, a, 1)
		kvdbOps(t, c, 1)
	}
	r := newRun(t)
	rd := r.round(20)
	kvdbAnswers(t, &r.snaps[rd.i], 20, older, b.historyValue())
	in := r.input(Final)
	in.Timeline = healed()
	j := expect(t, AcknowledgedDataSurvives(), in, verdict.Violated, "lost update", "increment(s)", "register write(s)", "two copies had operations acknowledged")
	lost := wantQuantity(t, j, verdict.QuantityLost, "operations", nil)
	inc := wantQuantity(t, j, verdict.QuantityLostIncrements, "increments", nil)
	reg := wantQuantity(t, j, verdict.QuantityLostRegisterWrites, "writes", nil)
	if inc+reg != lost || inc == 0 || reg == 0 {
		t.Errorf("lost %v = %v increments + %v register writes?", lost, inc, reg)
	}
	wantQuantity(t, j, verdict.QuantityOverlap, "s", func(v float64) bool { return v > 0 })
}

// single-history's lost updates come with the stretch two leaders shared.
func TestSingleHistoryReportsLostUpdatesWithTheOverlap(t *testing.T) {
	j := expect(t, SingleHistory(), electorRounds(t, twoLeadersAtOnce(t, electorlog.FencingNone), false, 11), verdict.Violated, "lost update", "two copies had increments acknowledged")
	wantQuantity(t, j, verdict.QuantityLost, "increments", func(v float64) bool { return v == 1 })
	wantQuantity(t, j, verdict.QuantityOverlap, "s", func(v float64) bool { return v > 0 })
}
