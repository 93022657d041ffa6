package invariants

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// AcknowledgedDataSurvivesName names the acknowledged-data-survives
// invariant.
const AcknowledgedDataSurvivesName = "acknowledged-data-survives"

// Violations of acknowledged-data-survives.
const (
	// LostAppend: an acknowledged append is missing from the final log.
	LostAppend = "lost-append"
	// UnwrittenData: the final log or database holds something nobody
	// wrote as it is.
	UnwrittenData = "unwritten-data"
	// LostUpdate: an acknowledged operation's effect is missing from the
	// final database.
	LostUpdate = "lost-update"
)

// AcknowledgedDataSurvives: every append the storage acknowledged is in
// the final stored state, and nothing is there that nobody wrote.
//
// Reads: ledger/log and ledger/history from the "ledger" source, in the
// input's last snapshot: the ledger fixture's log as the volume holds it,
// and every writer's history (each append's invoke, return and outcome)
// as the external store holds it, which no fault on the volume touches.
// They are checked with checker.CheckLedger: each record is tied to the
// append that wrote it by the writer's incarnation and append number it
// carries; an append of unknown outcome is settled against the log
// (present, torn at the end, or absent), and never counts as lost.
//
// Fires with Violation "lost-append" (LostAppend) when an acknowledged
// append's record is not where it wrote it (the reason names it and what
// the log holds there now), else with "unwritten-data" (UnwrittenData)
// when the log holds a record no append of any history wrote there, or
// bytes that are no whole record other than the torn tail of an append of
// unknown outcome.
//
// While the volume was still mounted when the log was read (the value's
// Mounted), a writer could append during the read: an append acknowledged
// after the read began need not be in it (the writers' clocks are taken
// as faultline's: one clock on the local lab's one kernel, the nodes'
// NTP-kept clocks elsewhere), and the history must have been read after
// the log returned, so that every record's invoke is in it. With nothing
// mounted, every acknowledged append must be there. Under a fault that
// can skew a clock (invariant.Input.ClocksSkewable) the cut is made in the history
// store's order instead: an append whose outcome the store held by the
// revision read just before the log's read (the value's StoreRevision)
// must be there; one missing whose outcome came later cannot be placed
// before the read or after, and makes the verdict INSUFFICIENT_DATA
// unless another is lost; no such revision, INSUFFICIENT_DATA.
//
// Why: an append acknowledged after fsync is durable by the storage's
// contract; a volume that two copies of a pod write through loses it
// without either noticing, which is what StatefulSet's at-most-one and
// ReadWriteOnce exist to prevent.
//
// INSUFFICIENT_DATA when the log or the history is unreadable or
// malformed, when the history holds no writer, or when, with the volume
// mounted, the history was not read after the log.
//
// Exercised when the log was read after the heal and some acknowledged
// append it had to hold was acknowledged before the heal began (carried
// across the fault); the Exercise also says how many writers had appends
// acknowledged. VIOLATED is always exercised. Under a fault that can
// skew a clock the writers' acknowledgements cannot be placed against the
// heal (faultline's clock), so a PRESERVED is not shown exercised.
//
// The embedded database workload (fixtures/kvdb) is judged the same way
// from kvdb/db and kvdb/history of the "kvdb" source, with
// checker.CheckKVDB: every value names the operation that wrote it and every
// counter increment the value it incremented, so an acknowledged
// increment the chain behind the final count leaves out is lost
// ("lost-update", LostUpdate), as is an acknowledged register write
// invoked after the final value's write returned (under a fault that can
// skew a clock, in the history store's order: its invoke stored after the
// final write's outcome; one whose puts overlap the final write's cannot
// be placed, INSUFFICIENT_DATA); a final or read value
// no operation wrote as it is, or a key the workload does not write, is
// "unwritten-data". An operation of unknown outcome is settled against the
// final content and what later operations read, never counted lost. The
// mounted rule, INSUFFICIENT_DATA and exercise rules are the ledger's,
// with operations for appends and the database for the log. Each workload
// whose questions were asked in the last snapshot is judged; VIOLATED
// when either is, INSUFFICIENT_DATA when either cannot decide.
func AcknowledgedDataSurvives() invariant.Invariant { return acknowledgedData{} }

type acknowledgedData struct{}

func (acknowledgedData) Name() string         { return AcknowledgedDataSurvivesName }
func (acknowledgedData) Phase() verdict.Phase { return verdict.Convergence }
func (acknowledgedData) Reads() []invariant.Reading {
	return []invariant.Reading{
		{Sources: string(ledgerSource), Question: storeddata.LedgerLog},
		{Sources: string(ledgerSource), Question: storeddata.LedgerHistory},
		{Sources: string(kvdbSource), Question: storeddata.KVDBDatabase},
		{Sources: string(kvdbSource), Question: storeddata.KVDBHistory},
	}
}

func (acknowledgedData) Judge(in invariant.Input) verdict.Judgement {
	snaps := invariant.Ordered(in.Snapshots)
	if len(snaps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no snapshot to judge"}
	}
	last := snaps[len(snaps)-1]
	ledgerAsked := last.Get(ledgerSource, storeddata.LedgerLog).State != evidence.NotAsked
	kvdbAsked := last.Get(kvdbSource, storeddata.KVDBDatabase).State != evidence.NotAsked
	switch {
	case kvdbAsked && !ledgerAsked:
		return judgeKVDBData(in, last)
	case kvdbAsked && ledgerAsked:
		return combineJudgements(judgeLedgerData(in, last), judgeKVDBData(in, last))
	}
	return judgeLedgerData(in, last)
}

// combineJudgements is one verdict of two workloads' own: INSUFFICIENT_DATA
// when either cannot decide, else VIOLATED when either is (the first
// violated one's violation), else PRESERVED; the reasons of both.
func combineJudgements(js ...verdict.Judgement) verdict.Judgement {
	out := verdict.Judgement{Verdict: verdict.Preserved}
	var reasons, exercises []string
	exercised := false
	for _, j := range js {
		// Each workload's quantities under its source's name.
		for name, q := range j.Quantities {
			if out.Quantities == nil {
				out.Quantities = map[string]verdict.Quantity{}
			}
			if len(j.Sources) > 0 {
				name = j.Sources[0] + ":" + name
			}
			out.Quantities[name] = q
		}
		reasons = append(reasons, j.Reason)
		out.Sources = append(out.Sources, j.Sources...)
		if j.Exercise != "" {
			exercises = append(exercises, j.Exercise)
		}
		if j.Exercised != nil && *j.Exercised {
			exercised = true
		}
		switch {
		case j.Verdict == verdict.InsufficientData:
			out.Verdict = verdict.InsufficientData
		case j.Verdict == verdict.Violated && out.Verdict == verdict.Preserved:
			out.Verdict, out.Violation, out.At = verdict.Violated, j.Violation, j.At
		}
	}
	out.Reason, out.Exercise = strings.Join(reasons, "; and "), strings.Join(exercises, "; ")
	switch out.Verdict {
	case verdict.InsufficientData:
		out.Violation, out.At, out.Quantities = "", time.Time{}, nil
	case verdict.Violated:
		out.Exercised = verdict.Exercised()
	default:
		out.Exercised = &exercised
	}
	return out
}

// judgeLedgerData judges the ledger's log against its histories.
func judgeLedgerData(in invariant.Input, last evidence.Snapshot) verdict.Judgement {
	src := []string{string(ledgerSource)}
	var logV storeddata.LedgerLogValue
	logA, why := answerOf(last, storeddata.LedgerLog, &logV)
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	var histV storeddata.LedgerHistoryValue
	histA, why := answerOf(last, storeddata.LedgerHistory, &histV)
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why, Sources: src}
	}
	hs, err := ledgerHistories(histV)
	if err != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: err.Error() + ": a history with parts missing cannot say what was acknowledged", Sources: src}
	}
	if len(hs) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: fmt.Sprintf("no writer history under %s, so nothing says what the log's %d bytes should hold", histV.Prefix, len(logV.Data)), Sources: src}
	}

	var o checker.LedgerOptions
	mounted, skew := "", ""
	if in.ClocksSkewable() {
		o.InStoreOrder = checker.StoreOrderOf(histV.Prefix, historyKVs(histV.KVs))
		skew = "; " + skewNote
	}
	if len(logV.Mounted) > 0 {
		if histA.AskedAt.IsZero() || histA.AskedAt.Before(logA.ReadAt) {
			return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
				Reason: fmt.Sprintf("the volume was mounted on %s when the log was read, and the history was not read after the log returned at %s (history read from %s): a record appended between could have no invoke in it",
					strings.Join(logV.Mounted, ", "), invariant.Stamp(logA.ReadAt), invariant.Stamp(histA.AskedAt))}
		}
		switch {
		case o.InStoreOrder != nil && logV.StoreRevision <= 0:
			return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
				Reason: fmt.Sprintf("the volume was mounted on %s when the log was read, so only appends acknowledged before the read began had to be there; under a clock-skew fault the writers' clocks cannot say which, and no history store revision was read before the read to say it in the store's order", strings.Join(logV.Mounted, ", "))}
		case o.InStoreOrder != nil:
			o.AckedByRevision = logV.StoreRevision
			mounted = fmt.Sprintf("; the volume was still mounted on %s, so only appends whose outcome the history store held by revision %d, read before the log's read began, had to be there", strings.Join(logV.Mounted, ", "), o.AckedByRevision)
		default:
			o.AckedBefore = readBegan(logA, last)
			mounted = fmt.Sprintf("; the volume was still mounted on %s, so only appends acknowledged by %s, when the read began, had to be there", strings.Join(logV.Mounted, ", "), invariant.Stamp(o.AckedBefore))
		}
	}
	r := checker.CheckLedger(logV.Data, hs, o)
	exercised, exercise := storedCarriedAcross(ledgerAcks(hs, o.AckedBefore), readBegan(logA, last), in.Timeline, "append", "log")
	if o.InStoreOrder != nil {
		exercised, exercise = false, "not shown: under a clock-skew fault the writers' clocks cannot place their acknowledgements against the heal"
	}
	mounted += skew

	where := fmt.Sprintf("the ledger's log at %s, read at %s", orNone(logV.Path), invariant.Stamp(logA.ReadAt))
	quantities, loss := lossQuantities(len(r.Lost), "appends", ledgerAcked(hs), in.ClocksSkewable())
	mounted += loss
	switch {
	case len(r.Lost) > 0:
		var names []string
		for _, l := range r.Lost[:min(len(r.Lost), 3)] {
			names = append(names, fmt.Sprintf("%s (now there: %s)", l.Append, l.Now))
		}
		if !exercised {
			exercise = fmt.Sprintf("%d acknowledged append(s) lost", len(r.Lost))
		}
		return verdict.Judgement{Verdict: verdict.Violated, Violation: LostAppend, Sources: src, At: logA.ReadAt,
			Reason: fmt.Sprintf("lost append: %d acknowledged append(s) missing from %s: %s%s; %s",
				len(r.Lost), where, strings.Join(names, "; "), mounted, r),
			Exercised: verdict.Exercised(), Exercise: exercise, Quantities: quantities}
	case r.Nobody() > 0:
		if !exercised {
			exercise = fmt.Sprintf("%d thing(s) in the log nobody wrote", r.Nobody())
		}
		return verdict.Judgement{Verdict: verdict.Violated, Violation: UnwrittenData, Sources: src, At: logA.ReadAt,
			Reason:    fmt.Sprintf("unwritten data: %s holds %d thing(s) nobody wrote as they are%s; %s", where, r.Nobody(), mounted, r),
			Exercised: verdict.Exercised(), Exercise: exercise, Quantities: quantities}
	case len(r.Unplaced) > 0:
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: fmt.Sprintf("%d acknowledged append(s) missing from %s whose outcome the history store holds only after the revision read before the read: acknowledged before the read began (lost) or after (not due), which only the writers' clocks could tell%s; %s", len(r.Unplaced), where, mounted, r)}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
		Reason:    fmt.Sprintf("every acknowledged append is in %s and nothing is there that nobody wrote%s; %s", where, mounted, r),
		Exercised: &exercised, Exercise: exercise, Quantities: quantities}
}

// ledgerAcks are, per writer, the return times of its acknowledged
// appends (acknowledged by cut, when one is set).
func ledgerAcks(hs []ledgerlog.History, cut time.Time) [][]time.Time {
	var out [][]time.Time
	for _, h := range hs {
		var acks []time.Time
		for _, op := range h.Ops {
			if op.Settled() == ledgerlog.OutcomeOK && (cut.IsZero() || !op.Return.After(cut)) {
				acks = append(acks, op.Return)
			}
		}
		out = append(out, acks)
	}
	return out
}

// storedCarriedAcross applies acknowledged-data-survives' exercise rule: the
// stored state (the ledger's log, the database) was read after the heal
// and had to hold something acknowledged before the heal began. acks are,
// per writer, the return times of what it had to hold; what names one
// (append, operation) and where the thing it is stored.
func storedCarriedAcross(acks [][]time.Time, readAt time.Time, tl evidence.Timeline, what, where string) (bool, string) {
	before, writers := 0, 0
	var healStart, healed time.Time
	if e := tl.OfKind(invariant.FaultHealedEvent); len(e) > 0 {
		healed = e[len(e)-1].At
	}
	healStart = healed
	if e := tl.OfKind(invariant.HealStartedEvent); len(e) > 0 {
		healStart = e[len(e)-1].At
	}
	for _, w := range acks {
		if len(w) > 0 {
			writers++
		}
		for _, at := range w {
			if !healStart.IsZero() && at.Before(healStart) {
				before++
			}
		}
	}
	acknowledging := fmt.Sprintf("%d writer(s) had %ss the %s had to hold", writers, what, where)
	switch {
	case healed.IsZero():
		return false, fmt.Sprintf("no heal on the timeline: no %s was carried across a fault; %s", what, acknowledging)
	case !readAt.After(healed):
		return false, fmt.Sprintf("the %s was read at %s, not after the heal at %s; %s", where, invariant.Stamp(readAt), invariant.Stamp(healed), acknowledging)
	case before == 0:
		return false, fmt.Sprintf("no %s the %s had to hold was acknowledged before the heal began at %s; %s", what, where, invariant.Stamp(healStart), acknowledging)
	}
	return true, fmt.Sprintf("%d acknowledged %s(s) from before the heal began at %s, tested by the %s read at %s; %s", before, what, invariant.Stamp(healStart), where, invariant.Stamp(readAt), acknowledging)
}
