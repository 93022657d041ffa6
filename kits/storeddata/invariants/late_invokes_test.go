package invariants

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/electorlog/electortest"
	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/kvdb"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// A writer whose invoke put timed out makes its next operation under the
// same number; the timed-out put can still commit, after the puts of the
// operation that reused the number, and leave that operation's key
// holding an invoke with no outcome: an acknowledged operation turned
// into one in flight. The history is then malformed, not a history of
// what was done.

// lateLeaderPut records, for the elector's writer a, an increment whose
// invoke put timed out, the increment that reused its number (1 → 2,
// acknowledged), and then the timed-out put landing.
func lateLeaderPut(t *testing.T, b *electortest.Bench, a *electortest.Writer, token int32) {
	t.Helper()
	b.Store.Down = true
	tok := electorlog.Token{Transitions: token, Holder: a.Holder}
	timedOut, err := a.Client.Invoke(context.Background(), electorlog.Op{Kind: electorlog.OpIncrement, Key: electortest.Key, Term: 1, Token: &tok})
	if !errors.Is(err, electorlog.ErrNotRecorded) {
		t.Fatalf("the refused invoke: %v", err)
	}
	b.Store.Down = false
	done := a.Increment("1", "2", eOK)
	timedOut.N, timedOut.Kind, timedOut.Key, timedOut.Term, timedOut.Token, timedOut.Invoke = done.N, electorlog.OpIncrement, electortest.Key, 1, &tok, done.Invoke.Add(-1)
	v, err := json.Marshal(timedOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store.Put(context.Background(), history.OpKey(electortest.Prefix, a.Client.Writer().Writer.Incarnation, done.N), string(v)); err != nil {
		t.Fatal(err)
	}
}

func TestElectorInvariantsRefuseAHistoryALateInvokePutRewrote(t *testing.T) {
	// A follower read the acknowledged increment's value, which the late
	// put took out of the history: no order fits, though one copy wrote.
	b := electortest.New(t, t0)
	a, f := b.Writer("a", "worker1", electorlog.FencingNone).Lead(1), b.Writer("f", "worker3", electorlog.FencingNone)
	a.Increment("", "1", eOK)
	lateLeaderPut(t, b, a, 1)
	f.Read("2")
	expect(t, SingleHistory(), electorRounds(t, b, false, 11), verdict.InsufficientData, "malformed", "operation 2", "put more than once")

	// Fenced: another holder's write of the same value under the same
	// token timed out; with the acknowledged write gone from the
	// history, the follower's read would prove the unknown one accepted:
	// one token, two holders, from a write never shown accepted.
	b = electortest.New(t, t0)
	a, c, f := b.Writer("a", "worker1", eFenced).Lead(1), b.Writer("c", "worker2", eFenced).Lead(1), b.Writer("f", "worker3", eFenced)
	a.Increment("", "1", eOK)
	lateLeaderPut(t, b, a, 1)
	c.End(c.Begin(electortest.Key, "1", "2"), eUnknown, "")
	f.Read("2")
	expect(t, FencingMonotonic(), electorRounds(t, b, false, 11), verdict.InsufficientData, "malformed", "operation 2")
}

// refuseOnce makes the store refuse the next put, and returns what that
// put would have stored.
func refuseOnce(s *ledgerStore) *string {
	var refused string
	s.Refuse = func(_, v string) bool {
		refused = v
		s.Refuse = nil
		return true
	}
	return &refused
}

func TestAcknowledgedDataRefusesALedgerHistoryALateInvokePutRewrote(t *testing.T) {
	b := newLedgerBench(t)
	a := b.start(ledgerID("a", "worker1"))
	a.append(3)
	timedOut := refuseOnce(b.store)
	if _, err := a.client.Append(context.Background()); !errors.Is(err, ledgerlog.ErrNotRecorded) {
		t.Fatalf("the refused invoke: %v", err)
	}
	a.append(1) // append 4, acknowledged
	var op ledgerlog.Op
	if err := json.Unmarshal([]byte(*timedOut), &op); err != nil {
		t.Fatal(err)
	}
	if err := b.store.Put(context.Background(), history.OpKey(ledgerPrefix, ledgerID("a", "worker1").Incarnation, op.N), *timedOut); err != nil {
		t.Fatal(err)
	}
	// The acknowledged append's record is then lost.
	if err := os.Truncate(b.path, op.Offset); err != nil {
		t.Fatal(err)
	}
	expect(t, AcknowledgedDataSurvives(), finalLedger(t, b), verdict.InsufficientData, "malformed", "operation 4", "put more than once")
	expect(t, SingleWriterAtStorage(), historyRounds(t, b, 11).Input(invariant.WindowToSettle), verdict.InsufficientData, "malformed", "operation 4")
}

func TestAcknowledgedDataRefusesAKVDBHistoryALateInvokePutRewrote(t *testing.T) {
	b := newKVDBBench(t)
	a := b.start(ledgerID("a", "worker1"))
	kvdbOps(t, a, 3)
	before := b.dbValue()
	timedOut := refuseOnce(b.store)
	if _, err := a.Do(context.Background()); !errors.Is(err, kvdb.ErrNotRecorded) {
		t.Fatalf("the refused invoke: %v", err)
	}
	kvdbOps(t, a, 1) // operation 4, acknowledged
	if err := b.store.Put(context.Background(), history.OpKey(kvdbPrefix, ledgerID("a", "worker1").Incarnation, 4), *timedOut); err != nil {
		t.Fatal(err)
	}
	// The database then loses the acknowledged operation.
	r := newRun(t)
	rd := r.Round(20)
	kvdbAnswers(t, rd.Snapshot(), 20, before, b.historyValue())
	in := r.Input(invariant.Final)
	in.Timeline = healed()
	expect(t, AcknowledgedDataSurvives(), in, verdict.InsufficientData, "malformed", "operation 4", "put more than once")
}
