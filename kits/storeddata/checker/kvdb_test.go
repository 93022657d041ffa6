package checker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/history/historytest"
	"github.com/faultline/faultline/fixtures/kvdb"
)

// The kvdb tests build real databases and histories with the workload's
// own code: kvdb's naive client on a bbolt file in a temporary directory,
// recording into a store in memory, every writer on one clock.

const kvPrefix = "/faultline/kvdb/test/"

type kvBench struct {
	t     *testing.T
	path  string
	store *historytest.Store
	now   time.Time
}

func newKVBench(t *testing.T) *kvBench {
	return &kvBench{t: t, path: filepath.Join(t.TempDir(), "kv.db"), store: historytest.NewStore(), now: t0}
}

func (b *kvBench) clock() time.Time { b.now = b.now.Add(time.Millisecond); return b.now }

func (b *kvBench) start(id history.Identity) *kvdb.Client {
	b.t.Helper()
	db, err := kvdb.OpenDB(b.path, kvdb.DBOptions{NoSync: true})
	if err != nil {
		b.t.Fatal(err)
	}
	c, err := kvdb.NewClient(db, id, b.store, kvdb.ClientOptions{Prefix: kvPrefix, Keys: kvdb.Keys(2, 1), Now: b.clock})
	if err != nil {
		b.t.Fatal(err)
	}
	if err := c.RecordStart(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	return c
}

func kvDo(t *testing.T, c *kvdb.Client, n int) []kvdb.Op {
	t.Helper()
	var out []kvdb.Op
	for i := 0; i < n; i++ {
		op, err := c.Do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, op)
	}
	return out
}

func (b *kvBench) histories() []kvdb.History {
	b.t.Helper()
	hs, err := kvdb.DecodeHistories(kvPrefix, b.store.KVs())
	if err != nil {
		b.t.Fatal(err)
	}
	return hs
}

func (b *kvBench) bytes() []byte {
	b.t.Helper()
	data, err := os.ReadFile(b.path)
	if err != nil {
		b.t.Fatal(err)
	}
	return data
}

func (b *kvBench) check(o KVDBOptions) KVDB {
	b.t.Helper()
	c, err := kvdb.ReadContent(b.bytes())
	if err != nil {
		b.t.Fatal(err)
	}
	return CheckKVDB(c, b.histories(), o)
}

func TestCheckKVCleanWhenOneWriterFollowsAnother(t *testing.T) {
	b := newKVBench(t)
	kvDo(t, b.start(identity("a", "worker1")), 7)
	kvDo(t, b.start(identity("b", "worker2")), 5)
	r := b.check(KVDBOptions{})
	if len(r.Lost)+r.Nobody()+len(r.Unknown) != 0 || r.Looked.OK != 12 || r.Looked.Required != 12 || r.Looked.Writers != 2 {
		t.Fatalf("%s", r)
	}
	// counter/0 was incremented by operations 1, 4, 7 of a and 3 of b
	// (its 6th overall is b's 3rd... keys go round per writer).
	for _, c := range r.Counts {
		if c.Final != int64(c.Acknowledged) {
			t.Errorf("%s: %d after %d increments", c.Key, c.Final, c.Acknowledged)
		}
	}
	if !strings.Contains(r.String(), "every acknowledged operation's effect is there") {
		t.Errorf("%s", r)
	}
}

func TestCheckKVFindsTheIncrementsTwoCopiesLost(t *testing.T) {
	b := newKVBench(t)
	a := b.start(identity("a", "worker1"))
	kvDo(t, a, 3)
	c := b.start(identity("c", "worker2"))
	for i := 0; i < 3; i++ {
		kvDo(t, a, 3)
		kvDo(t, c, 3)
	}
	r := b.check(KVDBOptions{})
	t.Logf("%s", r)
	if len(r.Lost) == 0 || r.Nobody() != 0 {
		t.Fatalf("two copies each incrementing its own belief: %s", r)
	}
	for _, l := range r.Lost {
		if kind, _ := kvdb.KindOf(l.Op.Key); kind != kvdb.Counter || !strings.Contains(l.Why, "does not count it") {
			t.Errorf("lost %s: %s", l.DBOp, l.Why)
		}
	}
	// Every lost increment is the difference between what was
	// acknowledged and what the counts say.
	missing := 0
	for _, c := range r.Counts {
		missing += c.Acknowledged - int(c.Final)
	}
	if missing != len(r.Lost) {
		t.Errorf("%d lost named, the counts are %d short", len(r.Lost), missing)
	}
}

func TestCheckKVFindsValuesNobodyWrote(t *testing.T) {
	b := newKVBench(t)
	kvDo(t, b.start(identity("a", "worker1")), 3)
	// A writer whose history went elsewhere writes the same database.
	other := newKVBench(t)
	other.path = b.path
	kvDo(t, other.start(identity("x", "worker3")), 2)
	// And a key the workload does not write.
	db, err := bolt.Open(b.path, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(kvdb.BucketName)).Put([]byte("junk"), []byte("x")) })
	db.Close()
	r := b.check(KVDBOptions{})
	if r.Nobody() != 3 || r.Looked.Foreign != 1 || !strings.Contains(r.String(), "3 value(s) nobody wrote") {
		t.Fatalf("%s", r)
	}
	for _, u := range r.Unwritten[1:] {
		if u.Value == nil || u.Value.Writer.Node != "worker3" || !strings.Contains(u.Why, "no history has operation") {
			t.Errorf("%s", u)
		}
	}
	// Below a value nobody wrote, what a count counts is not known: no
	// increment is called lost on it.
	if len(r.Lost) != 0 {
		t.Errorf("lost %v", r.Lost)
	}
}

func TestCheckKVSettlesUnknownOperationsAndNeverCountsThemLost(t *testing.T) {
	b := newKVBench(t)
	a := b.start(identity("a", "worker1"))
	kvDo(t, a, 3)
	// The outcome of operation 4 never reaches the store: the writer dies
	// before it can say. Its increment took effect and is final.
	b.store.Refuse = func(_, v string) bool { return strings.Contains(v, `"outcome"`) }
	kvDo(t, a, 1)
	b.store.Refuse = nil
	r := b.check(KVDBOptions{})
	if len(r.Unknown) != 1 || !r.Unknown[0].Final || r.Unknown[0].Op.N != 4 || len(r.Lost)+r.Nobody() != 0 {
		t.Fatalf("%s", r)
	}
	// A second writer then counts on from it: the unknown one is read
	// later, and is on the chain of the final count.
	kvDo(t, b.start(identity("b", "worker2")), 3)
	r = b.check(KVDBOptions{})
	if len(r.Unknown) != 1 || !r.Unknown[0].Final || !r.Unknown[0].ReadLater || len(r.Lost)+r.Nobody() != 0 {
		t.Fatalf("%s", r)
	}
}

func TestCheckKVFindsARegisterWriteLostWithTheDatabaseRolledBack(t *testing.T) {
	// A node's cache of the file is lost: the database goes back to an
	// older copy after acknowledged writes.
	b := newKVBench(t)
	a := b.start(identity("a", "worker1"))
	kvDo(t, a, 3)
	old := b.bytes()
	later := kvDo(t, a, 3)
	if err := os.WriteFile(b.path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	r := b.check(KVDBOptions{})
	if len(r.Lost) != 3 || r.Nobody() != 0 {
		t.Fatalf("%s", r)
	}
	if l := r.Lost[2]; l.Op.N != later[2].N || !strings.Contains(l.Why, "invoked after") {
		t.Errorf("the register write: %s: %s", l.DBOp, l.Why)
	}
	// Read while the writer could still write: only what was
	// acknowledged before the read began counts.
	r = b.check(KVDBOptions{AckedBefore: later[0].Invoke})
	if len(r.Lost) != 0 || r.Looked.Required != 3 {
		t.Errorf("with the cut before the later writes: %s", r)
	}
}

func TestCheckKVAKeyMissingLosesEveryIncrementOfIt(t *testing.T) {
	b := newKVBench(t)
	empty := newKVBench(t)
	empty.start(identity("z", "worker9")) // a database with the bucket and no key
	kvDo(t, b.start(identity("a", "worker1")), 4)
	c, err := kvdb.ReadContent(empty.bytes())
	if err != nil {
		t.Fatal(err)
	}
	r := CheckKVDB(c, b.histories(), KVDBOptions{})
	if len(r.Lost) != 4 || !strings.Contains(r.Lost[0].Why, "holds no counter/0") {
		t.Fatalf("%s", r)
	}
}

func TestCheckDatabaseIntegrity(t *testing.T) {
	b := newKVBench(t)
	kvDo(t, b.start(identity("a", "worker1")), 30)
	good := b.bytes()
	r := CheckDatabaseIntegrity(good)
	if !r.Clean() || r.Looked.Keys != 3 || r.Looked.PageSize == 0 || r.Looked.TxID < 30 {
		t.Fatalf("%s", r)
	}

	// Another node's page over the bucket's leaf: a page bbolt's check
	// cannot account for.
	ps := r.Looked.PageSize
	damaged := append([]byte(nil), good...)
	for p := 2; p*ps < len(damaged); p++ {
		copy(damaged[p*ps:(p+1)*ps], []byte(strings.Repeat("\x5a", ps)))
	}
	r = CheckDatabaseIntegrity(damaged)
	if r.Clean() {
		t.Fatalf("every page but the meta pages overwritten, and clean: %s", r)
	}
	t.Logf("%s", r)

	// Both meta pages gone: bbolt cannot open it.
	noMeta := append([]byte(nil), good...)
	copy(noMeta[:2*ps], make([]byte, 2*ps))
	if r := CheckDatabaseIntegrity(noMeta); r.OpenError == "" || !strings.Contains(r.String(), "does not open") {
		t.Errorf("no meta page: %s", r)
	}
	if r := CheckDatabaseIntegrity(nil); r.Clean() {
		t.Errorf("no bytes: %s", r)
	}
	// The volume's file is never opened: the check ran on copies.
	if got := b.bytes(); string(got) != string(good) {
		t.Errorf("the checked file changed")
	}
}
