package invariants

import (
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/kvdb"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// kvdbSource answers the embedded database workload's questions: its
// bbolt file as the volume holds it and its writers' histories as the
// external store holds them.
const kvdbSource evidence.Source = "kvdb"

// kvdbHistories decodes the database's history answer
// (decodedHistories).
func kvdbHistories(v storeddata.LedgerHistoryValue) ([]kvdb.History, error) {
	return decodedHistories("the kvdb history", v, kvdb.DecodeHistories, checker.KVDBRewrittenInvokes)
}

// kvdbAcks are, per writer, the return times of its acknowledged
// operations (acknowledged by cut, when one is set).
func kvdbAcks(hs []kvdb.History, cut time.Time) [][]time.Time {
	var out [][]time.Time
	for _, h := range hs {
		var acks []time.Time
		for _, op := range h.Ops {
			if op.Settled() == history.OutcomeOK && (cut.IsZero() || !op.Return.After(cut)) {
				acks = append(acks, op.Return)
			}
		}
		out = append(out, acks)
	}
	return out
}

// judgeKVDBData is acknowledged-data-survives over the embedded database
// workload: its final content against its writers' histories.
func judgeKVDBData(in invariant.Input, last evidence.Snapshot) verdict.Judgement {
	src := []string{string(kvdbSource)}
	var dbV storeddata.KVDBDatabaseValue
	dbA, why := sourceAnswer(last, kvdbSource, storeddata.KVDBDatabase, &dbV)
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	var histV storeddata.LedgerHistoryValue
	histA, why := sourceAnswer(last, kvdbSource, storeddata.KVDBHistory, &histV)
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why, Sources: src}
	}
	hs, err := kvdbHistories(histV)
	if err != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: err.Error() + ": a history with parts missing cannot say what was acknowledged", Sources: src}
	}
	if len(hs) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: fmt.Sprintf("no writer history under %s, so nothing says what the database's %d bytes should hold", histV.Prefix, len(dbV.Data)), Sources: src}
	}
	content, err := kvdb.ReadContent(dbV.Data)
	if err != nil {
		// A database that does not open is storage-integrity's finding;
		// what it held cannot be compared.
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: fmt.Sprintf("the database at %s, read at %s, could not be read (%v): storage-integrity judges its damage; what it held is not known", orNone(dbV.Path), invariant.Stamp(dbA.ReadAt), err)}
	}

	var o checker.KVDBOptions
	mounted, skew := "", ""
	if in.ClocksSkewable() {
		o.InStoreOrder = checker.StoreOrderOf(histV.Prefix, historyKVs(histV.KVs))
		skew = "; " + skewNote
	}
	if len(dbV.Mounted) > 0 {
		if histA.AskedAt.IsZero() || histA.AskedAt.Before(dbA.ReadAt) {
			return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
				Reason: fmt.Sprintf("the volume was mounted on %s when the database was read, and the history was not read after the database returned at %s (history read from %s): a value written between could have no invoke in it",
					strings.Join(dbV.Mounted, ", "), invariant.Stamp(dbA.ReadAt), invariant.Stamp(histA.AskedAt))}
		}
		switch {
		case o.InStoreOrder != nil && dbV.StoreRevision <= 0:
			return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
				Reason: fmt.Sprintf("the volume was mounted on %s when the database was read, so only operations acknowledged before the read began had to be there; under a clock-skew fault the writers' clocks cannot say which, and no history store revision was read before the read to say it in the store's order", strings.Join(dbV.Mounted, ", "))}
		case o.InStoreOrder != nil:
			o.AckedByRevision = dbV.StoreRevision
			mounted = fmt.Sprintf("; the volume was still mounted on %s, so only operations whose outcome the history store held by revision %d, read before the database's read began, had to be there", strings.Join(dbV.Mounted, ", "), o.AckedByRevision)
		default:
			o.AckedBefore = readBegan(dbA, last)
			mounted = fmt.Sprintf("; the volume was still mounted on %s, so only operations acknowledged by %s, when the read began, had to be there", strings.Join(dbV.Mounted, ", "), invariant.Stamp(o.AckedBefore))
		}
	}
	r := checker.CheckKVDB(content, hs, o)
	exercised, exercise := storedCarriedAcross(kvdbAcks(hs, o.AckedBefore), readBegan(dbA, last), in.Timeline, "operation", "database")
	if o.InStoreOrder != nil {
		exercised, exercise = false, "not shown: under a clock-skew fault the writers' clocks cannot place their acknowledgements against the heal"
	}
	mounted += skew

	where := fmt.Sprintf("the kvdb database at %s, read at %s", orNone(dbV.Path), invariant.Stamp(dbA.ReadAt))
	// A counter's operation is an increment, a register's a write that
	// replaces the value: counted apart, never both as increments.
	increments, writes := 0, 0
	for _, l := range r.Lost {
		if kind, _ := kvdb.KindOf(l.Op.Key); kind == kvdb.Counter {
			increments++
		} else {
			writes++
		}
	}
	quantities, loss := lossQuantities(len(r.Lost), "operations", kvdbAcked(hs), in.ClocksSkewable())
	per := quantities[verdict.QuantityLost].Per
	quantities[verdict.QuantityLostIncrements] = verdict.Quantity{Value: float64(increments), Unit: "increments", Per: per}
	quantities[verdict.QuantityLostRegisterWrites] = verdict.Quantity{Value: float64(writes), Unit: "writes", Per: per}
	mounted += loss
	switch {
	case len(r.Lost) > 0:
		var names []string
		for _, l := range r.Lost[:min(len(r.Lost), 3)] {
			names = append(names, fmt.Sprintf("%s (%s)", l.DBOp, l.Why))
		}
		if !exercised {
			exercise = fmt.Sprintf("%d acknowledged operation(s) lost", len(r.Lost))
		}
		return verdict.Judgement{Verdict: verdict.Violated, Violation: LostUpdate, Sources: src, At: dbA.ReadAt,
			Reason: fmt.Sprintf("lost update: %d acknowledged operation(s) missing from %s, %d counter increment(s) and %d register write(s): %s%s; %s",
				len(r.Lost), where, increments, writes, strings.Join(names, "; "), mounted, r),
			Exercised: verdict.Exercised(), Exercise: exercise, Quantities: quantities}
	case r.Nobody() > 0:
		if !exercised {
			exercise = fmt.Sprintf("%d value(s) nobody wrote", r.Nobody())
		}
		return verdict.Judgement{Verdict: verdict.Violated, Violation: UnwrittenData, Sources: src, At: dbA.ReadAt,
			Reason:    fmt.Sprintf("unwritten data: %s holds or gave %d value(s) nobody wrote as they are%s; %s", where, r.Nobody(), mounted, r),
			Exercised: verdict.Exercised(), Exercise: exercise, Quantities: quantities}
	case len(r.Unplaced) > 0:
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: fmt.Sprintf("%d acknowledged operation(s) whose effect %s lacks, which the history store's order cannot call lost or kept and only the writers' clocks could%s; %s", len(r.Unplaced), where, mounted, r)}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
		Reason:    fmt.Sprintf("every acknowledged operation's effect is in %s and nothing is there that nobody wrote%s; %s", where, mounted, r),
		Exercised: &exercised, Exercise: exercise, Quantities: quantities}
}
