package checker

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/ledgerlog"
)

var (
	writerA = identity("a", "worker1")
	writerC = identity("c", "worker2")
)

// lostSeqs are the sequences of lost appends, by writer incarnation.
func lostSeqs(r Ledger) map[string][]uint64 {
	out := map[string][]uint64{}
	for _, l := range r.Lost {
		out[l.Writer.Incarnation] = append(out[l.Writer.Incarnation], l.Op.Seq)
	}
	return out
}

func clean(t *testing.T, r Ledger) {
	t.Helper()
	if len(r.Lost)+len(r.Unwritten)+len(r.Duplicated)+len(r.Reordered)+len(r.Forks) != 0 || r.Interleave != nil || r.Overlap != nil || r.Nobody() != 0 {
		t.Errorf("want nothing found: %s", r)
	}
}

func TestCheckLedger(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, b *bench) (log []byte, o LedgerOptions)
		check func(t *testing.T, r Ledger, in Integrity)
	}{
		{
			name: "clean single writer",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				b.start(writerA, 16).append(10)
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				clean(t, r)
				if r.Looked.OK != 10 || r.Looked.Required != 10 || r.Looked.Log.Records != 10 || r.Looked.Writers != 1 {
					t.Errorf("looked at %+v", r.Looked)
				}
				if !in.Clean() || len(in.Runs) != 1 || in.TornTail != nil {
					t.Errorf("integrity: %s", in)
				}
				if !strings.Contains(r.String(), "every acknowledged append is there") || !strings.Contains(r.String(), "10 whole record(s)") {
					t.Errorf("summary: %s", r)
				}
			},
		},
		{
			name: "one writer at a time: a restart on another node",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				b.start(writerA, 16).append(5)
				b.start(writerC, 40).append(5)
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				clean(t, r)
				if !in.Clean() || len(in.Runs) != 2 || in.Runs[1].FromSeq != 6 || in.Runs[1].Writer != writerC {
					t.Errorf("integrity: %s, runs %+v", in, in.Runs)
				}
			},
		},
		{
			name: "two writers from one offset, one after the other, records of other lengths",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				c := b.start(writerC, 40) // starts at sequence 4 while a runs on
				a.append(3)
				c.append(3)
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				lost := lostSeqs(r)
				if len(lost[writerC.Incarnation]) != 0 || !slices.Contains(lost[writerA.Incarnation], 4) {
					t.Errorf("lost %v, want the first writer's 4 and none of the second's: %s", lost, r)
				}
				for _, s := range lost[writerA.Incarnation] {
					if s < 4 {
						t.Errorf("lost the first writer's %d, written before the second started", s)
					}
				}
				if len(r.Forks) != 3 || r.Forks[0].Seq != 4 || r.Forks[0].A.Writer != writerA || r.Forks[0].B.Writer != writerC {
					t.Errorf("forks %+v", r.Forks)
				}
				if r.Overlap != nil {
					t.Errorf("no append of one came between two of the other, yet: %s", r.Overlap)
				}
			},
		},
		{
			name: "two writers overwrite each other record for record: the log checks clean and lost three",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				c := b.start(sameLengths(t, writerA, "worker2", 16, 4, 6), 16)
				a.append(3)
				c.append(3)
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if !in.Clean() {
					t.Fatalf("the log should check clean on its own: %s", in)
				}
				if got := lostSeqs(r)[writerA.Incarnation]; !slices.Equal(got, []uint64{4, 5, 6}) || len(r.Lost) != 3 {
					t.Fatalf("lost %v, want the first writer's 4, 5, 6: %s", lostSeqs(r), r)
				}
				if !strings.Contains(r.Lost[0].Now, "the record of sequence 4") || !strings.Contains(r.Lost[0].Now, "worker2") {
					t.Errorf("what is there now: %s", r.Lost[0].Now)
				}
				if r.Nobody() != 0 || len(r.Forks) != 3 {
					t.Errorf("nobody %d, forks %d: %s", r.Nobody(), len(r.Forks), r)
				}
			},
		},
		{
			name: "two writers at once: acknowledged appends alternate",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				c := b.start(sameLengths(t, writerA, "worker2", 16, 4, 6), 16)
				for i := 0; i < 3; i++ {
					a.append(1)
					c.append(1)
				}
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				o := r.Overlap
				if o == nil {
					t.Fatalf("no overlap found: %s", r)
				}
				if o.Holder != writerA || o.Before.Seq != 4 || o.After.Seq != 5 || o.Between.Seq != 4 || o.Other.Node != "worker2" {
					t.Errorf("overlap %s, want the second writer's 4 between the first's 4 and 5", o)
				}
				if !o.At().Equal(o.Between.Invoke) || !o.Between.Invoke.After(o.Before.Return) || !o.Between.Return.Before(o.After.Invoke) {
					t.Errorf("the overlap's moment is not proven: %s", o)
				}
				if got := lostSeqs(r)[writerA.Incarnation]; !slices.Equal(got, []uint64{4, 5, 6}) {
					t.Errorf("lost %v", lostSeqs(r))
				}
			},
		},
		{
			name: "writers interleaved in the file",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				c := b.start(sameLengths(t, writerA, "worker2", 16, 4, 4), 16)
				a.append(2) // 4, 5
				c.append(1) // 4, over the first writer's 4
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				il := r.Interleave
				if il == nil {
					t.Fatalf("no interleave: %s", r)
				}
				if il.Earlier.Entry.Record.Seq != 3 || il.Other.Entry.Record.Seq != 4 || il.Other.Entry.Record.Writer.Node != "worker2" || il.Resumed.Entry.Record.Seq != 5 || il.Resumed.Entry.Record.Writer != writerA {
					t.Errorf("interleave %s, want the first writer's 5 after the second's 4 after the first's 3", il)
				}
				if il.Other.Append == nil || il.Resumed.Append == nil || il.Resumed.Append.Op.Return.IsZero() {
					t.Errorf("the interleave's records carry no times from their histories: %+v", il)
				}
				if len(r.Reordered) != 0 || !slices.Equal(lostSeqs(r)[writerA.Incarnation], []uint64{4}) {
					t.Errorf("reordered %v, lost %v", r.Reordered, lostSeqs(r))
				}
			},
		},
		{
			name: "torn last record, its append unknown",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				a.tear(20) // and the writer dies
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Unknown) != 1 || !r.Unknown[0].Torn || r.Unknown[0].Present {
					t.Fatalf("unknown %+v", r.Unknown)
				}
				if len(r.Damage) != 1 || r.Damage[0].TornAppend == nil || r.Damage[0].Size != 20 {
					t.Errorf("damage %+v", r.Damage)
				}
				clean(t, r)
				if !in.Clean() || in.TornTail == nil || in.TornTail.Size != 20 {
					t.Errorf("integrity: %s", in)
				}
			},
		},
		{
			name: "torn last record, its append never completed",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				b.store.Refuse = func(_, value string) bool { return strings.Contains(value, `"outcome"`) }
				a.tear(11)
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if r.Looked.Unknown != 1 || len(r.Unknown) != 1 || r.Unknown[0].Op.Outcome != "" || !r.Unknown[0].Torn {
					t.Fatalf("unknown %+v, looked %+v", r.Unknown, r.Looked)
				}
				clean(t, r)
			},
		},
		{
			name: "a zero tail where an unknown append wrote: the file grew, its bytes never reached the disk",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				op := a.unsynced() // the write landed in the cache, fsync failed; the writer dies
				log := b.bytes()
				// What a crash leaves when the file's size reached the disk
				// and its last page did not: zeros where the record was.
				clear(log[op.Offset:])
				return log, LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Unknown) != 1 || !r.Unknown[0].Torn || r.Unknown[0].Present {
					t.Fatalf("unknown %+v, want the append torn (its zeros are the tail)", r.Unknown)
				}
				if len(r.Damage) != 1 || r.Damage[0].TornAppend == nil || !r.Damage[0].Zero {
					t.Errorf("damage %+v, want the zero tail tied to the unknown append", r.Damage)
				}
				clean(t, r)
				if !in.Clean() || in.TornTail == nil || !in.TornTail.Zero {
					t.Errorf("integrity: %s", in)
				}
			},
		},
		{
			name: "a zero tail longer than the unknown append's record is still nobody's",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				op := a.unsynced()
				log := b.bytes()
				clear(log[op.Offset:])
				return append(log, make([]byte, 4096)...), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Unknown) != 1 || r.Unknown[0].Torn || r.Nobody() != 1 {
					t.Errorf("unknown %+v, nobody %d: zeros past the record's end are no part of it", r.Unknown, r.Nobody())
				}
			},
		},
		{
			name: "unknown outcome present",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				a.unsynced() // written, fsync failed; the writer dies
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Unknown) != 1 || !r.Unknown[0].Present || r.Unknown[0].Torn || r.Unknown[0].Op.Seq != 4 {
					t.Fatalf("unknown %+v", r.Unknown)
				}
				clean(t, r)
				if !strings.Contains(r.String(), "1 present") {
					t.Errorf("summary: %s", r)
				}
			},
		},
		{
			name: "unknown outcome absent: the retry wrote over it",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(3)
				a.unsynced()
				a.append(2) // sequence 4 again, at the same offset, then 5
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Unknown) != 1 || r.Unknown[0].Present || r.Unknown[0].Torn {
					t.Fatalf("unknown %+v", r.Unknown)
				}
				clean(t, r)
				if !in.Clean() || in.Looked.LastSeq != 5 {
					t.Errorf("integrity: %s", in)
				}
			},
		},
		{
			name: "records nobody's history has",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				b.start(writerA, 16).append(3)
				other := newBench(t)
				other.path = b.path // same volume, its history elsewhere
				other.start(writerC, 16).append(2)
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Unwritten) != 2 || !strings.Contains(r.Unwritten[0].Why, "no history has its writer") || r.Nobody() != 2 {
					t.Fatalf("unwritten %+v", r.Unwritten)
				}
				if len(r.Lost) != 0 {
					t.Errorf("lost %v", lostSeqs(r))
				}
			},
		},
		{
			name: "a checksum that fails mid-log",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				ops := b.start(writerA, 16).append(5)
				log := b.bytes()
				log[ops[2].Offset+20] ^= 0x01
				return log, LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Damage) != 1 || r.Damage[0].TornAppend != nil || !strings.Contains(r.Damage[0].Reason, "checksum") || r.Nobody() != 1 {
					t.Errorf("damage %+v", r.Damage)
				}
				if !slices.Equal(lostSeqs(r)[writerA.Incarnation], []uint64{3}) || !strings.Contains(r.Lost[0].Now, "checksum mismatch") {
					t.Errorf("lost %+v", r.Lost)
				}
				if in.Clean() || len(in.Damage) != 1 || len(in.Breaks) != 1 || in.Breaks[0].Kind != BreakGap {
					t.Errorf("integrity: %s", in)
				}
			},
		},
		{
			name: "a record duplicated",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				ops := b.start(writerA, 16).append(3)
				log := b.bytes()
				return append(log, log[ops[1].Offset:ops[1].Offset+int64(ops[1].Size)]...), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Duplicated) != 1 || r.Duplicated[0].Op != 2 || len(r.Duplicated[0].Offsets) != 2 {
					t.Fatalf("duplicated %+v", r.Duplicated)
				}
				if len(r.Unwritten) != 1 || !strings.Contains(r.Unwritten[0].Why, "not here") {
					t.Errorf("unwritten %+v", r.Unwritten)
				}
				if len(r.Reordered) != 1 || r.Reordered[0].After.Entry.Record.Seq != 2 {
					t.Errorf("reordered %+v", r.Reordered)
				}
				if len(in.Breaks) != 1 || in.Breaks[0].Kind != BreakBackwards {
					t.Errorf("integrity: %s", in)
				}
			},
		},
		{
			name: "an append recorded as failed whose record is there",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				b.start(writerA, 16).append(3)
				key := history.OpKey(prefix, writerA.Incarnation, 2)
				b.store.KV[key] = strings.Replace(b.store.KV[key], `"outcome":"ok"`, `"outcome":"fail"`, 1)
				return b.bytes(), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Unwritten) != 1 || !strings.Contains(r.Unwritten[0].Why, "failed having written nothing") {
					t.Errorf("unwritten %+v", r.Unwritten)
				}
			},
		},
		{
			name: "block views spliced at a page: the later page from a writer behind",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				// Each node's mount has its own page cache: the first writer's
				// view and a second view copied from it after 3 records, where
				// the second writer appends longer records. The first pages
				// reach the disk from the first node, the rest from the second.
				a := b.start(writerA, 16)
				a.append(3)
				view := b.path + ".node2"
				copyFile(t, b.path, view)
				a.append(17)
				b.startOn(view, writerC, 400).append(8)
				first, second := b.bytes(), readFile(t, view)
				const page = 4096
				if len(first) <= page || len(second) <= page+1000 {
					t.Fatalf("views of %d and %d bytes do not reach past a page", len(first), len(second))
				}
				return append(first[:page:page], second[page:]...), LedgerOptions{}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				if len(r.Reordered) == 0 {
					t.Fatalf("no reorder: %s", r)
				}
				ro := r.Reordered[0]
				if ro.Before.Entry.Record.Writer != writerA || ro.After.Entry.Record.Writer != writerC || ro.After.Entry.Record.Seq >= ro.Before.Entry.Record.Seq {
					t.Errorf("reorder %s", ro)
				}
				if len(r.Lost) == 0 || len(r.Forks) == 0 || in.Clean() {
					t.Errorf("lost %d forks %d integrity %s", len(r.Lost), len(r.Forks), in)
				}
			},
		},
		{
			name: "appends acknowledged after the log was read need not be in it",
			build: func(t *testing.T, b *bench) ([]byte, LedgerOptions) {
				a := b.start(writerA, 16)
				a.append(4)
				log := b.bytes()
				readAt := b.clock()
				a.append(2)
				return log, LedgerOptions{AckedBefore: readAt}
			},
			check: func(t *testing.T, r Ledger, in Integrity) {
				clean(t, r)
				if r.Looked.Required != 4 || r.Looked.OK != 6 || !strings.Contains(r.Looked.String(), "4 acknowledged at or before") {
					t.Errorf("looked %s", r.Looked)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t)
			log, o := tc.build(t, b)
			r := CheckLedger(log, b.histories(), o)
			in := CheckLedgerIntegrity(log)
			if r.Looked.Log != in.Looked {
				t.Errorf("the two checks looked at different logs: %+v and %+v", r.Looked.Log, in.Looked)
			}
			tc.check(t, r, in)
			if t.Failed() {
				t.Logf("ledger: %s", r)
				t.Logf("integrity: %s", in)
			}
		})
	}
}

func TestCheckLedgerWithoutTheHistoryAppendIsLostNowhere(t *testing.T) {
	// The same log checked against the first writer's history only: its
	// lost appends are still lost, and the other writer's records are
	// nobody's.
	b := newBench(t)
	a := b.start(writerA, 16)
	a.append(3)
	c := b.start(sameLengths(t, writerA, "worker2", 16, 4, 6), 16)
	a.append(3)
	c.append(3)
	var onlyA []ledgerlog.History
	for _, h := range b.histories() {
		if h.Start.Writer == writerA {
			onlyA = append(onlyA, h)
		}
	}
	r := CheckLedger(b.bytes(), onlyA, LedgerOptions{})
	if len(r.Lost) != 3 || len(r.Unwritten) != 3 || r.Looked.Writers != 1 {
		t.Errorf("%s", r)
	}
}

func TestCheckLedgerIntegrityOfNothing(t *testing.T) {
	in := CheckLedgerIntegrity(nil)
	if !in.Clean() || in.Looked.Records != 0 || !strings.Contains(in.String(), "0 whole record(s)") {
		t.Errorf("%s", in)
	}
	in = CheckLedgerIntegrity([]byte("not a ledger at all"))
	if in.Clean() || len(in.Damage) != 1 {
		t.Errorf("%s", in)
	}
}

func TestCheckLedgerIntegrityLogStartingLate(t *testing.T) {
	b := newBench(t)
	ops := b.start(writerA, 16).append(4)
	in := CheckLedgerIntegrity(b.bytes()[ops[1].Offset:])
	if in.Clean() || len(in.Breaks) != 1 || in.Breaks[0].Kind != BreakStart || !strings.Contains(in.String(), "starts at sequence 2") {
		t.Errorf("%s", in)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, readFile(t, from), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckWriters(t *testing.T) {
	t.Run("one at a time", func(t *testing.T) {
		b := newBench(t)
		b.start(writerA, 16).append(4)
		b.start(writerC, 16).append(4)
		w := CheckWriters(b.histories())
		if w.Overlap != nil || w.Possible != nil || len(w.Forks) != 0 || w.Looked.Acknowledging != 2 || w.Looked.OK != 8 || !w.Apart {
			t.Errorf("%+v", w)
		}
	})
	t.Run("alternating: an overlap, not apart", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(3)
		c := b.start(writerC, 40)
		for range 2 {
			a.append(1)
			c.append(1)
		}
		if w := CheckWriters(b.histories()); w.Overlap == nil || w.Apart {
			t.Errorf("%+v", w)
		}
	})
	t.Run("an unknown append between two acknowledged ones of another", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(3)
		c := b.start(writerC, 16)
		a.append(1)
		torn := c.tear(9)
		a.append(1)
		w := CheckWriters(b.histories())
		if w.Overlap != nil {
			t.Fatalf("an unknown append proves nothing: %s", w.Overlap)
		}
		p := w.Possible
		if p == nil || p.Holder != writerA || p.Between.N != torn.N || p.Other != writerC || p.Before.Seq != 4 || p.After.Seq != 5 {
			t.Fatalf("possible %+v", p)
		}
		if !strings.Contains(p.String(), "its outcome unknown") || w.Looked.Acknowledging != 1 {
			t.Errorf("%s; looked %s", p, w.Looked)
		}
	})
}
