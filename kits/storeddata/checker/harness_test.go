package checker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/history/historytest"
	"github.com/faultline/faultline/fixtures/ledgerlog"
)

// The tests build real logs and histories with the workload's own code:
// ledgerlog's naive appender on a file in a temporary directory, and its
// client recording every append in a store kept in memory.

const prefix = "/faultline/ledger/test/"

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// bench is one ledger file, its history store and one clock for every
// writer (one kernel's clock: each reading a millisecond on).
type bench struct {
	t     *testing.T
	path  string
	store *historytest.Store
	now   time.Time
}

func newBench(t *testing.T) *bench {
	return &bench{t: t, path: filepath.Join(t.TempDir(), "ledger.log"), store: historytest.NewStore(), now: t0}
}

func (b *bench) clock() time.Time { b.now = b.now.Add(time.Millisecond); return b.now }

// writer is one copy of the workload.
type writer struct {
	b      *bench
	id     history.Identity
	log    *ledgerlog.Log
	client *ledgerlog.Client
	file   *faultyFile
}

// faultyFile can make the next write write only part of its bytes, or the
// next fsync fail after the write.
type faultyFile struct {
	*os.File
	tearNext     int // >0: the next write writes this many bytes and fails
	failNextSync bool
}

func (f *faultyFile) Sync() error {
	if f.failNextSync {
		f.failNextSync = false
		return syscall.EIO
	}
	return f.File.Sync()
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	if n := f.tearNext; n > 0 {
		f.tearNext = 0
		w, _ := f.File.WriteAt(p[:n], off)
		return w, syscall.EIO
	}
	return f.File.WriteAt(p, off)
}

func identity(name, node string) history.Identity {
	inc := fmt.Sprintf("%-32s", name)
	inc = strings.ReplaceAll(inc, " ", "0")
	return history.Identity{Pod: "ledger-0", PodUID: "uid-" + name, ContainerID: strings.Repeat("c", 64), Node: node, Incarnation: inc}
}

// start opens the log as a new copy of the workload does.
func (b *bench) start(id history.Identity, dataBytes int) *writer {
	return b.startOn(b.path, id, dataBytes)
}

// startOn opens the log at path (another node's view of the volume).
func (b *bench) startOn(path string, id history.Identity, dataBytes int) *writer {
	b.t.Helper()
	osf, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	f := &faultyFile{File: osf}
	l, st, err := ledgerlog.OpenFile(f, path, id, ledgerlog.LogOptions{Sync: true, DataBytes: dataBytes})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { l.Close() })
	c, err := ledgerlog.NewClient(l, st, b.store, history.ClientOptions{Prefix: prefix, Now: b.clock})
	if err != nil {
		b.t.Fatal(err)
	}
	if err := c.RecordStart(context.Background()); err != nil {
		b.t.Fatal(err)
	}
	return &writer{b: b, id: id, log: l, client: c, file: f}
}

// append makes n appends, each acknowledged.
func (w *writer) append(n int) []ledgerlog.Op {
	w.b.t.Helper()
	var out []ledgerlog.Op
	for i := 0; i < n; i++ {
		op, err := w.client.Append(context.Background())
		if err != nil || op.Outcome != ledgerlog.OutcomeOK {
			w.b.t.Fatalf("append by %s: %+v %v", w.id.Incarnation, op, err)
		}
		out = append(out, op)
	}
	return out
}

// tear makes one append that writes only part of its record.
func (w *writer) tear(bytes int) ledgerlog.Op {
	w.b.t.Helper()
	w.file.tearNext = bytes
	op, err := w.client.Append(context.Background())
	if err != nil || op.Outcome != ledgerlog.OutcomeUnknown {
		w.b.t.Fatalf("torn append: %+v %v", op, err)
	}
	return op
}

// unsynced makes one append whose write lands and whose fsync fails.
func (w *writer) unsynced() ledgerlog.Op {
	w.b.t.Helper()
	w.file.failNextSync = true
	op, err := w.client.Append(context.Background())
	if err != nil || op.Outcome != ledgerlog.OutcomeUnknown {
		w.b.t.Fatalf("unsynced append: %+v %v", op, err)
	}
	return op
}

func (b *bench) histories() []ledgerlog.History {
	b.t.Helper()
	hs, err := ledgerlog.DecodeHistories(prefix, b.kvs())
	if err != nil {
		b.t.Fatal(err)
	}
	return hs
}

// kvs are the history store's keys, sorted, with their revisions.
func (b *bench) kvs() []history.KV { return b.store.KVs() }

func (b *bench) bytes() []byte {
	b.t.Helper()
	data, err := os.ReadFile(b.path)
	if err != nil {
		b.t.Fatal(err)
	}
	return data
}

// sameLengths returns a writer identity other than base's whose records
// of the sequences from..to are exactly as long as base's, so that the
// two overwrite each other record for record.
func sameLengths(t *testing.T, base history.Identity, node string, dataBytes int, from, to uint64) history.Identity {
	t.Helper()
	size := func(id history.Identity, s uint64) int {
		b, err := ledgerlog.Encode(ledgerlog.Record{Seq: s, Writer: id, Op: int(s), At: t0, Data: ledgerlog.EntryData(id.Incarnation, s, dataBytes)})
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	for i := 0; i < 100000; i++ {
		id := identity(fmt.Sprintf("b%d", i), node)
		id.PodUID = base.PodUID[:len(base.PodUID)-1] + "x" // another pod, a UID as long
		same := true
		for s := from; s <= to && same; s++ {
			same = size(id, s) == size(base, s)
		}
		if same {
			return id
		}
	}
	t.Fatal("no incarnation found whose records are as long as the first writer's")
	return history.Identity{}
}
