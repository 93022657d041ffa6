package invariants

import (
	"fmt"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// SingleHistoryName names the single-history invariant.
const SingleHistoryName = "single-history"

// NotLinearizableKey is single-history's violation: a key's history fits
// no order of one copy.
const NotLinearizableKey = "not-linearizable"

// SingleHistory: the reads and writes of every key of the stored data fit
// one order, as they would were one copy of the workload writing.
//
// Reads: elector/history from the "elector" source, the latest readable
// answer in the input: every leader-elected writer's history (each
// operation's invoke, return and outcome) as the history store holds it;
// a PRESERVED only from the last snapshot's, as
// single-writer-at-storage's.
// Checked with checker.CheckKV, per key, with porcupine against the
// store's model: a leader's acknowledged increment is a compare-and-swap
// from the value it read to the value it wrote (what one copy's
// read-modify-write promises), a follower's read a read. An increment
// that failed changed nothing and is left out; one of unknown outcome is
// what the store does with a write whose client gave up (unfenced a plain
// put, fenced a transaction that checks the token only), taking effect at
// any moment after its invoke or never, and is never taken as a value; a
// read that returned nothing is left out.
//
// Fires (Violation "not-linearizable") when a key's history fits no
// order; the reason names the first pair of acknowledged increments that
// replaced one value (a lost update) when there is one. The operations'
// times are their writers' clocks; under a fault that can skew a clock
// (invariant.Input.ClocksSkewable) each operation is placed by the history store's
// order instead, from its invoke's put to its outcome's
// (checker.CheckKVInStoreOrder), which widens it and so never finds an
// order missing that the clocks would have found, and a history read
// without those revisions is INSUFFICIENT_DATA.
//
// Also reads ledger/log from the "ledger" source, every readable answer
// in snapshot order: the ledger's log as each round read it. Checked with
// checker.CheckLogPrefixes: each read must be a prefix of the later ones
// (every whole record it held is, unchanged, at the same offset in every
// read begun after it returned; reads that overlapped in time are in no
// known order and are not compared), as the reads of a log one copy appends to are; a record
// its own writer wrote again (the same incarnation and sequence at the
// same offset, after an append whose outcome it did not learn) is that
// writer's designed retry, not a second history. Fires
// (Violation "not-one-log") when a later read lost or replaced a record an
// earlier read held: the storage showed its readers two histories. An
// unreadable read is a gap, never a value: the reads on either side of it
// are still compared, and the gaps are counted in the reason; but a
// PRESERVED needs the last snapshot's read among them, since a record
// replaced after the last readable read shows in no read. Exercised
// when two compared readable reads differ (the log grew between them) and
// the later holds records of two or more writers: a comparison that could
// show one copy's records replaced by another's. Reads that all failed
// while two copies wrote, and one final log read again after they
// stopped, compare nothing: PRESERVED, not exercised.
//
// A run whose sources answer both questions is judged on both, the worse
// verdict first.
//
// Why: a workload that elects one leader to write promises its clients
// the history one writer makes; client-go's leader election does not
// fence, so two copies that each believe they lead break it.
//
// INSUFFICIENT_DATA when no history is readable or the latest is
// malformed, when the latest readable is not the last snapshot's and
// shows no violation, when it holds no operation that took effect, or
// when the checker could not decide a key within its time and no other
// key fails;
// for the ledger, when fewer than two reads of its log were readable or
// the last snapshot's was not, or when no two readable reads are in a
// known order (each overlapped in time every read begun before it, so
// nothing was compared).
//
// The elector's half is exercised when increments of two or more writers
// were acknowledged on one key (leadership changed hands, or two led at
// once); with one leader no update can be lost to another's (only a stale
// read could still fire), and its PRESERVED says "not exercised". VIOLATED
// is always exercised.
func SingleHistory() invariant.Invariant { return singleHistory{} }

type singleHistory struct{}

func (singleHistory) Name() string         { return SingleHistoryName }
func (singleHistory) Phase() verdict.Phase { return verdict.Safety }
func (singleHistory) Reads() []invariant.Reading {
	return []invariant.Reading{
		{Sources: string(electorSource), Question: storeddata.ElectorHistory},
		{Sources: string(ledgerSource), Question: storeddata.LedgerLog},
	}
}

// NotOneLog is single-history's violation for the ledger: a later read of
// its log lost or replaced a record an earlier read held.
const NotOneLog = "not-one-log"

func (singleHistory) Judge(in invariant.Input) verdict.Judgement {
	snaps := invariant.Ordered(in.Snapshots)
	if !asked(snaps, ledgerSource, storeddata.LedgerLog) {
		return judgeElectorHistory(snaps, in.ClocksSkewable())
	}
	lj := judgeLogPrefixes(snaps)
	if !asked(snaps, electorSource, storeddata.ElectorHistory) {
		return lj
	}
	return worse(judgeElectorHistory(snaps, in.ClocksSkewable()), lj)
}

// asked is whether src was asked q in any snapshot.
func asked(snaps []evidence.Snapshot, src evidence.Source, q evidence.Question) bool {
	for _, s := range snaps {
		if s.Get(src, q).State != evidence.NotAsked {
			return true
		}
	}
	return false
}

// worse is the judgement of two halves of one invariant: VIOLATED before
// INSUFFICIENT_DATA before PRESERVED, the first on a tie.
func worse(a, b verdict.Judgement) verdict.Judgement {
	rank := func(j verdict.Judgement) int {
		switch j.Verdict {
		case verdict.Violated:
			return 0
		case verdict.InsufficientData:
			return 1
		}
		return 2
	}
	if rank(b) < rank(a) {
		return b
	}
	return a
}

// judgeLogPrefixes is the ledger's half of single-history.
func judgeLogPrefixes(snaps []evidence.Snapshot) verdict.Judgement {
	obs, gaps := invariant.Collect[storeddata.LedgerLogValue](snaps, string(ledgerSource), storeddata.LedgerLog)
	src := []string{string(ledgerSource)}
	reads := make([]checker.LogRead, len(obs))
	for i, o := range obs {
		reads[i] = checker.LogRead{At: o.Taken, Done: o.ReadAt, Data: o.Value.Data}
	}
	gapNote := ""
	if len(gaps) > 0 {
		gapNote = fmt.Sprintf("; %d read(s) of the log gave no value (first: %s) and were compared as nothing", len(gaps), gaps[0].Reason)
	}
	if len(reads) < 2 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: fmt.Sprintf("%d readable read(s) of the ledger's log: two are needed to compare%s", len(reads), gapNote)}
	}
	r := checker.CheckLogPrefixes(reads)
	last := obs[len(obs)-1]
	tail := tailAfter(snaps, last.Snapshot, snaps[last.Snapshot].Get(last.Source, storeddata.LedgerLog), ledgerSource, storeddata.LedgerLog)
	retries := ""
	if r.Retries > 0 {
		retries = fmt.Sprintf("; %d record(s) written again by their own writer (the same sequence at the same offset: its designed retry of an append whose outcome it did not learn, no second history)", r.Retries)
	}
	looked := fmt.Sprintf("%d reads of the ledger's log from %s to %s, records of %d writer(s)%s%s", r.Reads, invariant.Stamp(reads[0].At), invariant.Stamp(reads[len(reads)-1].At), r.Writers, retries, gapNote)
	if r.Overlapped > 0 {
		looked += fmt.Sprintf("; %d read(s) overlapped in time a read begun before them and were not compared with it (the two are in no known order)", r.Overlapped)
	}
	if r.Break != nil {
		return verdict.Judgement{Verdict: verdict.Violated, Violation: NotOneLog, Sources: src, At: r.Break.Later,
			Reason:    fmt.Sprintf("the ledger's log is not one log read at growing lengths: %s; %s", r.Break, looked),
			Exercised: verdict.Exercised(), Exercise: fmt.Sprintf("a read at %s lost or replaced a record an earlier read held", invariant.Stamp(r.Break.Later))}
	}
	if r.Compared == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: "no two readable reads of the ledger's log are in a known order: each overlapped in time every read begun before it (a slow read may have read the log after a quicker one begun later), so nothing was compared; " + looked}
	}
	exercised := r.Grew != nil
	held := "every read of the ledger's log extends the one before: "
	var exercise string
	if exercised {
		exercise = fmt.Sprintf("the log grew between the reads at %s and %s, and the later held records of %d writer(s)", invariant.Stamp(r.Grew.Earlier), invariant.Stamp(r.Grew.Later), r.Grew.Writers)
	} else {
		exercise = fmt.Sprintf("not exercised: no two compared readable reads (the earlier returned before the later began) differ with the later holding records of two writers (the reads held records of %d writer(s) in all), so no read could show one copy's records replaced by another's", r.Writers)
		held = "not exercised: " + held
	}
	return tail.hold(verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
		Reason:    held + looked,
		Exercised: &exercised, Exercise: exercise}, "ledger's log")
}

// judgeElectorHistory is the leader-elected writer's half of
// single-history.
func judgeElectorHistory(snaps []evidence.Snapshot, skewable bool) verdict.Judgement {
	hs, v, tail, why := latestElectorHistory(snaps)
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	return tail.hold(judgeKV(hs, v, skewable), "elector history")
}

// judgeKV is the elector's half of single-history from one read of the
// history.
func judgeKV(hs []electorlog.History, v storeddata.ElectorHistoryValue, skewable bool) verdict.Judgement {
	src := []string{string(electorSource)}
	r, err := checker.CheckKV(hs, invariant.LinearizabilityTimeout)
	order := ""
	if skewable {
		r, err = checker.CheckKVInStoreOrder(hs, checker.StoreOrderOf(v.Prefix, historyKVs(v.KVs)), invariant.LinearizabilityTimeout)
		order = "; " + skewNote
		if err != nil {
			return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
				Reason: fmt.Sprintf("under a clock-skew fault the writers' clocks prove nothing, and the history store's order cannot place every operation of the elector's history under %s: %v", v.Prefix, err)}
		}
	}
	if err != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: fmt.Sprintf("the elector's history under %s is malformed: %v", v.Prefix, err), Sources: src}
	}
	checked := 0
	for _, k := range r.Keys {
		checked += k.Checked
	}
	if checked == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: fmt.Sprintf("the elector's history under %s has no operation that took effect (%d writer(s), %d operation(s))", v.Prefix, len(hs), r.Looked.Ops)}
	}
	exercised, exercise := keyWrittenByTwo(hs)
	lostUpdates := 0
	for _, k := range r.Keys {
		lostUpdates += len(k.LostUpdates)
	}
	quantities, loss := lossQuantities(lostUpdates, "increments", electorAcked(hs), skewable)
	order += loss
	for _, k := range r.Keys {
		if k.Result != checker.NotLinearizable {
			continue
		}
		lost := "no two acknowledged increments replaced one value; some read returned a value no order allows"
		if len(k.LostUpdates) > 0 {
			l := k.LostUpdates[0]
			lost = fmt.Sprintf("lost update: %s and %s both replaced %s (%d such pair(s))", l[0], l[1], readOf(l[0].Op), len(k.LostUpdates))
		}
		if !exercised {
			exercise = fmt.Sprintf("key %s fits no order of one copy", k.Key)
		}
		return verdict.Judgement{Verdict: verdict.Violated, Violation: NotLinearizableKey, Sources: src,
			Reason:    fmt.Sprintf("the history of key %s fits no order of one copy: %s; %s%s", k.Key, lost, r, order),
			Exercised: verdict.Exercised(), Exercise: exercise, Quantities: quantities}
	}
	if r.Result() == checker.Undecided {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: fmt.Sprintf("the linearizability checker could not decide every key within %s, and none it decided fails: %s%s", invariant.LinearizabilityTimeout, r, order)}
	}
	held := "every key's history fits one order: "
	if !exercised {
		held = "not exercised: no key had increments of more than one writer (one leader), so no leader's update could be lost to another's; the reads fit one order: "
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
		Reason:    held + r.String() + order,
		Exercised: &exercised, Exercise: exercise, Quantities: quantities}
}

func readOf(op electorlog.Op) string {
	if !op.Found {
		return "no value"
	}
	return fmt.Sprintf("%q", op.Read)
}

// keyWrittenByTwo applies single-history's exercise rule.
func keyWrittenByTwo(hs []electorlog.History) (bool, string) {
	writers := map[string]map[string]bool{}
	for _, h := range hs {
		for _, op := range h.Ops {
			if op.Kind == electorlog.OpIncrement && op.Settled() == history.OutcomeOK {
				if writers[op.Key] == nil {
					writers[op.Key] = map[string]bool{}
				}
				writers[op.Key][h.Start.Writer.Incarnation] = true
			}
		}
	}
	most, key := 0, ""
	for k, w := range writers {
		if len(w) > most || (len(w) == most && k < key) {
			most, key = len(w), k
		}
	}
	if most < 2 {
		return false, fmt.Sprintf("not exercised: no key had increments of two writers acknowledged (%d writer(s) in the history)", len(hs))
	}
	return true, fmt.Sprintf("key %s had increments of %d writers acknowledged", key, most)
}
