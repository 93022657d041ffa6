package invariant

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/checker"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// AcknowledgedDataSurvivesName names the acknowledged-data-survives
// invariant.
const AcknowledgedDataSurvivesName = "acknowledged-data-survives"

// Violations of acknowledged-data-survives.
const (
	// LostAppend: an acknowledged append is missing from the final log.
	LostAppend = "lost-append"
	// UnwrittenData: the final log holds something nobody wrote as it is.
	UnwrittenData = "unwritten-data"
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
// mounted, every acknowledged append must be there.
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
// acknowledged. VIOLATED is always exercised.
func AcknowledgedDataSurvives() Invariant { return acknowledgedData{} }

type acknowledgedData struct{}

func (acknowledgedData) Name() string         { return AcknowledgedDataSurvivesName }
func (acknowledgedData) Phase() verdict.Phase { return verdict.Convergence }
func (acknowledgedData) Reads() []Reading {
	return []Reading{
		{Sources: string(ledgerSource), Question: evidence.LedgerLog},
		{Sources: string(ledgerSource), Question: evidence.LedgerHistory},
	}
}

func (acknowledgedData) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	if len(snaps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no snapshot to judge"}
	}
	last := snaps[len(snaps)-1]
	src := []string{string(ledgerSource)}
	var logV evidence.LedgerLogValue
	logA, why := answerOf(last, evidence.LedgerLog, &logV)
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	var histV evidence.LedgerHistoryValue
	histA, why := answerOf(last, evidence.LedgerHistory, &histV)
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
	mounted := ""
	if len(logV.Mounted) > 0 {
		if histA.AskedAt.IsZero() || histA.AskedAt.Before(logA.ReadAt) {
			return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
				Reason: fmt.Sprintf("the volume was mounted on %s when the log was read, and the history was not read after the log returned at %s (history read from %s): a record appended between could have no invoke in it",
					strings.Join(logV.Mounted, ", "), stamp(logA.ReadAt), stamp(histA.AskedAt))}
		}
		o.AckedBefore = readBegan(logA, last)
		mounted = fmt.Sprintf("; the volume was still mounted on %s, so only appends acknowledged by %s, when the read began, had to be there", strings.Join(logV.Mounted, ", "), stamp(o.AckedBefore))
	}
	r := checker.CheckLedger(logV.Data, hs, o)
	exercised, exercise := ledgerCarriedAcross(hs, o.AckedBefore, readBegan(logA, last), in.Timeline)

	where := fmt.Sprintf("the ledger's log at %s, read at %s", orNone(logV.Path), stamp(logA.ReadAt))
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
			Exercised: verdict.Exercised(), Exercise: exercise}
	case r.Nobody() > 0:
		if !exercised {
			exercise = fmt.Sprintf("%d thing(s) in the log nobody wrote", r.Nobody())
		}
		return verdict.Judgement{Verdict: verdict.Violated, Violation: UnwrittenData, Sources: src, At: logA.ReadAt,
			Reason:    fmt.Sprintf("unwritten data: %s holds %d thing(s) nobody wrote as they are%s; %s", where, r.Nobody(), mounted, r),
			Exercised: verdict.Exercised(), Exercise: exercise}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
		Reason:    fmt.Sprintf("every acknowledged append is in %s and nothing is there that nobody wrote%s; %s", where, mounted, r),
		Exercised: &exercised, Exercise: exercise}
}

// ledgerCarriedAcross applies acknowledged-data-survives' exercise rule:
// the log was read after the heal and had to hold an append acknowledged
// before the heal began (acknowledged by cut, when one is set).
func ledgerCarriedAcross(hs []ledgerlog.History, cut, readAt time.Time, tl evidence.Timeline) (bool, string) {
	before, writers := 0, 0
	var healStart, healed time.Time
	if e := tl.OfKind(FaultHealedEvent); len(e) > 0 {
		healed = e[len(e)-1].At
	}
	healStart = healed
	if e := tl.OfKind(HealStartedEvent); len(e) > 0 {
		healStart = e[len(e)-1].At
	}
	for _, h := range hs {
		acked := false
		for _, op := range h.Ops {
			if op.Settled() != ledgerlog.OutcomeOK || (!cut.IsZero() && op.Return.After(cut)) {
				continue
			}
			acked = true
			if !healStart.IsZero() && op.Return.Before(healStart) {
				before++
			}
		}
		if acked {
			writers++
		}
	}
	acknowledging := fmt.Sprintf("%d writer(s) had appends the log had to hold", writers)
	switch {
	case healed.IsZero():
		return false, "no heal on the timeline: no append was carried across a fault; " + acknowledging
	case !readAt.After(healed):
		return false, fmt.Sprintf("the log was read at %s, not after the heal at %s; %s", stamp(readAt), stamp(healed), acknowledging)
	case before == 0:
		return false, fmt.Sprintf("no append the log had to hold was acknowledged before the heal began at %s; %s", stamp(healStart), acknowledging)
	}
	return true, fmt.Sprintf("%d acknowledged append(s) from before the heal began at %s, tested by the log read at %s; %s", before, stamp(healStart), stamp(readAt), acknowledging)
}
