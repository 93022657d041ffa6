package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures/electorlog/electortest"
	"github.com/faultline/faultline/fixtures/history"
)

func TestStoreOrderOf(t *testing.T) {
	o := StoreOrderOf(prefix, []history.KV{
		{Key: prefix + "aaaa/op/000000000001", CreateRevision: 3, ModRevision: 5},
		{Key: prefix + "aaaa/op/000000000002", CreateRevision: 6, ModRevision: 6},
		{Key: prefix + "aaaa/writer", CreateRevision: 2, ModRevision: 2},
		{Key: prefix + "bbbb/op/000000000001"},                                      // read without revisions
		{Key: "/elsewhere/cccc/op/000000000001", CreateRevision: 1, ModRevision: 1}, // another prefix
	})
	if len(o) != 2 || o[OpRef{"aaaa", 1}] != (Stored{3, 5}) || o[OpRef{"aaaa", 2}] != (Stored{6, 6}) {
		t.Fatalf("%v", o)
	}
	if _, ok := o.ended("aaaa", 2, true); ok {
		t.Error("one put holds no outcome stored after the operation")
	}
	if e, ok := o.ended("aaaa", 1, true); !ok || e != 5 {
		t.Errorf("ended %d %v", e, ok)
	}
}

// In the store's order, appends that alternate are proven at once, and
// writers that took turns are proven apart, whatever their clocks said.
func TestCheckWritersInStoreOrder(t *testing.T) {
	b := newBench(t)
	a := b.start(writerA, 16)
	a.append(3)
	c := b.start(writerC, 16)
	for range 2 {
		a.append(1)
		c.append(1)
	}
	w := CheckWritersInStoreOrder(b.histories(), StoreOrderOf(prefix, b.kvs()))
	if w.Overlap == nil || w.Overlap.Store == nil || w.Apart || !w.InStoreOrder {
		t.Fatalf("alternating appends: %+v", w)
	}
	r := w.Overlap.Store
	if !(r.BeforeOutcome < r.BetweenInvoke && r.BetweenInvoke < r.BetweenOutcome && r.BetweenOutcome < r.AfterInvoke) {
		t.Errorf("the revisions do not place it: %+v", r)
	}
	if s := w.Overlap.String(); !strings.Contains(s, "history store's order") || !strings.Contains(s, "revision") {
		t.Errorf("%s", s)
	}

	b = newBench(t)
	b.start(writerA, 16).append(3)
	b.start(writerC, 16).append(3)
	if w := CheckWritersInStoreOrder(b.histories(), StoreOrderOf(prefix, b.kvs())); w.Overlap != nil || !w.Apart || w.Looked.Unplaced != 0 {
		t.Errorf("one after the other: %+v", w)
	}
	// Without revisions nothing is placed: not apart.
	if w := CheckWritersInStoreOrder(b.histories(), StoreOrder{}); w.Apart || w.Looked.Unplaced != 6 {
		t.Errorf("no revisions: %+v", w)
	}
}

// In the store's order, a read its writer's clock puts before the write
// it read fits: the store's order puts it after.
func TestCheckKVInStoreOrder(t *testing.T) {
	b := electortest.New(t, kvT0)
	a, c := b.Writer("a", "worker1", fenced).Lead(1), b.SkewedWriter("c", "worker2", fenced, -time.Minute)
	a.Increment("", "1", ok)
	c.Read("1")
	if r := checkKV(t, b); r.Result() != NotLinearizable {
		t.Fatalf("by the clocks the read comes before the write: %s", r)
	}
	r, err := CheckKVInStoreOrder(b.Histories(), StoreOrderOf(electortest.Prefix, b.KVs()), 10*time.Second)
	if err != nil || r.Result() != Linearizable {
		t.Errorf("in the store's order: %s, %v", r, err)
	}
	if _, err := CheckKVInStoreOrder(b.Histories(), StoreOrder{}, 10*time.Second); err == nil {
		t.Error("no revisions: no error")
	}
}
