package checker

import (
	"strings"
	"testing"
	"time"
)

func TestCheckLogPrefixes(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

	t.Run("one writer: every read extends the one before", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		var reads []LogRead
		for i := range 3 {
			a.append(4)
			reads = append(reads, LogRead{At: at(i), Data: b.bytes()})
		}
		a.tear(10) // a torn last record is not compared
		reads = append(reads, LogRead{At: at(3), Data: b.bytes()})
		a.append(1) // the next append writes over the torn one
		reads = append(reads, LogRead{At: at(4), Data: b.bytes()})
		r := CheckLogPrefixes(reads)
		if r.Break != nil || r.Reads != 5 || r.Writers != 1 {
			t.Errorf("got %+v, want no break over 5 reads of 1 writer", r)
		}
	})

	t.Run("the writer's retry of an unknown append: the same sequence again at its offset", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(3)
		a.unsynced() // sequence 4 written, fsync failed: unknown
		seen := b.bytes()
		a.append(2) // the retry writes sequence 4 at the same offset as append 5, then 5
		r := CheckLogPrefixes([]LogRead{{At: at(0), Data: seen}, {At: at(1), Data: b.bytes()}})
		if r.Break != nil || r.Retries != 1 {
			t.Errorf("got %+v, want no break and the retry counted: one writer rewrote its own sequence by design", r)
		}
	})

	t.Run("another incarnation's record of the same sequence at that offset is a break", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(3)
		c := b.start(sameLengths(t, writerA, "worker2", 16, 4, 4), 16)
		a.append(1)
		seen := b.bytes()
		c.append(1) // its sequence 4 over a's
		r := CheckLogPrefixes([]LogRead{{At: at(0), Data: seen}, {At: at(1), Data: b.bytes()}})
		if r.Break == nil || r.Retries != 0 {
			t.Errorf("got %+v, want a break", r)
		}
	})

	t.Run("a restart that appends after the last record", func(t *testing.T) {
		b := newBench(t)
		b.start(writerA, 16).append(5)
		first := b.bytes()
		b.start(writerC, 40).append(5)
		r := CheckLogPrefixes([]LogRead{{At: at(0), Data: first}, {At: at(1), Data: b.bytes()}})
		if r.Break != nil || r.Writers != 2 {
			t.Errorf("got %+v, want no break and 2 writers", r)
		}
		if r.Grew == nil || !r.Grew.Earlier.Equal(at(0)) || !r.Grew.Later.Equal(at(1)) || r.Grew.Writers != 2 {
			t.Errorf("grew %+v, want the two reads, the later of 2 writers", r.Grew)
		}
	})

	t.Run("one final log read again and again compares nothing", func(t *testing.T) {
		b := newBench(t)
		b.start(writerA, 16).append(5)
		b.start(writerC, 40).append(5)
		final := b.bytes()
		r := CheckLogPrefixes([]LogRead{{At: at(0), Data: final}, {At: at(1), Data: final}, {At: at(2), Data: final}})
		if r.Break != nil || r.Writers != 2 || r.Grew != nil {
			t.Errorf("got %+v, want no break, 2 writers, and no growth between reads", r)
		}
	})

	t.Run("a second copy writes over records a read saw", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(3)
		c := b.start(writerC, 40) // its offset is past sequence 3
		a.append(3)
		seen := b.bytes() // holds a's sequences 4-6
		c.append(1)       // c's sequence 4 over a's
		r := CheckLogPrefixes([]LogRead{{At: at(0), Data: seen}, {At: at(1), Data: b.bytes()}})
		if r.Break == nil {
			t.Fatalf("no break found: %+v", r)
		}
		if r.Break.Was.Record.Writer != writerA || r.Break.Was.Record.Seq != 4 || r.Break.Now == nil || r.Break.Now.Record.Writer != writerC {
			t.Errorf("break %s, want a's sequence 4 replaced by c's", r.Break)
		}
		if s := r.Break.String(); !strings.Contains(s, "sequence 4") || !strings.Contains(s, "read at") {
			t.Errorf("break reads %q", s)
		}
	})

	t.Run("a log that shrank", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(2)
		short := b.bytes()
		a.append(2)
		r := CheckLogPrefixes([]LogRead{{At: at(0), Data: b.bytes()}, {At: at(1), Data: short}})
		if r.Break == nil || r.Break.Now != nil || r.Break.Was.Record.Seq != 3 {
			t.Errorf("got %+v, want sequence 3 gone with nothing in its place", r.Break)
		}
	})

	t.Run("two reads that overlapped in time are not ordered", func(t *testing.T) {
		// The first read began first but returned after the second (its
		// copy may have been made after the second's): a shorter second
		// read proves nothing lost. A third read that began after both
		// returned is compared with the later-begun one.
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(2)
		short := b.bytes()
		a.append(2)
		long := b.bytes()
		a.append(1)
		r := CheckLogPrefixes([]LogRead{
			{At: at(0), Done: at(3), Data: long},
			{At: at(1), Done: at(2), Data: short},
			{At: at(4), Done: at(5), Data: b.bytes()},
		})
		if r.Break != nil {
			t.Errorf("got break %s, want none: the first two reads overlapped", r.Break)
		}
		// Reads that did not overlap still break.
		r = CheckLogPrefixes([]LogRead{{At: at(0), Done: at(1), Data: long}, {At: at(1), Done: at(2), Data: short}})
		if r.Break == nil || r.Break.Was.Record.Seq != 3 {
			t.Errorf("got %+v, want sequence 3 gone", r.Break)
		}
	})

	t.Run("a slow read that returned before a later one began is compared with it", func(t *testing.T) {
		// The second read began early and returned late, holding records
		// the third (quick, begun later, returned first) had not seen;
		// the fourth began after all had returned and lost one of them.
		// It is compared with the third, the latest begun before it, and
		// with the second, which had returned before it began too.
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(3)
		c := b.start(writerC, 40) // its offset is past sequence 3
		short := b.bytes()
		a.append(3)
		seen := b.bytes() // holds a's sequences 4-6
		c.append(1)       // c's sequence 4 over a's
		r := CheckLogPrefixes([]LogRead{
			{At: at(0), Done: at(1), Data: short},
			{At: at(1), Done: at(10), Data: seen},
			{At: at(2), Done: at(3), Data: short},
			{At: at(11), Done: at(12), Data: b.bytes()},
		})
		if r.Break == nil || r.Break.Was.Record.Writer != writerA || r.Break.Was.Record.Seq != 4 || !r.Break.Earlier.Equal(at(1)) || !r.Break.Later.Equal(at(11)) {
			t.Errorf("got break %v, want a's sequence 4, which the read begun at 1 s held, replaced in the read at 11 s", r.Break)
		}
	})

	t.Run("a retry seen from two earlier reads is one retry", func(t *testing.T) {
		b := newBench(t)
		a := b.start(writerA, 16)
		a.append(3)
		a.unsynced()
		seen := b.bytes()
		a.append(2)
		r := CheckLogPrefixes([]LogRead{
			{At: at(0), Done: at(3), Data: seen},
			{At: at(1), Done: at(2), Data: seen},
			{At: at(4), Done: at(5), Data: b.bytes()},
		})
		if r.Break != nil || r.Retries != 1 || r.Compared != 2 || r.Overlapped != 1 {
			t.Errorf("got %+v, want no break, 1 retry, 2 comparisons (the last read with both) and 1 read overlapped", r)
		}
	})

	if r := CheckLogPrefixes(nil); r.Break != nil || r.Reads != 0 {
		t.Errorf("no reads: %+v", r)
	}
}
