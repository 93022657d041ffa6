package invariant

import (
	"fmt"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/framework/checker"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
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
// operation's invoke, return and outcome) as the history store holds it.
// Checked with checker.CheckKV, per key, with porcupine against the
// register model acknowledged-writes-survive uses: a leader's increment is
// a compare-and-swap from the value it read to the value it wrote, a
// follower's read a read. An increment that failed changed nothing and is
// left out; one of unknown outcome may or may not have taken effect and
// is never taken as a value; a read that returned nothing is left out.
//
// Fires (Violation "not-linearizable") when a key's history fits no
// order; the reason names the first pair of acknowledged increments that
// replaced one value (a lost update) when there is one. The leader-elected
// writer's store is covered; the ledger's half (its log's records as
// prefixes of one log, each writer's view of it) is not judged here:
// acknowledged-data-survives and single-writer-at-storage judge the
// ledger.
//
// Why: a workload that elects one leader to write promises its clients
// the history one writer makes; client-go's leader election does not
// fence, so two copies that each believe they lead break it.
//
// INSUFFICIENT_DATA when no history is readable or the latest is
// malformed, when it holds no operation that took effect, or when the
// checker could not decide a key within its time and no other key fails.
//
// Exercised when increments of two or more writers were acknowledged on
// one key (leadership changed hands, or two led at once). VIOLATED is
// always exercised.
func SingleHistory() Invariant { return singleHistory{} }

type singleHistory struct{}

func (singleHistory) Name() string         { return SingleHistoryName }
func (singleHistory) Phase() verdict.Phase { return verdict.Safety }
func (singleHistory) Reads() []Reading {
	return []Reading{{Sources: string(electorSource), Question: evidence.ElectorHistory}}
}

func (singleHistory) Judge(in Input) verdict.Judgement {
	hs, v, why := latestElectorHistory(ordered(in.Snapshots))
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	src := []string{string(electorSource)}
	r, err := checker.CheckKV(hs, linearizabilityTimeout)
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
			Reason:    fmt.Sprintf("the history of key %s fits no order of one copy: %s; %s", k.Key, lost, r),
			Exercised: verdict.Exercised(), Exercise: exercise}
	}
	if r.Result() == checker.Undecided {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: fmt.Sprintf("the linearizability checker could not decide every key within %s, and none it decided fails: %s", linearizabilityTimeout, r)}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
		Reason:    "every key's history fits one order: " + r.String(),
		Exercised: &exercised, Exercise: exercise}
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
			if op.Kind == electorlog.OpIncrement && op.Settled() == electorlog.OutcomeOK {
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
		return false, fmt.Sprintf("no key had increments of two writers acknowledged (%d writer(s) in the history)", len(hs))
	}
	return true, fmt.Sprintf("key %s had increments of %d writers acknowledged", key, most)
}
