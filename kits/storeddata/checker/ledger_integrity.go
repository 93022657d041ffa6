package checker

import (
	"fmt"
	"strings"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/ledgerlog"
)

// Kinds of a break in a ledger's sequence.
const (
	// BreakStart: the first record's sequence is not 1.
	BreakStart = "start"
	// BreakGap: a record's sequence is more than one past the one before
	// it: entries between are missing.
	BreakGap = "gap"
	// BreakRepeat: a record has the sequence of the one before it.
	BreakRepeat = "repeat"
	// BreakBackwards: a record's sequence is below the one before it.
	BreakBackwards = "backwards"
)

// SequenceBreak is a place in a log where the sequence does not go on by
// one: between two whole records next to each other in file order
// (damage between them does not count as a record).
type SequenceBreak struct {
	Kind string `json:"kind"`
	// Prev is the record before (absent for BreakStart), Next the one that
	// breaks the sequence.
	Prev *ledgerlog.Entry `json:"prev,omitempty"`
	Next ledgerlog.Entry  `json:"next"`
}

func (b SequenceBreak) String() string {
	if b.Prev == nil {
		return fmt.Sprintf("the log starts at sequence %d (at offset 0 of %s), not 1", b.Next.Record.Seq, b.Next.Record.Writer)
	}
	return fmt.Sprintf("%s: sequence %d at offset %d (%s) follows %d at offset %d (%s)",
		b.Kind, b.Next.Record.Seq, b.Next.Offset, b.Next.Record.Writer, b.Prev.Record.Seq, b.Prev.Offset, b.Prev.Record.Writer)
}

// WriterRun is a stretch of consecutive whole records by one writer, in
// file order.
type WriterRun struct {
	Writer  history.Identity `json:"writer"`
	FromSeq uint64           `json:"fromSeq"`
	ToSeq   uint64           `json:"toSeq"`
	Records int              `json:"records"`
	Offset  int64            `json:"offset"`
}

// Integrity is what CheckLedgerIntegrity found in one log on its own.
type Integrity struct {
	// Looked says what was checked.
	Looked LogLooked `json:"looked"`
	// Damage is every run of bytes holding no whole record, except a torn
	// tail.
	Damage []ledgerlog.Damage `json:"damage,omitempty"`
	// TornTail is the last append cut off at the end of the log (or zeros
	// there), which any crash in the middle of an append leaves and the
	// writer's next start cuts: reported, and not a failure.
	TornTail *ledgerlog.Damage `json:"tornTail,omitempty"`
	// Breaks are the places the sequence does not go on by one.
	Breaks []SequenceBreak `json:"breaks,omitempty"`
	// Runs are the writers' stretches in file order.
	Runs []WriterRun `json:"runs,omitempty"`
}

// LogLooked is what a check read of a log.
type LogLooked struct {
	Bytes int64 `json:"bytes"`
	// SHA256 names the exact bytes checked.
	SHA256       string `json:"sha256"`
	Records      int    `json:"records"`
	DamagedBytes int64  `json:"damagedBytes"`
	FirstSeq     uint64 `json:"firstSeq,omitempty"`
	LastSeq      uint64 `json:"lastSeq,omitempty"`
}

func (l LogLooked) String() string {
	s := fmt.Sprintf("a log of %d bytes (sha256 %s), %d whole record(s)", l.Bytes, shortHash(l.SHA256), l.Records)
	if l.Records > 0 {
		s += fmt.Sprintf(" from sequence %d to %d in file order", l.FirstSeq, l.LastSeq)
	}
	if l.DamagedBytes > 0 {
		s += fmt.Sprintf(", %d byte(s) holding no whole record", l.DamagedBytes)
	}
	return s
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// Clean reports whether the log checks clean: no damage but a torn tail,
// and a sequence from 1 going on by one.
func (r Integrity) Clean() bool { return len(r.Damage) == 0 && len(r.Breaks) == 0 }

// Problems lists, readably, why the log is not clean (empty when it is).
func (r Integrity) Problems() []string {
	var out []string
	for _, d := range r.Damage {
		out = append(out, describeDamage(d))
	}
	for _, b := range r.Breaks {
		out = append(out, b.String())
	}
	return out
}

// String says what was checked and what was found.
func (r Integrity) String() string {
	s := "checked " + r.Looked.String()
	if r.TornTail != nil {
		s += fmt.Sprintf("; a torn last append of %d byte(s) at offset %d", r.TornTail.Size, r.TornTail.Offset)
	}
	if r.Clean() {
		return s + ": clean"
	}
	p := r.Problems()
	more := ""
	if len(p) > 3 {
		p, more = p[:3], fmt.Sprintf(" (%d problems in all)", len(r.Problems()))
	}
	return s + ": " + strings.Join(p, "; ") + more
}

func describeDamage(d ledgerlog.Damage) string {
	what := "damage"
	if d.Zero {
		what = "zeros"
	}
	return fmt.Sprintf("%s: %d byte(s) at offset %d hold no whole record (%s)", what, d.Size, d.Offset, d.Reason)
}

// CheckLedgerIntegrity checks one ledger log on its own, with no history:
// every byte is in a whole record (its checksum holding) or is a torn last
// append, and the sequence starts at 1 and goes on by one in file order.
// A clean log can still have lost acknowledged appends (a second copy's
// records over the first's, numbered alike): never judge on this alone;
// CheckLedger reads the histories too.
func CheckLedgerIntegrity(log []byte) Integrity {
	c := ledgerlog.Scan(log)
	r := Integrity{Looked: looked(c)}
	for i := range c.Damage {
		d := c.Damage[i]
		if d.Tail {
			r.TornTail = &d
			continue
		}
		r.Damage = append(r.Damage, d)
	}
	for i, e := range c.Entries {
		if i == 0 {
			if e.Record.Seq != 1 {
				r.Breaks = append(r.Breaks, SequenceBreak{Kind: BreakStart, Next: e})
			}
		} else {
			prev := c.Entries[i-1]
			kind := ""
			switch {
			case e.Record.Seq == prev.Record.Seq+1:
			case e.Record.Seq > prev.Record.Seq:
				kind = BreakGap
			case e.Record.Seq == prev.Record.Seq:
				kind = BreakRepeat
			default:
				kind = BreakBackwards
			}
			if kind != "" {
				r.Breaks = append(r.Breaks, SequenceBreak{Kind: kind, Prev: &prev, Next: e})
			}
		}
		if n := len(r.Runs); n > 0 && r.Runs[n-1].Writer == e.Record.Writer {
			r.Runs[n-1].ToSeq = e.Record.Seq
			r.Runs[n-1].Records++
			continue
		}
		r.Runs = append(r.Runs, WriterRun{Writer: e.Record.Writer, FromSeq: e.Record.Seq, ToSeq: e.Record.Seq, Records: 1, Offset: e.Offset})
	}
	return r
}

func looked(c ledgerlog.Contents) LogLooked {
	l := LogLooked{Bytes: c.Size, SHA256: c.SHA256, Records: len(c.Entries), DamagedBytes: c.DamagedBytes()}
	if len(c.Entries) > 0 {
		l.FirstSeq, l.LastSeq = c.Entries[0].Record.Seq, c.Entries[len(c.Entries)-1].Record.Seq
	}
	return l
}
