package checker

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/electorlog/electortest"
	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/ledgerlog"
)

func TestLedgerRewrittenInvokes(t *testing.T) {
	t.Run("outcomes not yet stored, each key put once: in flight, not rewritten", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(2)
		b.store.Refuse = func(_, v string) bool { return strings.Contains(v, `"outcome"`) }
		for range 2 { // appends 3 and 4: their outcomes wait, the invokes are stored
			if _, err := a.client.Append(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if a.client.Pending() != 2 {
			t.Fatalf("%d outcomes waiting, want 2", a.client.Pending())
		}
		if r := LedgerRewrittenInvokes(b.histories(), StoreOrderOf(prefix, b.kvs())); len(r) != 0 {
			t.Errorf("rewritten %v", r)
		}
		// Without revisions, append 3 alone before append 4 cannot be
		// told from a late put.
		if r := LedgerRewrittenInvokes(b.histories(), StoreOrder{}); len(r) != 1 || r[0].N != 3 {
			t.Errorf("without revisions: rewritten %v", r)
		}
	})

	// An invoke put that timed out, committed after the puts of the
	// append that reused its number.
	late := func(t *testing.T) *bench {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(2)
		var timedOut string
		b.store.Refuse = func(_, v string) bool { timedOut = v; b.store.Refuse = nil; return true }
		if _, err := a.client.Append(context.Background()); !errors.Is(err, ledgerlog.ErrNotRecorded) {
			t.Fatalf("the refused invoke: %v", err)
		}
		a.append(2) // append 3 acknowledged, then 4
		if err := b.store.Put(context.Background(), history.OpKey(prefix, writerA.Incarnation, 3), timedOut); err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Run("a late invoke put over an acknowledged append", func(t *testing.T) {
		b := late(t)
		r := LedgerRewrittenInvokes(b.histories(), StoreOrderOf(prefix, b.kvs()))
		if len(r) != 1 || r[0].N != 3 || r[0].Writer != writerA || !strings.Contains(r.Error(), "put more than once") {
			t.Errorf("rewritten %v", r)
		}
	})
	t.Run("without revisions, an invoke alone before a later operation", func(t *testing.T) {
		b := late(t)
		r := LedgerRewrittenInvokes(b.histories(), StoreOrder{})
		if len(r) != 1 || r[0].N != 3 || !strings.Contains(r[0].Why, "operation 4 after it") {
			t.Errorf("rewritten %v", r)
		}
	})
}

func TestElectorRewrittenInvokes(t *testing.T) {
	b := electortest.New(t, t0)
	a := b.Writer("a", "worker1", electorlog.FencingNone).Lead(1)
	a.Increment("", "1", history.OutcomeOK)
	// In flight with the value it is about to write: its key was put
	// twice (the invoke, then the value), as every increment's is.
	a.Begin(electortest.Key, "1", "2")
	if r := ElectorRewrittenInvokes(b.Histories(), StoreOrderOf(electortest.Prefix, b.KVs())); len(r) != 0 {
		t.Errorf("an increment in flight with its value: rewritten %v", r)
	}
	// The first increment's key, put again by a late invoke.
	tok := electorlog.Token{Transitions: 1, Holder: a.Holder}
	v, err := json.Marshal(electorlog.Op{Number: history.Number{N: 1}, Kind: electorlog.OpIncrement, Key: electortest.Key, Term: 1, Token: &tok, Span: history.Span{Invoke: t0}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Store.Put(context.Background(), history.OpKey(electortest.Prefix, a.Client.Writer().Writer.Incarnation, 1), string(v)); err != nil {
		t.Fatal(err)
	}
	if r := ElectorRewrittenInvokes(b.Histories(), StoreOrderOf(electortest.Prefix, b.KVs())); len(r) != 1 || r[0].N != 1 {
		t.Errorf("a late invoke over an acknowledged increment: rewritten %v", r)
	}
}
