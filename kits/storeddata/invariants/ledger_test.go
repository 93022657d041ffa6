package invariants

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/history/historytest"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
)

// The ledger invariants are judged over logs and histories the workload's
// own code wrote (ledgerlog's appender on a file, its client recording
// into a store in memory), every writer on one clock that starts at t0
// and moves a millisecond a reading.

const ledgerPrefix = "/faultline/ledger/invariant/"

// ledgerStore is the history store in memory (historytest.Store), its
// keys read back as an answer holds them.
type ledgerStore struct{ *historytest.Store }

// stored are the store's keys as an answer holds them, with their
// revisions.
func (s ledgerStore) stored() []storeddata.StoredKV {
	var out []storeddata.StoredKV
	for _, kv := range s.KVs() {
		out = append(out, storeddata.StoredKV{Key: kv.Key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision})
	}
	return out
}

type ledgerBench struct {
	t     *testing.T
	path  string
	store *ledgerStore
	now   time.Time
}

func newLedgerBench(t *testing.T) *ledgerBench {
	return &ledgerBench{t: t, path: filepath.Join(t.TempDir(), "ledger.log"), store: &ledgerStore{historytest.NewStore()}, now: t0}
}

func (b *ledgerBench) clock() time.Time { b.now = b.now.Add(time.Millisecond); return b.now }

type ledgerWriter struct {
	t      *testing.T
	client *ledgerlog.Client
}

func ledgerID(name, node string) history.Identity {
	return history.Identity{Pod: "ledger-0", PodUID: "uid-" + name, Node: node, Incarnation: strings.Repeat(name, 32/len(name))}
}

func (b *ledgerBench) start(id history.Identity) *ledgerWriter {
	return b.startOnClock(id, b.clock)
}

// startSkewed starts a writer whose host's clock is off by skew: it reads
// the bench's clock, moved.
func (b *ledgerBench) startSkewed(id history.Identity, skew time.Duration) *ledgerWriter {
	return b.startOnClock(id, func() time.Time { return b.clock().Add(skew) })
}

// startOnClock starts a writer that reads now for its times.
func (b *ledgerBench) startOnClock(id history.Identity, now func() time.Time) *ledgerWriter {
	b.t.Helper()
	l, st, err := ledgerlog.Open(b.path, id, ledgerlog.LogOptions{Sync: true, DataBytes: 16})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { l.Close() })
	c, err := ledgerlog.NewClient(l, st, b.store, history.ClientOptions{Prefix: ledgerPrefix, Now: now})
	if err != nil {
		b.t.Fatal(err)
	}
	if err := c.RecordStart(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	return &ledgerWriter{t: b.t, client: c}
}

// append makes n appends and returns their outcomes.
func (w *ledgerWriter) append(n int) []string {
	w.t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		op, err := w.client.Append(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		out = append(out, op.Outcome)
	}
	return out
}

func (b *ledgerBench) logValue(mounted ...string) storeddata.LedgerLogValue {
	b.t.Helper()
	data, err := os.ReadFile(b.path)
	if err != nil {
		b.t.Fatal(err)
	}
	return storeddata.LedgerLogValue{Path: "/srv/volumes/ledger-0/ledger.log", Data: data, Mounted: mounted}
}

func (b *ledgerBench) historyValue() storeddata.LedgerHistoryValue {
	return storeddata.LedgerHistoryValue{Prefix: ledgerPrefix, Revision: b.store.Revision(), KVs: b.store.stored()}
}

// ledgerAnswers records the log read over [at, at+0.1 s] and the history
// over [at+0.2 s, at+0.3 s] in a round taken at second at.
func ledgerAnswers(t *testing.T, r *run, at float64, log storeddata.LedgerLogValue, hist storeddata.LedgerHistoryValue) {
	t.Helper()
	rd := r.Round(at)
	s := rd.Snapshot()
	for _, a := range []struct {
		q        evidence.Question
		v        any
		from, to float64
	}{{storeddata.LedgerLog, log, 0, 0.1}, {storeddata.LedgerHistory, hist, 0.2, 0.3}} {
		ans, err := evidence.ValueAnswer(a.v, sec(at+a.to), "")
		if err != nil {
			t.Fatal(err)
		}
		ans.AskedAt = sec(at + a.from)
		s.Set(ledgerSource, a.q, ans)
	}
}

// healed is a timeline whose fault was injected at 1 s and healed over
// [9 s, 10 s].
func healed() evidence.Timeline {
	return evidence.Timeline{
		{At: sec(1), Source: "faultline", Kind: invariant.FaultInjectedEvent},
		{At: sec(9), Source: "faultline", Kind: invariant.HealStartedEvent},
		{At: sec(10), Source: "faultline", Kind: invariant.FaultHealedEvent},
	}
}

func finalLedger(t *testing.T, b *ledgerBench, mounted ...string) invariant.Input {
	r := newRun(t)
	ledgerAnswers(t, r, 20, b.logValue(mounted...), b.historyValue())
	in := r.Input(invariant.Final)
	in.Timeline = healed()
	return in
}

func TestAcknowledgedDataSurvivesPreservedWhenOneWriterFollowsAnother(t *testing.T) {
	b := newLedgerBench(t)
	b.start(ledgerID("a", "worker1")).append(5)
	b.start(ledgerID("b", "worker2")).append(5)
	j := expect(t, AcknowledgedDataSurvives(), finalLedger(t, b), verdict.Preserved,
		"every acknowledged append is in the ledger's log", "10 whole record(s)", "10 ok")
	wantExercised(t, j, true, "10 acknowledged append(s) from before the heal", "2 writer(s)")
}

func TestAcknowledgedDataSurvivesViolatedWhenTwoCopiesWriteOverEachOther(t *testing.T) {
	// The positive control: a second copy starts on the log while the
	// first runs on, and each appends from the offset it holds.
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(3)
	c := b.start(ledgerID("c", "worker2"))
	for i := 0; i < 3; i++ {
		a.append(1)
		c.append(1)
	}
	j := expect(t, AcknowledgedDataSurvives(), finalLedger(t, b), verdict.Violated, "lost append", "acknowledged append(s) missing", "worker1", "now there")
	if j.Violation != LostAppend || !j.At.Equal(sec(20.1)) || len(j.Sources) != 1 || j.Sources[0] != "ledger" {
		t.Errorf("violation %q at %s from %v", j.Violation, invariant.Stamp(j.At), j.Sources)
	}
	wantExercised(t, j, true)
}

func TestAcknowledgedDataSurvivesViolatedByRecordsNobodyWrote(t *testing.T) {
	b := newLedgerBench(t)
	b.start(ledgerID("a", "worker1")).append(3)
	// A writer whose history went elsewhere appends to the same log.
	other := newLedgerBench(t)
	other.path = b.path
	other.start(ledgerID("x", "worker3")).append(2)
	j := expect(t, AcknowledgedDataSurvives(), finalLedger(t, b), verdict.Violated, "unwritten data", "2 thing(s) nobody wrote", "no history has its writer")
	if j.Violation != UnwrittenData {
		t.Errorf("violation %q", j.Violation)
	}
}

func TestAcknowledgedDataSurvivesSettlesATornUnknownAppend(t *testing.T) {
	// The writer dies in the middle of an append: the torn tail is that
	// append's, whose outcome never reached the store.
	b := newLedgerBench(t)
	w := b.start(ledgerID("a", "worker1"))
	w.append(4)
	data := b.logValue().Data
	before := len(data)
	b.store.Refuse = func(_, v string) bool { return strings.Contains(v, `"outcome"`) }
	w.append(1)
	full := b.logValue()
	full.Data = full.Data[:before+10] // the rest never reached the disk
	r := newRun(t)
	ledgerAnswers(t, r, 20, full, b.historyValue())
	in := r.Input(invariant.Final)
	in.Timeline = healed()
	expect(t, AcknowledgedDataSurvives(), in, verdict.Preserved, "1 unknown append(s) settled: 0 present, 1 torn")
}

func TestAcknowledgedDataSurvivesWhileTheVolumeIsMounted(t *testing.T) {
	b := newLedgerBench(t)
	w := b.start(ledgerID("a", "worker1"))
	w.append(4)
	log := b.logValue("worker1")
	// Acknowledged after the read began (the writers' clock passes 20 s).
	b.now = sec(20.05)
	w.append(2)
	r := newRun(t)
	ledgerAnswers(t, r, 20, log, b.historyValue())
	in := r.Input(invariant.Final)
	in.Timeline = healed()
	expect(t, AcknowledgedDataSurvives(), in, verdict.Preserved, "still mounted on worker1", "4 acknowledged at or before")

	// The history read before the log returned proves nothing.
	s := &r.Snaps[0]
	h := s.Get(ledgerSource, storeddata.LedgerHistory)
	h.AskedAt = sec(20.05)
	s.Set(ledgerSource, storeddata.LedgerHistory, h)
	expect(t, AcknowledgedDataSurvives(), in, verdict.InsufficientData, "not read after the log returned")

	// Nothing mounted: every acknowledged append must be there.
	r = newRun(t)
	ledgerAnswers(t, r, 20, storeddata.LedgerLogValue{Path: log.Path, Data: log.Data}, b.historyValue())
	in = r.Input(invariant.Final)
	expect(t, AcknowledgedDataSurvives(), in, verdict.Violated, "2 acknowledged append(s) missing")
}

func TestAcknowledgedDataSurvivesInsufficientWithoutItsEvidence(t *testing.T) {
	b := newLedgerBench(t)
	b.start(ledgerID("a", "worker1")).append(2)

	r := newRun(t)
	r.Round(20).Unreadable(ledgerSource, storeddata.LedgerLog, 1, "not deployed: no storage host in this lab").Unreadable(ledgerSource, storeddata.LedgerHistory, 1, "not deployed: no storage host in this lab")
	expect(t, AcknowledgedDataSurvives(), r.Input(invariant.Final), verdict.InsufficientData, "not deployed")

	empty := b.historyValue()
	empty.KVs = nil
	r = newRun(t)
	ledgerAnswers(t, r, 20, b.logValue(), empty)
	expect(t, AcknowledgedDataSurvives(), r.Input(invariant.Final), verdict.InsufficientData, "no writer history")

	broken := b.historyValue()
	broken.KVs = broken.KVs[1:] // the first append's key gone
	r = newRun(t)
	ledgerAnswers(t, r, 20, b.logValue(), broken)
	expect(t, AcknowledgedDataSurvives(), r.Input(invariant.Final), verdict.InsufficientData, "lost part of it")
}

func TestAcknowledgedDataSurvivesBeforeTheFaultIsNotExercised(t *testing.T) {
	b := newLedgerBench(t)
	b.start(ledgerID("a", "worker1")).append(3)
	r := newRun(t)
	ledgerAnswers(t, r, 5, b.logValue("worker1"), b.historyValue())
	j := expect(t, AcknowledgedDataSurvives(), r.Input(invariant.PreFault), verdict.Preserved)
	wantExercised(t, j, false, "no heal")
}

func historyRounds(t *testing.T, b *ledgerBench, at ...float64) *run {
	r := newRun(t)
	for _, s := range at {
		r.Round(s).Value(ledgerSource, storeddata.LedgerHistory, 0.2, b.historyValue(), "")
	}
	return r
}

func TestSingleWriterAtStoragePreservedWhenWritersTakeTurns(t *testing.T) {
	b := newLedgerBench(t)
	b.start(ledgerID("a", "worker1")).append(4)
	b.start(ledgerID("b", "worker2")).append(4)
	j := expect(t, SingleWriterAtStorage(), historyRounds(t, b, 11, 12).Input(invariant.WindowToSettle), verdict.Preserved,
		"the writers' clocks show them one at a time", "2 writer history(ies)")
	wantExercised(t, j, true, "2 writer(s)", "one after the other")

	one := newLedgerBench(t)
	one.start(ledgerID("a", "worker1")).append(4)
	j = expect(t, SingleWriterAtStorage(), historyRounds(t, one, 11).Input(invariant.WindowToSettle), verdict.Preserved)
	wantExercised(t, j, false, "1 writer(s)")
}

func TestSingleWriterAtStorageViolatedWhenTwoCopiesAreAcceptedAtOnce(t *testing.T) {
	// The positive control: the copies' acknowledged appends alternate.
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(3)
	c := b.start(ledgerID("c", "worker2"))
	for i := 0; i < 2; i++ {
		a.append(1)
		c.append(1)
	}
	r := historyRounds(t, b, 11)
	// A later round could not read the store: what the earlier read
	// proves happened stands.
	r.Round(12).Unreadable(ledgerSource, storeddata.LedgerHistory, 2, "timeout: no answer within 2s")
	j := expect(t, SingleWriterAtStorage(), r.Input(invariant.WindowToSettle), verdict.Violated, "two writers accepted at once", "worker1", "worker2", "acknowledged by two writers", "1 read(s) after it")
	if j.At.IsZero() || !j.At.After(t0) {
		t.Errorf("at %s", j.At)
	}
	wantExercised(t, j, true)
}

// handmadeHistory is a history store's keys for writers with the given
// appends, each key put once, in the order given.
func handmadeHistory(t *testing.T, writers [][]ledgerlog.Op) storeddata.LedgerHistoryValue {
	var kvs []storeddata.StoredKV
	rev := int64(0)
	for i, ops := range writers {
		inc := strings.Repeat(string(rune('a'+i)), 32)
		st, err := json.Marshal(ledgerlog.WriterStart{Start: history.Start{Writer: history.Identity{Pod: "ledger-0", PodUID: "uid-" + inc[:1], Node: "worker" + inc[:1], Incarnation: inc}, Started: t0}})
		if err != nil {
			t.Fatal(err)
		}
		rev++
		kvs = append(kvs, storeddata.StoredKV{Key: history.WriterKey(ledgerPrefix, inc), Value: string(st), CreateRevision: rev, ModRevision: rev})
		for _, op := range ops {
			v, err := json.Marshal(op)
			if err != nil {
				t.Fatal(err)
			}
			rev++
			kvs = append(kvs, storeddata.StoredKV{Key: history.OpKey(ledgerPrefix, inc, op.N), Value: string(v), CreateRevision: rev, ModRevision: rev})
		}
	}
	return storeddata.LedgerHistoryValue{Prefix: ledgerPrefix, KVs: kvs}
}

func ms(x int) time.Time { return t0.Add(time.Duration(x) * time.Millisecond) }

// On the writers' clocks as in the store's order, PRESERVED needs the
// writers shown one at a time: b's one acknowledged append spans both of
// a's, so the two were accepted in overlapping time, yet no append lies
// wholly between two of the other's.
func TestSingleWriterAtStorageOnTheClocksNeedsTheWritersApart(t *testing.T) {
	hv := handmadeHistory(t, [][]ledgerlog.Op{
		{
			{Number: history.Number{N: 1}, Seq: 1, Offset: 0, Size: 100, Span: history.Span{Invoke: ms(0), Return: ms(10), Outcome: ledgerlog.OutcomeOK}},
			{Number: history.Number{N: 2}, Seq: 2, Offset: 100, Size: 100, Span: history.Span{Invoke: ms(200), Return: ms(210), Outcome: ledgerlog.OutcomeOK}},
		},
		{
			{Number: history.Number{N: 1}, Seq: 1, Offset: 0, Size: 100, Span: history.Span{Invoke: ms(5), Return: ms(205), Outcome: ledgerlog.OutcomeOK}},
		},
	})
	r := newRun(t)
	r.Round(11).Value(ledgerSource, storeddata.LedgerHistory, 0.1, hv, "")
	expect(t, SingleWriterAtStorage(), r.Input(invariant.WindowToSettle), verdict.InsufficientData,
		"the writers' clocks neither prove two writers at once", "nor the writers one at a time")
}

// A history read long before the stretch it judges cannot preserve it:
// two writers one after the other, read at 11 s, every later read failed.
// An overlap an earlier read proves still stands (above).
func TestSingleWriterAtStoragePreservesOnlyFromTheLastSnapshotsHistory(t *testing.T) {
	b := newLedgerBench(t)
	b.start(ledgerID("a", "worker1")).append(4)
	b.start(ledgerID("b", "worker2")).append(4)
	r := historyRounds(t, b, 11)
	for s := 12.0; s <= 40; s++ {
		r.Round(s).Unreadable(ledgerSource, storeddata.LedgerHistory, 2, "timeout: no answer within 2s")
	}
	expect(t, SingleWriterAtStorage(), r.Input(invariant.WindowToSettle), verdict.InsufficientData,
		"read at 10:00:11.200", "29 read(s) after it", "through the last snapshot at 10:00:40.000", "timeout")
	expect(t, SingleWriterAtStorage(), skewed(r.Input(invariant.WindowToSettle)), verdict.InsufficientData, "29 read(s) after it")
}

func TestSingleWriterAtStorageInsufficientWhenAnUnknownAppendFallsBetween(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(3)
	c := b.start(ledgerID("c", "worker2"))
	a.append(1)
	b.store.Refuse = func(_, v string) bool { return strings.Contains(v, `"outcome"`) }
	c.append(1) // its outcome never reaches the store
	b.store.Refuse = nil
	a.append(1)
	expect(t, SingleWriterAtStorage(), historyRounds(t, b, 11).Input(invariant.WindowToSettle), verdict.InsufficientData, "no two writers proven at once", "never completed")

	r := newRun(t)
	r.Round(11).Unreadable(ledgerSource, storeddata.LedgerHistory, 1, "not deployed: no storage host in this lab")
	expect(t, SingleWriterAtStorage(), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "no readable ledger history", "not deployed")
}

func TestLedgerInvariantsOverNoEvidence(t *testing.T) {
	for _, inv := range []invariant.Invariant{AcknowledgedDataSurvives(), SingleWriterAtStorage()} {
		if j := invariant.Judge(inv, invariant.Input{Moment: invariant.Final}); j.Verdict != verdict.InsufficientData {
			t.Errorf("%s over nothing: %s", inv.Name(), j.Verdict)
		}
		if len(inv.Reads()) == 0 {
			t.Errorf("%s reads nothing", inv.Name())
		}
	}
}

func logRounds(t *testing.T, r *run, b *ledgerBench, at float64) {
	t.Helper()
	r.Round(at).Value(ledgerSource, storeddata.LedgerLog, 0.1, b.logValue("worker1"), "")
}

func TestSingleHistoryOfTheLedgerPreservedWhileTheLogOnlyGrows(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	r := newRun(t)
	for s := range 3 {
		a.append(3)
		logRounds(t, r, b, float64(s+1))
	}
	// A read that timed out is a gap, not an empty log.
	r.Round(4).Unreadable(ledgerSource, storeddata.LedgerLog, 2, "timeout: no answer within 2s")
	b.start(ledgerID("b", "worker2")).append(2) // a restart appends after the last record
	logRounds(t, r, b, 5)
	j := expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Preserved,
		"every read of the ledger's log extends the one before", "4 reads", "1 read(s) of the log gave no value")
	wantExercised(t, j, true, "2 writer(s)")

	one := newLedgerBench(t)
	w := one.start(ledgerID("a", "worker1"))
	r = newRun(t)
	for s := range 2 {
		w.append(2)
		logRounds(t, r, one, float64(s+1))
	}
	wantExercised(t, expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Preserved), false, "1 writer(s)")
}

func TestSingleHistoryOfTheLedgerViolatedWhenASecondCopyWritesOverWhatWasRead(t *testing.T) {
	// The positive control: the second copy starts at an offset it keeps
	// while the first appends on; a read saw the first's records there.
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(3)
	c := b.start(ledgerID("c", "worker2"))
	a.append(2)
	r := newRun(t)
	logRounds(t, r, b, 1)
	c.append(1)
	logRounds(t, r, b, 2)
	j := expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Violated, "not one log", "sequence 4", "worker2")
	if j.Violation != NotOneLog || !j.At.Equal(sec(2)) {
		t.Errorf("violation %q at %s, want %q at the second read's round", j.Violation, j.At, NotOneLog)
	}
}

// A read compares the log with the one before only where the log grew
// between them: every read made while two copies wrote failed (the image
// was written while it was copied), and the reads after the writers
// stopped are one final log three times. No break could show, and none
// of the reads held what a second copy wrote while the first wrote.
func TestSingleHistoryOfTheLedgerNotExercisedWithoutAReadWhileTwoCopiesWrote(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(3)
	c := b.start(ledgerID("c", "worker2")) // the second copy keeps the offset after sequence 3
	a.append(2)
	c.append(2) // over a's sequences 4 and 5: a second history
	r := newRun(t)
	for s := 1; s <= 5; s++ {
		r.Round(float64(s)).Unreadable(ledgerSource, storeddata.LedgerLog, 0.5, "the image was written while it was copied")
	}
	for s := 20; s <= 22; s++ {
		logRounds(t, r, b, float64(s))
	}
	j := expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Preserved, "not exercised", "records of 2 writer(s)")
	wantExercised(t, j, false, "no two compared readable reads")

	// Read once before the second copy and once after it wrote: the log
	// grew between two reads, and the later holds both writers' records.
	b = newLedgerBench(t)
	a = b.start(ledgerID("a", "worker1"))
	a.append(3)
	r = newRun(t)
	logRounds(t, r, b, 1)
	b.start(ledgerID("c", "worker2")).append(2)
	logRounds(t, r, b, 2)
	j = expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Preserved, "every read of the ledger's log extends the one before")
	wantExercised(t, j, true, "the log grew between the reads at 10:00:01.000 and 10:00:02.000", "2 writer(s)")
}

// The log as the last snapshot read it must be among the reads: a
// replacement made after the last readable read would show in no read.
func TestSingleHistoryOfTheLedgerPreservesOnlyWithTheLastSnapshotsRead(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	r := newRun(t)
	for s := range 3 {
		a.append(2)
		logRounds(t, r, b, float64(s+1))
	}
	for s := 4.0; s <= 10; s++ {
		r.Round(s).Unreadable(ledgerSource, storeddata.LedgerLog, 2, "timeout: no answer within 2s")
	}
	expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "read at 10:00:03.100", "7 read(s) after it", "through the last snapshot at 10:00:10.000")
}

func TestSingleHistoryOfTheLedgerNeedsTwoReadableReads(t *testing.T) {
	b := newLedgerBench(t)
	b.start(ledgerID("a", "worker1")).append(2)
	r := newRun(t)
	logRounds(t, r, b, 1)
	r.Round(2).Unreadable(ledgerSource, storeddata.LedgerLog, 2, "timeout: no answer within 2s")
	expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "1 readable read(s)", "two are needed")
}

// A slow read of a block image's log returns after a read begun a round
// later: its copy of the image may have been made after the other's, so
// the two are in no known order and the shorter one shows nothing lost.
func TestSingleHistoryOfTheLedgerDoesNotOrderReadsThatOverlapped(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(2)
	short := b.logValue("worker1")
	a.append(2)
	long := b.logValue("worker1")
	r := newRun(t)
	r.Round(1).Value(ledgerSource, storeddata.LedgerLog, 2.5, long, "") // returned at 3.5 s
	r.Round(2).Value(ledgerSource, storeddata.LedgerLog, 0.1, short, "")
	a.append(1)
	logRounds(t, r, b, 4)
	expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Preserved, "every read of the ledger's log extends the one before")
}

// A slow read overlaps a quick one begun after it; both have returned
// when a later read begins, and the later read lost a record only the
// slow one had seen: it is compared with both.
func TestSingleHistoryOfTheLedgerComparesEveryReadThatHadReturned(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(3)
	c := b.start(ledgerID("c", "worker2"))
	short := b.logValue("worker1")
	a.append(2)
	seen := b.logValue("worker1")
	c.append(1)
	r := newRun(t)
	r.Round(1).Value(ledgerSource, storeddata.LedgerLog, 0.1, short, "")
	r.Round(2).Value(ledgerSource, storeddata.LedgerLog, 8, seen, "") // returned at 10 s
	r.Round(3).Value(ledgerSource, storeddata.LedgerLog, 0.1, short, "")
	logRounds(t, r, b, 11)
	j := expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Violated, "not one log", "sequence 4", "worker2")
	if j.Violation != NotOneLog || !j.At.Equal(sec(11)) {
		t.Errorf("violation %q at %s, want %q at the last read's round", j.Violation, j.At, NotOneLog)
	}
}

// Two readable reads of the log that overlapped in time are in no known
// order and are not compared: nothing was compared, which is no evidence
// that the log stayed one. (Once any two reads are compared, the last
// read, begun latest, is compared too.)
func TestSingleHistoryOfTheLedgerWithNoReadsInAKnownOrderIsInsufficient(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(2)
	first := b.logValue("worker1")
	a.append(2)
	r := newRun(t)
	r.Round(1).Value(ledgerSource, storeddata.LedgerLog, 3.5, first, "") // returned at 4.5 s
	logRounds(t, r, b, 2)                                                // 2 s to 2.1 s
	expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "overlapped", "nothing was compared")

	// A third read begun after both returned is compared with both.
	logRounds(t, r, b, 5)
	expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.Preserved, "1 read(s) overlapped")
}

// The ledger damage controls (framework/fault/controls'
// LedgerRecordDamage): a record in the middle of the log garbled (bytes
// in its middle overwritten) breaks storage-integrity, single-history
// and acknowledged-data-survives; replaced by a whole record no writer
// made (ledgerlog.Forge) it breaks single-history and
// acknowledged-data-survives and leaves storage-integrity clean.
func TestLedgerDamageBreaksWhatItsControlNames(t *testing.T) {
	for _, how := range []string{"garbled", "forged"} {
		t.Run(how, func(t *testing.T) {
			b := newLedgerBench(t)
			b.start(ledgerID("a", "worker1")).append(5)
			whole := b.logValue()
			e := ledgerlog.Scan(whole.Data).Entries[2]
			damaged := whole
			damaged.Data = append([]byte(nil), whole.Data...)
			rec := damaged.Data[e.Offset:e.End()]
			switch how {
			case "garbled":
				copy(rec[len(rec)/2-4:], "DAMAGED!")
			case "forged":
				forged, err := ledgerlog.Forge(e)
				if err != nil {
					t.Fatal(err)
				}
				copy(rec, forged)
			}
			r := newRun(t)
			ledgerAnswers(t, r, 2, whole, b.historyValue())
			ledgerAnswers(t, r, 20, damaged, b.historyValue())
			in := r.Input(invariant.WindowToSettle)
			in.Timeline = healed()
			expect(t, SingleHistory(), in, verdict.Violated, "sequence 3")
			expect(t, AcknowledgedDataSurvives(), in, verdict.Violated)
			want := verdict.Violated
			if how == "forged" {
				want = verdict.Preserved
			}
			expect(t, StorageIntegrity(), in, want)
		})
	}
}
