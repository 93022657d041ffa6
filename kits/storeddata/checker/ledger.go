// Package checker checks what a data workload left against what its
// clients recorded: the ledger's final log against its writers' histories
// (CheckLedger), and a ledger log on its own (CheckLedgerIntegrity); the
// embedded database's final content against its histories (CheckKV), and
// its file on its own (CheckDatabaseIntegrity); a block volume's file
// system (CheckFilesystemImage, which runs e2fsck on the image; every
// other check is a pure function of the bytes and histories it is given).
// Each says what it looked at, so a verdict built on it can name its
// evidence.
//
// The workloads' formats and histories are their own (fixtures/ledgerlog,
// fixtures/kvdb); the checks decode them with their code.
package checker

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/ledgerlog"
)

// Append is one writer's append as its history has it.
type Append struct {
	Writer history.Identity `json:"writer"`
	Op     ledgerlog.Op     `json:"op"`
}

func (a Append) String() string {
	s := fmt.Sprintf("append %d (sequence %d at offset %d) by %s, invoked %s", a.Op.N, a.Op.Seq, a.Op.Offset, a.Writer, stamp(a.Op.Invoke))
	if a.Op.Outcome != "" {
		s += fmt.Sprintf(", %s at %s", a.Op.Outcome, stamp(a.Op.Return))
	} else {
		s += ", never completed"
	}
	return s
}

// Placed is a whole record of the final log and, when a history has it,
// the append that wrote it.
type Placed struct {
	Entry  ledgerlog.Entry `json:"entry"`
	Append *Append         `json:"append,omitempty"`
}

func (p Placed) String() string {
	s := fmt.Sprintf("sequence %d at offset %d by %s, made %s", p.Entry.Record.Seq, p.Entry.Offset, p.Entry.Record.Writer, stamp(p.Entry.Record.At))
	if p.Append != nil && p.Append.Op.Outcome != "" {
		s += fmt.Sprintf(" (append %d, %s at %s)", p.Append.Op.N, p.Append.Op.Outcome, stamp(p.Append.Op.Return))
	}
	return s
}

// LostAppend is an acknowledged append whose record is not in the final
// log.
type LostAppend struct {
	Append
	// Now says what the log holds at the append's offset.
	Now string `json:"now"`
}

// Duplicate is one append's record found at more than one offset.
type Duplicate struct {
	Writer  history.Identity `json:"writer"`
	Op      int              `json:"op"`
	Seq     uint64           `json:"seq"`
	Offsets []int64          `json:"offsets"`
}

// Reorder is a whole record whose sequence is not above the one before it
// in file order.
type Reorder struct {
	Before Placed `json:"before"`
	After  Placed `json:"after"`
}

func (r Reorder) String() string {
	return fmt.Sprintf("%s follows %s", r.After, r.Before)
}

// Interleave is the first place in file order where a writer's records
// resume after another writer's: in a log written by one writer at a time
// each writer's records are one stretch, since a writer starts after the
// last whole record it finds and writes nowhere before.
type Interleave struct {
	// Earlier is the resuming writer's last record before Other.
	Earlier Placed `json:"earlier"`
	// Other is the other writer's record just before Resumed.
	Other   Placed `json:"other"`
	Resumed Placed `json:"resumed"`
}

func (i Interleave) String() string {
	return fmt.Sprintf("%s follows %s, which follows that writer's own %s", i.Resumed, i.Other, i.Earlier)
}

// Unwritten is a whole record no append of any history wrote there.
type Unwritten struct {
	Placed
	Why string `json:"why"`
}

// Damaged is a run of bytes of the final log holding no whole record.
type Damaged struct {
	ledgerlog.Damage
	// TornAppend, for a torn tail, is the append of unknown outcome whose
	// record it is the start of, or whose record's place it fills with
	// zeros no longer than the record: its append took effect in part.
	TornAppend *Append `json:"tornAppend,omitempty"`
}

// Settled is an append of unknown outcome, settled against the final log.
type Settled struct {
	Append
	// Present: its record is in the log where it wrote it; the append
	// took effect. Otherwise it did not, or was overwritten.
	Present bool `json:"present"`
	// Torn: its record begins the log's torn tail, or the tail is zeros
	// from where it wrote, no longer than its record.
	Torn bool `json:"torn,omitempty"`
}

// Fork is a sequence two writers both acknowledged: each extended the log
// from a state that did not hold the other's record. It needs no clock;
// it does not say the two were alive at once (a storage that lost the
// first writer's records before the second started makes one too).
type Fork struct {
	Seq uint64 `json:"seq"`
	A   Append `json:"a"`
	B   Append `json:"b"`
}

// Overlap is an acknowledged append of one writer made wholly between two
// acknowledged appends of another: the other writer's process lived
// throughout (one incarnation is one process) holding its offset in
// memory, so two writers had their appends accepted at once. The times are
// each writer's own clock: one clock on one kernel, the nodes' clocks
// elsewhere; it proves nothing across a skewed clock, where the history
// store's order places it instead (CheckWritersInStoreOrder, Store).
type Overlap struct {
	Holder  history.Identity `json:"holder"`
	Before  ledgerlog.Op     `json:"before"`
	After   ledgerlog.Op     `json:"after"`
	Other   history.Identity `json:"other"`
	Between ledgerlog.Op     `json:"between"`
	// Store, when the overlap was placed by the history store's order
	// rather than the writers' clocks, holds the revisions that place it.
	Store *OverlapRevisions `json:"store,omitempty"`
}

// OverlapRevisions are the history store's revisions that place an
// overlap: the holder's outcome of Before (stored after it returned), the
// other's invoke of Between (stored before it began) and its outcome,
// and the holder's invoke of After.
type OverlapRevisions struct {
	BeforeOutcome  int64 `json:"beforeOutcome"`
	BetweenInvoke  int64 `json:"betweenInvoke"`
	BetweenOutcome int64 `json:"betweenOutcome,omitempty"`
	AfterInvoke    int64 `json:"afterInvoke"`
}

// At is the proven moment: the other writer's append's invoke (its
// writer's clock).
func (o Overlap) At() time.Time { return o.Between.Invoke }

func (o Overlap) String() string {
	if r := o.Store; r != nil {
		ran := fmt.Sprintf("was invoked (revision %d) and acknowledged (outcome stored at %d)", r.BetweenInvoke, r.BetweenOutcome)
		if o.Between.Settled() != ledgerlog.OutcomeOK {
			ran = fmt.Sprintf("was invoked (revision %d), its outcome unknown", r.BetweenInvoke)
		}
		return fmt.Sprintf("in the history store's order, %s acknowledged append %d (sequence %d; outcome stored at revision %d) and invoked append %d (sequence %d; revision %d); between them %s's append %d (sequence %d) %s",
			o.Holder, o.Before.N, o.Before.Seq, r.BeforeOutcome, o.After.N, o.After.Seq, r.AfterInvoke,
			o.Other, o.Between.N, o.Between.Seq, ran)
	}
	ran := fmt.Sprintf("ran from %s to %s and was acknowledged", stamp(o.Between.Invoke), stamp(o.Between.Return))
	switch {
	case o.Between.Outcome == "":
		ran = fmt.Sprintf("was invoked at %s and never completed", stamp(o.Between.Invoke))
	case o.Between.Settled() != ledgerlog.OutcomeOK:
		ran = fmt.Sprintf("ran from %s to %s, its outcome %s", stamp(o.Between.Invoke), stamp(o.Between.Return), o.Between.Outcome)
	}
	return fmt.Sprintf("%s acknowledged append %d (sequence %d) at %s and invoked append %d (sequence %d) at %s; between them %s's append %d (sequence %d) %s",
		o.Holder, o.Before.N, o.Before.Seq, stamp(o.Before.Return), o.After.N, o.After.Seq, stamp(o.After.Invoke),
		o.Other, o.Between.N, o.Between.Seq, ran)
}

// Looked is what CheckLedger read.
type Looked struct {
	Log     LogLooked `json:"log"`
	Writers int       `json:"writers"`
	Appends int       `json:"appends"`
	// Acked's Required is how many acknowledged appends had to be in the
	// log.
	Acked
}

func (l Looked) String() string { return l.Log.String() + l.against(l.Writers, l.Appends, "append") }

// Acked is what a check read of its writers' operations: how many ended
// how, and how many acknowledged ones had to be there.
type Acked struct {
	OK      int `json:"ok"`
	Failed  int `json:"failed"`
	Unknown int `json:"unknown"`
	// Required is how many acknowledged operations had to be there:
	// those acknowledged at or before AckedBefore, when it is set.
	Required    int       `json:"required"`
	AckedBefore time.Time `json:"ackedBefore,omitzero"`
	// AckedByRevision is the cut in the store's order, when one was made.
	AckedByRevision int64 `json:"ackedByRevision,omitempty"`
}

// count counts one operation by its settled outcome.
func (a *Acked) count(outcome string) {
	switch outcome {
	case history.OutcomeOK:
		a.OK++
	case history.OutcomeFail:
		a.Failed++
	default:
		a.Unknown++
	}
}

// against says what a check held writers' histories of ops operations
// (nouns) against.
func (a Acked) against(writers, ops int, noun string) string {
	s := fmt.Sprintf(", against %d writer history(ies) with %d %s(s) (%d ok, %d fail, %d unknown or never completed)",
		writers, ops, noun, a.OK, a.Failed, a.Unknown)
	switch {
	case a.AckedByRevision > 0:
		s += fmt.Sprintf("; %d whose outcome the history store holds at or below revision %d (before the read began) had to be in it", a.Required, a.AckedByRevision)
	case !a.AckedBefore.IsZero():
		s += fmt.Sprintf("; %d acknowledged at or before %s had to be in it", a.Required, stamp(a.AckedBefore))
	}
	return s
}

// Ledger is what CheckLedger found.
type Ledger struct {
	Looked Looked `json:"looked"`
	// Lost are acknowledged appends missing from the final log.
	Lost []LostAppend `json:"lost,omitempty"`
	// Duplicated are appends whose record is in the log more than once.
	Duplicated []Duplicate `json:"duplicated,omitempty"`
	// Reordered are records whose sequence is not above the one before.
	Reordered []Reorder `json:"reordered,omitempty"`
	// Interleave is the first point where a writer's records resume after
	// another's (nil when each writer's records are one stretch).
	Interleave *Interleave `json:"interleave,omitempty"`
	// Unwritten are whole records no history's append wrote there.
	Unwritten []Unwritten `json:"unwritten,omitempty"`
	// Damage is every run of bytes holding no whole record; unlike a torn
	// tail of an unknown append, it is something nobody wrote as it is.
	Damage []Damaged `json:"damage,omitempty"`
	// Unknown are the appends of unknown outcome, settled.
	Unknown []Settled `json:"unknown,omitempty"`
	// Forks are sequences two writers both acknowledged, lowest first.
	Forks []Fork `json:"forks,omitempty"`
	// Overlap is the earliest proof that two writers' acknowledged
	// appends interleaved in time (nil when none).
	Overlap *Overlap `json:"overlap,omitempty"`
	// Unplaced, in the store's order with a read-time cut, are the
	// acknowledged appends missing from the log that the store's order
	// cannot place before or after the read: neither lost nor excused.
	Unplaced []LostAppend `json:"unplaced,omitempty"`
}

// Nobody counts what is in the log that nobody wrote as it is: whole
// records no append wrote there, and damage other than a torn tail of an
// append of unknown outcome.
func (r Ledger) Nobody() int {
	n := len(r.Unwritten)
	for _, d := range r.Damage {
		if d.TornAppend == nil {
			n++
		}
	}
	return n
}

// LedgerOptions tune CheckLedger.
type LedgerOptions struct {
	// AckedBefore, when set, is when the log was read, on the writers'
	// clocks: an append acknowledged after it need not be in the log.
	// Leave it zero when no writer ran while the log was read.
	AckedBefore time.Time
	// InStoreOrder, when set, places the appends by the history store's
	// order instead of the writers' clocks (which a clock-skew fault can
	// set apart): the overlap is CheckWritersInStoreOrder's, and
	// AckedByRevision replaces AckedBefore.
	InStoreOrder StoreOrder
	// AckedByRevision, with InStoreOrder, is the history store's revision
	// read just before the log's read began (0: no writer ran while it
	// was read). An acknowledged append whose outcome was stored at or
	// below it had returned before the read, and must be in the log; one
	// stored above it, or without revisions, may have returned before the
	// read or after: missing, it is Unplaced, neither lost nor excused.
	AckedByRevision int64
}

type opKey struct {
	inc string
	n   int
}

// CheckLedger checks a ledger's final log against its writers' histories:
//
//   - lost: an acknowledged append (ok) whose record is not in the log
//     where it wrote it, with what is there now;
//   - duplicated: one append's record at more than one offset;
//   - reordered: a record whose sequence is not above the one before it
//     in file order; and the first interleave of two writers' records;
//   - unwritten: a whole record whose writer has no history, whose append
//     number is not in it, whose append wrote another sequence or another
//     offset, whose writer fields differ from the history's, or whose
//     append failed (wrote nothing); and damage (checksums that fail),
//     except a torn tail that begins where an append of unknown outcome
//     wrote (its record cut short, or zeros no longer than it);
//   - every append of unknown outcome settled: present, torn, or absent;
//   - forks (a sequence two writers acknowledged) and the earliest
//     overlap in time of two writers' acknowledged appends.
//
// A record is tied to its append by the writer's incarnation and append
// number it carries, never by a clock.
func CheckLedger(log []byte, histories []ledgerlog.History, o LedgerOptions) Ledger {
	c := ledgerlog.Scan(log)
	r := Ledger{Looked: Looked{Log: looked(c), Writers: len(histories), Acked: Acked{AckedBefore: o.AckedBefore}}}

	starts := map[string]ledgerlog.WriterStart{}
	ops := map[opKey]ledgerlog.Op{}
	for _, h := range histories {
		inc := h.Start.Writer.Incarnation
		starts[inc] = h.Start
		for _, op := range h.Ops {
			ops[opKey{inc, op.N}] = op
			r.Looked.Appends++
			r.Looked.count(op.Settled())
		}
	}
	appendOf := func(inc string, n int) *Append {
		op, ok := ops[opKey{inc, n}]
		if !ok {
			return nil
		}
		return &Append{Writer: starts[inc].Writer, Op: op}
	}

	// Tie each whole record to its append.
	placed := make([]Placed, len(c.Entries))
	present := map[opKey]bool{}
	copies := map[opKey][]int64{}
	for i, e := range c.Entries {
		rec := e.Record
		k := opKey{rec.Writer.Incarnation, rec.Op}
		copies[k] = append(copies[k], e.Offset)
		placed[i] = Placed{Entry: e, Append: appendOf(k.inc, k.n)}
		st, known := starts[k.inc]
		op, hasOp := ops[k]
		why := ""
		switch {
		case !known:
			why = "no history has its writer (incarnation " + k.inc + ")"
		case !hasOp:
			why = fmt.Sprintf("its writer's history has no append %d", rec.Op)
		case st.Writer != rec.Writer:
			why = fmt.Sprintf("it names its writer as %s; the history's writer of that incarnation is %s", rec.Writer, st.Writer)
		case op.Seq != rec.Seq:
			why = fmt.Sprintf("append %d wrote sequence %d, the record says %d", op.N, op.Seq, rec.Seq)
		case op.Offset != e.Offset:
			why = fmt.Sprintf("append %d wrote at offset %d, not here", op.N, op.Offset)
		case op.Settled() == ledgerlog.OutcomeFail:
			why = fmt.Sprintf("append %d failed having written nothing (%s)", op.N, op.Error)
		}
		if why != "" {
			r.Unwritten = append(r.Unwritten, Unwritten{Placed: placed[i], Why: why})
			continue
		}
		present[k] = true
	}
	for k, offs := range copies {
		if len(offs) > 1 {
			seq := uint64(0)
			if op, ok := ops[k]; ok {
				seq = op.Seq
			}
			r.Duplicated = append(r.Duplicated, Duplicate{Writer: starts[k.inc].Writer, Op: k.n, Seq: seq, Offsets: offs})
		}
	}
	sort.Slice(r.Duplicated, func(i, j int) bool { return r.Duplicated[i].Offsets[0] < r.Duplicated[j].Offsets[0] })

	// Settle the unknown appends; a torn tail where one wrote is its own.
	for _, h := range histories {
		inc := h.Start.Writer.Incarnation
		for _, op := range h.Ops {
			if op.Settled() != ledgerlog.OutcomeUnknown {
				continue
			}
			s := Settled{Append: Append{Writer: h.Start.Writer, Op: op}, Present: present[opKey{inc, op.N}]}
			for _, d := range c.Damage {
				if !s.Present && tornBy(d, op) {
					s.Torn = true
				}
			}
			r.Unknown = append(r.Unknown, s)
		}
	}
	for _, d := range c.Damage {
		dd := Damaged{Damage: d}
		if d.Tail {
			for i := range r.Unknown {
				if u := &r.Unknown[i]; u.Torn && u.Op.Offset == d.Offset {
					a := u.Append
					dd.TornAppend = &a
				}
			}
		}
		r.Damage = append(r.Damage, dd)
	}

	// Lost: acknowledged, and not where it wrote.
	storeCut := o.InStoreOrder != nil && o.AckedByRevision > 0
	for _, h := range histories {
		inc := h.Start.Writer.Incarnation
		for _, op := range h.Ops {
			if op.Settled() != ledgerlog.OutcomeOK {
				continue
			}
			required := true
			switch {
			case storeCut:
				end, ok := o.InStoreOrder.ended(inc, op.N, true)
				required = ok && end <= o.AckedByRevision
			case o.InStoreOrder == nil && !o.AckedBefore.IsZero():
				required = !op.Return.After(o.AckedBefore)
			}
			if present[opKey{inc, op.N}] {
				if required {
					r.Looked.Required++
				}
				continue
			}
			missing := LostAppend{Append: Append{Writer: h.Start.Writer, Op: op}, Now: describeAt(c, placed, op.Offset)}
			switch {
			case required:
				r.Looked.Required++
				r.Lost = append(r.Lost, missing)
			case storeCut:
				r.Unplaced = append(r.Unplaced, missing)
			}
		}
	}
	sort.SliceStable(r.Lost, func(i, j int) bool { return r.Lost[i].Op.Return.Before(r.Lost[j].Op.Return) })

	// Order in the file.
	seen := map[string]int{} // incarnation → index of its last record
	for i := range placed {
		inc := placed[i].Entry.Record.Writer.Incarnation
		if i > 0 {
			prev := placed[i-1]
			if placed[i].Entry.Record.Seq <= prev.Entry.Record.Seq {
				r.Reordered = append(r.Reordered, Reorder{Before: prev, After: placed[i]})
			}
			if last, ok := seen[inc]; ok && r.Interleave == nil && prev.Entry.Record.Writer.Incarnation != inc {
				r.Interleave = &Interleave{Earlier: placed[last], Other: prev, Resumed: placed[i]}
			}
		}
		seen[inc] = i
	}

	w := CheckWriters(histories)
	if o.InStoreOrder != nil {
		w = CheckWritersInStoreOrder(histories, o.InStoreOrder)
		r.Looked.AckedByRevision = o.AckedByRevision
	}
	r.Forks, r.Overlap = w.Forks, w.Overlap
	return r
}

// tornBy says whether d is the torn tail an append of unknown outcome
// leaves: it runs to the end of the log from where the append wrote, and
// is its record cut short, or zeros no longer than its record (the file's
// size reached the disk and the record's page did not: a crash after the
// write and before a successful fsync leaves that too).
func tornBy(d ledgerlog.Damage, op ledgerlog.Op) bool {
	if !d.Tail || d.Offset != op.Offset {
		return false
	}
	if d.Zero {
		return op.Size == 0 || d.Size <= int64(op.Size)
	}
	return op.Size == 0 || d.Size < int64(op.Size)
}

// describeAt says what the log holds at offset, for a lost append.
func describeAt(c ledgerlog.Contents, placed []Placed, offset int64) string {
	if offset >= c.Size {
		return fmt.Sprintf("nothing: the log ends at %d", c.Size)
	}
	e, d := c.At(offset)
	switch {
	case e != nil:
		for _, p := range placed {
			if p.Entry.Offset == e.Offset {
				at := ""
				if e.Offset != offset {
					at = fmt.Sprintf(" (from offset %d)", e.Offset)
				}
				return "the record of " + p.String() + at
			}
		}
	case d != nil:
		return describeDamage(*d)
	}
	return "nothing known"
}

// forks finds the sequences two writers both acknowledged.
func forks(histories []ledgerlog.History) []Fork {
	type first struct {
		a   Append
		inc string
	}
	bySeq := map[uint64]first{}
	var out []Fork
	for _, h := range histories {
		inc := h.Start.Writer.Incarnation
		for _, op := range h.Ops {
			if op.Settled() != ledgerlog.OutcomeOK {
				continue
			}
			a := Append{Writer: h.Start.Writer, Op: op}
			f, ok := bySeq[op.Seq]
			switch {
			case !ok:
				bySeq[op.Seq] = first{a: a, inc: inc}
			case f.inc != inc:
				out = append(out, Fork{Seq: op.Seq, A: f.a, B: a})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// String says what was checked and what was found.
func (r Ledger) String() string {
	var found []string
	if n := len(r.Lost); n > 0 {
		found = append(found, fmt.Sprintf("%d acknowledged append(s) lost, first %s: %s now there", n, r.Lost[0].Append, r.Lost[0].Now))
	}
	if n := len(r.Unwritten); n > 0 {
		found = append(found, fmt.Sprintf("%d record(s) nobody wrote there, first %s: %s", n, r.Unwritten[0].Placed, r.Unwritten[0].Why))
	}
	var damaged []string
	for _, d := range r.Damage {
		if d.TornAppend == nil {
			damaged = append(damaged, describeDamage(d.Damage))
		}
	}
	if len(damaged) > 0 {
		found = append(found, fmt.Sprintf("%d damaged run(s), first %s", len(damaged), damaged[0]))
	}
	if n := len(r.Duplicated); n > 0 {
		d := r.Duplicated[0]
		found = append(found, fmt.Sprintf("%d append(s) duplicated, first append %d of %s at offsets %v", n, d.Op, d.Writer, d.Offsets))
	}
	if n := len(r.Reordered); n > 0 {
		found = append(found, fmt.Sprintf("%d record(s) out of order, first %s", n, r.Reordered[0]))
	}
	if r.Interleave != nil {
		found = append(found, "writers interleaved: "+r.Interleave.String())
	}
	if n := len(r.Forks); n > 0 {
		f := r.Forks[0]
		found = append(found, fmt.Sprintf("%d sequence(s) acknowledged by two writers, first %d: %s and %s", n, f.Seq, f.A, f.B))
	}
	if r.Overlap != nil {
		found = append(found, "two writers at once: "+r.Overlap.String())
	}
	if n := len(r.Unplaced); n > 0 {
		found = append(found, fmt.Sprintf("%d acknowledged append(s) missing that the store's order cannot place before or after the read, first %s: %s now there", n, r.Unplaced[0].Append, r.Unplaced[0].Now))
	}
	present, torn := 0, 0
	for _, u := range r.Unknown {
		if u.Present {
			present++
		}
		if u.Torn {
			torn++
		}
	}
	settled := ""
	if len(r.Unknown) > 0 {
		settled = fmt.Sprintf("; %d unknown append(s) settled: %d present, %d torn, %d absent", len(r.Unknown), present, torn, len(r.Unknown)-present-torn)
	}
	s := "checked " + r.Looked.String() + settled
	if len(found) == 0 {
		return s + ": every acknowledged append is there, nothing else, in order, one writer at a time"
	}
	return s + ": " + strings.Join(found, "; ")
}

// stamp renders a writer's time for reasons.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.UTC().Format("15:04:05.000")
}
