package invariants

import (
	"fmt"

	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// SingleWriterAtStorageName names the single-writer-at-storage invariant.
const SingleWriterAtStorageName = "single-writer-at-storage"

// TwoWriters is single-writer-at-storage's violation: the storage
// accepted two writers' appends at once.
const TwoWriters = "two-writers"

// SingleWriterAtStorage: the storage never accepts the writes of two
// copies of the workload at the same moment.
//
// Reads: ledger/history from the "ledger" source, the latest readable
// answer in the input: every ledger writer's history as the external
// store holds it (it grows through the run, so the latest holds every
// append made before it was read, and none made after). Checked with
// checker.CheckWriters. A VIOLATED from a read before the input's last
// snapshot stands; a PRESERVED needs the last snapshot's read, after
// every write (unreadTail.hold), and from an earlier one is
// INSUFFICIENT_DATA.
//
// Fires with Violation "two-writers" (TwoWriters) when one writer's
// acknowledged append ran wholly between two
// acknowledged appends of another (invoked after the first was
// acknowledged, acknowledged before the second was invoked). It is
// single-copy's continuity rule with the writer's incarnation as the
// holder: one incarnation is one process, which lived throughout between
// its two appends holding its next offset in memory, so the storage
// accepted both writers' appends at once. The moment is the other
// writer's invoke. The times are the writers' own clocks, compared with
// each other: one clock on the local lab's one kernel, the nodes'
// NTP-kept clocks elsewhere. PRESERVED needs the writers shown one at a
// time (checker's Apart: each writer's acknowledged appends, from its
// first invoke to its last acknowledgement, wholly before or after every
// other's); writers whose stretches overlap with no append wholly
// between two of another's are neither proven at once nor apart, and
// INSUFFICIENT_DATA. Under a fault that can skew a clock
// (invariant.Input.ClocksSkewable) the clocks prove nothing, and the appends are
// placed by the history store's order instead
// (checker.CheckWritersInStoreOrder: each append between its invoke's put
// and its outcome's), with the same three outcomes: an overlap that
// order proves is VIOLATED, writers it proves one at a time PRESERVED,
// and anything only the clocks could decide INSUFFICIENT_DATA. Two
// writers that each acknowledged one sequence (a fork) are named in the
// reason but decide nothing here: a storage that lost the first writer's
// records before the second started makes one too
// (acknowledged-data-survives judges the loss).
//
// Why: a StatefulSet's at-most-one and ReadWriteOnce(Pod) exist so that
// one copy writes a volume; an application that keeps state in memory, as
// most do, is safe only then.
//
// INSUFFICIENT_DATA when no history is readable or the latest is
// malformed, when the latest readable is not the last snapshot's and
// shows no violation, when no overlap is proven but an append of
// unknown outcome of one writer was invoked between two acknowledged
// appends of another (had it taken effect, both were accepted at once),
// and when two writers are shown neither at once nor one at a time.
//
// Exercised when two or more writers had appends acknowledged (a second
// copy wrote, at some time); a run with one writer, or one whose second
// copy never got an append acknowledged, cannot fire, and its PRESERVED
// says "not exercised" (a null arm's is no test of the detector).
// VIOLATED is always exercised.
func SingleWriterAtStorage() invariant.Invariant { return singleWriter{} }

type singleWriter struct{}

func (singleWriter) Name() string         { return SingleWriterAtStorageName }
func (singleWriter) Phase() verdict.Phase { return verdict.Safety }
func (singleWriter) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: string(ledgerSource), Question: storeddata.LedgerHistory}}
}

func (singleWriter) Judge(in invariant.Input) verdict.Judgement {
	snaps := invariant.Ordered(in.Snapshots)
	var histV storeddata.LedgerHistoryValue
	var histA evidence.Answer
	why, at := "no snapshot to judge", -1
	for i := len(snaps) - 1; i >= 0; i-- {
		var v storeddata.LedgerHistoryValue
		a, w := answerOf(snaps[i], storeddata.LedgerHistory, &v)
		if w == "" {
			histV, histA, why, at = v, a, "", i
			break
		}
		if i == len(snaps)-1 {
			why = w
		}
	}
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no readable ledger history in the input: " + why}
	}
	return tailAfter(snaps, at, histA, ledgerSource, storeddata.LedgerHistory).hold(judgeWriters(in, histV, histA), "ledger history")
}

// judgeWriters is single-writer-at-storage from one read of the history.
func judgeWriters(in invariant.Input, histV storeddata.LedgerHistoryValue, histA evidence.Answer) verdict.Judgement {
	src := []string{string(ledgerSource)}
	hs, err := ledgerHistories(histV)
	if err != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: err.Error(), Sources: src}
	}
	if in.ClocksSkewable() {
		return judgeWritersInStoreOrder(hs, histV, histA)
	}
	w := checker.CheckWriters(hs)
	looked := fmt.Sprintf("%s, read at %s", w.Looked, invariant.Stamp(histA.ReadAt))
	forks := ""
	if n := len(w.Forks); n > 0 {
		f := w.Forks[0]
		forks = fmt.Sprintf("; %d sequence(s) acknowledged by two writers, first %d (%s and %s)", n, f.Seq, f.A, f.B)
	}
	exercise := fmt.Sprintf("%d writer(s) had appends acknowledged", w.Looked.Acknowledging)
	switch {
	case w.Overlap != nil:
		return verdict.Judgement{Verdict: verdict.Violated, Violation: TwoWriters, Sources: src, At: w.Overlap.At(),
			Reason:    "two writers accepted at once: " + w.Overlap.String() + forks + "; checked " + looked,
			Exercised: verdict.Exercised(), Exercise: exercise + ": a second writer wrote between two of the first's"}
	case w.Possible != nil:
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src, At: w.Possible.At(),
			Reason: "no two writers proven at once, but " + w.Possible.String() + ": had it taken effect, both were" + forks + "; checked " + looked}
	case w.Looked.Acknowledging < 2:
		return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
			Reason:    "not exercised: one writer had appends acknowledged, so no two could be accepted at once" + forks + "; checked " + looked,
			Exercised: verdict.NotExercised(), Exercise: "not exercised: " + exercise}
	case w.Apart:
		return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
			Reason:    "the writers' clocks show them one at a time: each one's acknowledged appends, from its first invoke to its last acknowledgement, lie wholly before or after every other's" + forks + "; checked " + looked,
			Exercised: verdict.Exercised(), Exercise: exercise + ", one after the other"}
	}
	return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
		Reason: "the writers' clocks neither prove two writers at once (no acknowledged append of one lies wholly between two of another's) nor the writers one at a time (their acknowledged appends' stretches overlap)" + forks + "; checked " + looked}
}

// judgeWritersInStoreOrder is single-writer-at-storage under a fault
// that can skew clocks: the appends are placed by the history store's
// order, and what only the writers' clocks could decide is
// INSUFFICIENT_DATA.
func judgeWritersInStoreOrder(hs []ledgerlog.History, histV storeddata.LedgerHistoryValue, histA evidence.Answer) verdict.Judgement {
	src := []string{string(ledgerSource)}
	w := checker.CheckWritersInStoreOrder(hs, checker.StoreOrderOf(histV.Prefix, historyKVs(histV.KVs)))
	looked := fmt.Sprintf("%s; checked %s, read at %s", skewNote, w.Looked, invariant.Stamp(histA.ReadAt))
	exercised := w.Looked.Acknowledging >= 2
	exercise := fmt.Sprintf("%d writer(s) had appends acknowledged", w.Looked.Acknowledging)
	switch {
	case w.Overlap != nil:
		return verdict.Judgement{Verdict: verdict.Violated, Violation: TwoWriters, Sources: src, At: histA.ReadAt,
			Reason:    "two writers accepted at once: " + w.Overlap.String() + "; " + looked,
			Exercised: verdict.Exercised(), Exercise: exercise + ": a second writer wrote between two of the first's"}
	case w.Possible != nil:
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src, At: histA.ReadAt,
			Reason: "no two writers proven at once, but " + w.Possible.String() + ": had it taken effect, both were; " + looked}
	case !exercised:
		return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
			Reason:    "not exercised: one writer had appends acknowledged, so no two could be accepted at once; " + looked,
			Exercised: verdict.NotExercised(), Exercise: "not exercised: " + exercise}
	case w.Apart:
		return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
			Reason:    "the history store's order proves the writers one at a time: each one's acknowledged appends, from its first invoke to its last outcome, lie wholly before or after every other's; " + looked,
			Exercised: verdict.Exercised(), Exercise: exercise + ", one after the other"}
	}
	clock := ""
	if c := checker.CheckWriters(hs); c.Overlap != nil {
		clock = "; the writers' clocks, which the fault can skew, would say " + c.Overlap.String()
	}
	return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
		Reason: "the history store's order neither proves two writers at once nor the writers one at a time (their appends' puts interleave, or lack revisions), and only the writers' clocks could decide" + clock + "; " + looked}
}
