package checker

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/fixtures/ledgerlog"
)

// LogRead is the ledger's log as one read found it.
type LogRead struct {
	// At is when the read began.
	At time.Time
	// Done is when the read returned; zero when not known (taken as At).
	Done time.Time
	Data []byte
}

// PrefixBreak is a whole record an earlier read of the log found that a
// later read does not hold at the same offset: the later log is no
// extension of the earlier one.
type PrefixBreak struct {
	Earlier, Later time.Time
	// Was is the record the earlier read found.
	Was ledgerlog.Entry
	// Now is the whole record the later read holds at Was's offset, nil
	// when none begins there (the log ends before it, or the bytes there
	// hold no whole record).
	Now *ledgerlog.Entry
}

func (b PrefixBreak) String() string {
	now := "no whole record there"
	if b.Now != nil {
		now = entryString(*b.Now)
	}
	return fmt.Sprintf("the read at %s found %s; the read at %s holds %s", stamp(b.Earlier), entryString(b.Was), stamp(b.Later), now)
}

func entryString(e ledgerlog.Entry) string {
	return fmt.Sprintf("sequence %d at offset %d by %s (append %d)", e.Record.Seq, e.Offset, e.Record.Writer, e.Record.Op)
}

// Prefixes is what CheckLogPrefixes found.
type Prefixes struct {
	Reads int `json:"reads"`
	// Writers is how many writers' records the reads held in all.
	Writers int `json:"writers"`
	// Break is the first record a later read lost or replaced (nil when
	// every read extends the one before).
	Break *PrefixBreak `json:"break,omitempty"`
	// Retries counts the records a later read held replaced by their own
	// writer's record of the same sequence at the same offset: the
	// writer's designed retry of an append whose outcome it did not learn
	// (fixtures/ledgerlog: after fail or unknown the next append writes
	// the same sequence at the same offset), which one copy makes.
	Retries int `json:"retries,omitempty"`
	// Compared counts the pairs of reads compared: a read and one that
	// had returned before it began. Zero when every read overlapped in
	// time every read begun before it: nothing was compared.
	Compared int `json:"compared"`
	// Overlapped counts the reads that began while a read begun before
	// them was still running, and so were not compared with it.
	Overlapped int `json:"overlapped,omitempty"`
	// Grew is the first two reads compared (the earlier returned before
	// the later began) between which the log grew
	// (the later holds a whole record the earlier did not) and whose
	// later read holds records of two or more writers: a comparison that
	// could show one copy's records replaced by another's. Nil when no
	// two compared reads did (one final log read again and again
	// compares nothing).
	Grew *LogGrowth `json:"grew,omitempty"`
}

// LogGrowth is two compared reads of the log, the later grown, and how
// many writers' records the later holds.
type LogGrowth struct {
	Earlier, Later time.Time
	Writers        int
}

// CheckLogPrefixes checks that reads of one ledger log, in the order
// given (the order they began), are prefixes of one log: every whole
// record a read found is, at the same offset and unchanged, in every later
// read. A read is compared with the reads that had returned before it
// began (Done): the latest begun of them, and any begun earlier that
// returned after that one began (a slow read, which may hold records the
// quick one did not); the others it is compared with through these.
// Reads that overlapped in time are in no known order (a slow read may
// have read the log after a quick one begun later) and are not compared
// with each other. A log one writer appends to only grows, so its reads are; a second
// copy that appends from an offset it kept in memory overwrites records a
// read already saw, and the storage shows two histories. A torn last
// record is not a record and is not compared; a record its own writer
// wrote again (the same incarnation, the same sequence, a later append
// number, at the same offset) is the writer's designed retry of an append
// whose outcome it did not learn, counted in Retries and no break.
// Records are compared by writer incarnation, append number and
// sequence, which the checksum binds to the bytes. Grew says whether two
// compared reads compared anything a second copy could have changed.
func CheckLogPrefixes(reads []LogRead) Prefixes {
	r := Prefixes{Reads: len(reads)}
	writers := map[string]bool{}
	var before []scannedRead
	retries := map[retryKey]bool{}
	for _, read := range reads {
		c := ledgerlog.Scan(read.Data)
		at := map[int64]*ledgerlog.Entry{}
		here := map[string]bool{}
		for j := range c.Entries {
			e := &c.Entries[j]
			at[e.Offset] = e
			writers[e.Record.Writer.Incarnation] = true
			here[e.Record.Writer.Incarnation] = true
		}
		for _, p := range before {
			if p.done.After(read.At) {
				r.Overlapped++
				break
			}
		}
		for _, prev := range latestBefore(before, read.At) {
			r.Compared++
			if r.Grew == nil && len(here) >= 2 && grew(prev.entries, c.Entries) {
				r.Grew = &LogGrowth{Earlier: prev.at, Later: read.At, Writers: len(here)}
			}
			if r.Break != nil {
				continue
			}
			for _, was := range prev.entries {
				now := at[was.Offset]
				if now != nil && sameRecord(now.Record, was.Record) {
					continue
				}
				if now != nil && retried(was.Record, now.Record) {
					// One retry may show in the comparisons with two
					// earlier reads: it is counted once.
					k := retryKey{offset: now.Offset, writer: now.Record.Writer.Incarnation, seq: now.Record.Seq, op: now.Record.Op}
					if !retries[k] {
						retries[k] = true
						r.Retries++
					}
					continue
				}
				r.Break = &PrefixBreak{Earlier: prev.at, Later: read.At, Was: was, Now: now}
				break
			}
		}
		done := read.Done
		if done.IsZero() {
			done = read.At
		}
		before = append(before, scannedRead{entries: c.Entries, at: read.At, done: done})
	}
	r.Writers = len(writers)
	return r
}

// retryKey is a writer's retry record, found in place of a record of
// its own an earlier read held.
type retryKey struct {
	offset int64
	writer string
	seq    uint64
	op     int
}

// scannedRead is one read's whole records and when it began and returned.
type scannedRead struct {
	entries  []ledgerlog.Entry
	at, done time.Time
}

// latestBefore is the reads a read begun at t is compared with: of those
// that had returned by t (each was read before t, so every record it held
// must still be there), the ones no other of them followed (returned
// before the other began). The latest begun is one; a slower one begun
// earlier that returned after the latest began is another, and may hold
// records the latest did not. Every read that had returned by t is one of
// these or followed by one of them, and is so compared through it: being
// a prefix is transitive.
func latestBefore(reads []scannedRead, t time.Time) []scannedRead {
	var latest time.Time
	found := false
	for _, p := range reads {
		if !p.done.After(t) && (!found || p.at.After(latest)) {
			latest, found = p.at, true
		}
	}
	var out []scannedRead
	for _, p := range reads {
		if !p.done.After(t) && (p.at.Equal(latest) || p.done.After(latest)) {
			out = append(out, p)
		}
	}
	return out
}

// grew says whether the later read holds a whole record the earlier did
// not hold at the same offset.
func grew(earlier, later []ledgerlog.Entry) bool {
	was := map[int64]ledgerlog.Record{}
	for _, e := range earlier {
		was[e.Offset] = e.Record
	}
	for _, e := range later {
		if r, ok := was[e.Offset]; !ok || !sameRecord(r, e.Record) {
			return true
		}
	}
	return false
}

// retried says whether now is was's writer's retry of it: the same
// incarnation (one process) writing the same sequence again under a later
// append number, at the offset it kept for it. A writer does that only
// after an append whose outcome was fail or unknown, and a second copy
// never has the same incarnation.
func retried(was, now ledgerlog.Record) bool {
	return was.Writer.Incarnation == now.Writer.Incarnation && was.Seq == now.Seq && now.Op > was.Op
}

func sameRecord(a, b ledgerlog.Record) bool {
	return a.Writer.Incarnation == b.Writer.Incarnation && a.Op == b.Op && a.Seq == b.Seq
}
