package invariants

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/framework/invariant"
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
		{"two at once", [][]acked{{ack(1), ack(2), ack(3), ack(4), ack(5)}, {ack(2.6), ack(3.5), ack(4.5), ack(5.5)}}, 2.5, 6},
		// The pace is a second: the second copy's 2.4 s without an
		// acknowledgement (from 3.5 to the invoke at 5.9) splits it.
		{"two at once, the second silent for over two intervals", [][]acked{{ack(1), ack(2), ack(3), ack(4), ack(5)}, {ack(2.6), ack(3.5), ack(6), ack(7)}}, 1, 3},
		{"one write of a second copy inside the first's", [][]acked{{ack(1), ack(3)}, {ack(2)}}, 0.1, 1},
		{"three, two stretches", [][]acked{{ack(1), ack(2), ack(3), ack(4), ack(5), ack(6), ack(7), ack(8), ack(9), ack(10)}, {ack(2), ack(3)}, {ack(8), ack(9), ack(10), ack(11), ack(12)}}, 1.1 + 2.1, 10},
	} {
		s, n := overlapOf(c.acks)
		if math.Abs(s-c.seconds) > 1e-9 || n != c.within {
			t.Errorf("%s: %v s with %d acknowledged, want %v s with %d", c.name, s, n, c.seconds, c.within)
		}
	}
}

// acksEvery are acknowledged writes every tenth of a second, from the
// one acknowledged at from to the one at to (each invoked a tenth before).
func acksEvery(from, to float64) []acked {
	var out []acked
	for i := 0; from+float64(i)/10 <= to+1e-9; i++ {
		out = append(out, ack(from+float64(i)/10))
	}
	return out
}

// A writer's silence is no acceptance: a stretch is split where a writer
// had nothing acknowledged for longer than twice its interval (a tenth
// of a second here, as its acknowledged writes show it).
func TestOverlapSplitsAWritersSilence(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-6 }
	// A leads, is frozen 15 s, is thawed and writes 1.5 s more; B leads
	// from 11 s. Both had writes accepted only over [20, 21.5].
	a := append(acksEvery(0.1, 5), acksEvery(20.1, 21.5)...)
	b := acksEvery(11.15, 30)
	if s, n := overlapOf([][]acked{a, b}); !near(s, 1.5) || n != 30 {
		t.Errorf("frozen leader: overlap %.3f s with %d acknowledged, want 1.5 s (the thawed leader's stretch) with 30", s, n)
	}
	// The frozen leader's write in flight at the freeze returns at the
	// thaw: its wait is no acceptance either.
	held := append(acksEvery(0.1, 5), acked{at(5.05), at(20.1)})
	held = append(held, acksEvery(20.2, 21.5)...)
	if s, _ := overlapOf([][]acked{held, b}); !near(s, 1.6) {
		t.Errorf("frozen in a write: overlap %.3f s, want 1.6 s (the thawed leader's stretch, and the write held over the freeze only for its last two intervals)", s)
	}
	// A leads, then B, then A again: never two at once.
	if s, n := overlapOf([][]acked{append(acksEvery(0.1, 10), acksEvery(20.5, 30)...), acksEvery(10.5, 20)}); s != 0 || n != 0 {
		t.Errorf("handover A→B→A: overlap %.3f s with %d acknowledged, want none", s, n)
	}
	// One failed write between two acknowledged ones does not split.
	gappy := append(acksEvery(0.1, 2), acksEvery(2.2, 4)...)
	if s, _ := overlapOf([][]acked{gappy, acksEvery(1.05, 3.05)}); !near(s, 2.1) {
		t.Errorf("one write missed: overlap %.3f s, want 2.1 s", s)
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
	rd := r.Round(20)
	kvdbAnswers(t, rd.Snapshot(), 20, older, b.historyValue())
	in := r.Input(invariant.Final)
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
