package invariants

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog/electortest"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
)

// Under a clock-skew fault the writers' clocks prove nothing: the paper 3
// invariants place what the writers did by the history store's order
// (each operation between its invoke's put and its outcome's), and judge
// INSUFFICIENT_DATA where only the clocks could decide. The benches keep
// etcd's revisions in their stores; a skewed writer reads the bench's
// clock moved, or a clock of its own.

// skewed is the input of a run whose fault can skew clocks.
func skewed(in invariant.Input) invariant.Input {
	in.FaultClasses = []string{invariant.ClockSkewClass}
	return in
}

// historyAt20 reads the ledger's history in one round at 20 s.
func historyAt20(t *testing.T, b *ledgerBench) invariant.Input {
	return historyRounds(t, b, 20).Input(invariant.WindowToSettle)
}

// A writer whose clock runs behind puts its append, by the clocks, between
// two of the first writer's, though it ran after both: the store's order
// proves the two one at a time.
func TestSingleWriterUnderClockSkewTrustsTheStoreNotTheClocks(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(1)
	behind := b.now // the first append's return
	a.append(1)
	fine := behind
	b.startOnClock(ledgerID("c", "worker2"), func() time.Time { fine = fine.Add(100 * time.Microsecond); return fine }).append(1)

	// Without a clock-skew fault the clocks are trusted.
	expect(t, SingleWriterAtStorage(), historyAt20(t, b), verdict.Violated, "two writers accepted at once")
	j := expect(t, SingleWriterAtStorage(), skewed(historyAt20(t, b)), verdict.Preserved, "history store's order", "one at a time")
	wantExercised(t, j, true, "2 writer(s)")
}

// A writer whose clock runs ahead puts its append, by the clocks, after
// the first writer's two, though it ran between them: the store's order
// proves the overlap.
func TestSingleWriterUnderClockSkewFindsWhatTheClocksHide(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(1)
	b.startSkewed(ledgerID("c", "worker2"), time.Hour).append(1)
	a.append(1)

	expect(t, SingleWriterAtStorage(), historyAt20(t, b), verdict.Preserved)
	expect(t, SingleWriterAtStorage(), skewed(historyAt20(t, b)), verdict.Violated, "two writers accepted at once", "history store's order", "revision")
}

// With the volume still mounted at the final read, an append whose outcome
// the store holds before the read began had to be in the log, whatever
// its writer's clock says.
func TestAcknowledgedDataUnderClockSkewCutsTheReadByTheStore(t *testing.T) {
	b := newLedgerBench(t)
	a := b.startSkewed(ledgerID("a", "worker1"), time.Hour) // its clock says after the read
	a.append(3)
	log := b.logValue("worker1")
	log.StoreRevision = b.store.Revision()
	third := ledgerlog.Scan(log.Data).Entries[2]
	log.Data = log.Data[:third.Offset] // its last record gone: lost
	in := func() invariant.Input {
		r := newRun(t)
		ledgerAnswers(t, r, 20, log, b.historyValue())
		in := r.Input(invariant.Final)
		in.Timeline = healed()
		return in
	}
	expect(t, AcknowledgedDataSurvives(), in(), verdict.Preserved)
	j := expect(t, AcknowledgedDataSurvives(), skewed(in()), verdict.Violated, "lost append", "revision")
	if j.Violation != LostAppend {
		t.Errorf("violation %q", j.Violation)
	}

	// Without the store's revision from before the read, the cut cannot
	// be made.
	log.StoreRevision = 0
	expect(t, AcknowledgedDataSurvives(), skewed(in()), verdict.InsufficientData, "clock-skew", "revision")
}

// kvdb's register rule: a write its clock puts after the final value's
// write ran before it in the store's order; not lost.
func TestAcknowledgedDataKVDBUnderClockSkewPlacesRegisterWritesByTheStore(t *testing.T) {
	b := newKVDBBench(t)
	kvdbOps(t, b.startSkewed(ledgerID("a", "worker1"), time.Hour), 6)
	kvdbOps(t, b.start(ledgerID("b", "worker2")), 6)

	expect(t, AcknowledgedDataSurvives(), finalKVDB(t, b), verdict.Violated, "lost update", "invoked after")
	expect(t, AcknowledgedDataSurvives(), skewed(finalKVDB(t, b)), verdict.Preserved, "every acknowledged operation's effect")
}

// A follower whose clock runs behind read, by the clocks, a value before
// it was written; in the store's order it read it after.
func TestSingleHistoryUnderClockSkewPlacesOperationsByTheStore(t *testing.T) {
	b := electortest.New(t, t0)
	a, c := b.Writer("a", "worker1", eFenced).Lead(1), b.SkewedWriter("c", "worker2", eFenced, -time.Minute)
	a.Increment("", "1", eOK)
	a.Increment("1", "2", eOK)
	c.Read("2")
	c.Lead(2).Increment("2", "3", eOK)

	expect(t, SingleHistory(), electorRounds(t, b, false, 11), verdict.Violated, "fits no order")
	expect(t, SingleHistory(), skewed(electorRounds(t, b, false, 11)), verdict.Preserved, "history store's order")
}

// Where the store's order neither proves an overlap nor the writers
// apart (the first writer's outcome reached the store late, after the
// second's append), only the clocks could decide: under a clock-skew
// fault that is INSUFFICIENT_DATA.
func TestSingleWriterUnderClockSkewInsufficientWhereOnlyClocksDecide(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	late := true
	b.store.Refuse = func(_, v string) bool {
		if late && strings.Contains(v, `"outcome"`) {
			late = false
			return true
		}
		return false
	}
	a.append(1) // its outcome waits
	b.store.Refuse = nil
	b.start(ledgerID("c", "worker2")).append(1)
	a.append(1) // stores the waiting outcome first

	expect(t, SingleWriterAtStorage(), historyAt20(t, b), verdict.Violated, "two writers accepted at once")
	expect(t, SingleWriterAtStorage(), skewed(historyAt20(t, b)), verdict.InsufficientData, "only the writers' clocks could decide", "would say")
}

// Two leaders that replace one value break every order, the store's too.
func TestSingleHistoryUnderClockSkewStillFindsALostUpdate(t *testing.T) {
	expect(t, SingleHistory(), skewed(electorRounds(t, twoLeadersAtOnce(t, eFenced), false, 11)), verdict.Violated, "lost update", "history store's order")
}

// A history read without the store's revisions cannot be placed without
// the clocks.
func TestSingleHistoryUnderClockSkewNeedsTheRevisions(t *testing.T) {
	v := electorValue(cleanHandover(t, eFenced))
	for i := range v.KVs {
		v.KVs[i].CreateRevision, v.KVs[i].ModRevision = 0, 0
	}
	r := newRun(t)
	r.Round(11).Value(electorSource, storeddata.ElectorHistory, 0.2, v, "")
	expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Preserved)
	expect(t, SingleHistory(), skewed(r.Input(invariant.WindowToSettle)), verdict.InsufficientData, "cannot place", "no revisions")
}

// single-writer-at-storage names its violation two-writers, by the clocks
// and by the store's order alike, so that its positive control counts
// that kind alone.
func TestSingleWriterNamesItsViolationTwoWriters(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(1)
	b.start(ledgerID("c", "worker2")).append(1)
	a.append(1)
	for name, in := range map[string]invariant.Input{"clocks": historyAt20(t, b), "store order": skewed(historyAt20(t, b))} {
		j := expect(t, SingleWriterAtStorage(), in, verdict.Violated, "two writers accepted at once")
		if j.Violation != TwoWriters {
			t.Errorf("%s: violation %q, want %q", name, j.Violation, TwoWriters)
		}
	}
}
