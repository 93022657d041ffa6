package invariants

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/fixtures/ledgerlog"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// ledgerSource answers the ledger's questions: its log as the volume
// holds it and its writers' histories as the external store holds them.
const ledgerSource evidence.Source = "ledger"

// historyKVs are a history answer's keys as the workloads' code reads
// them, with the store's revisions.
func historyKVs(stored []storeddata.StoredKV) []history.KV {
	kvs := make([]history.KV, len(stored))
	for i, kv := range stored {
		kvs[i] = history.KV{Key: kv.Key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
	}
	return kvs
}

// skewNote is what an invariant says when the run's fault can skew clocks
// and it places the writers by the history store's order instead.
const skewNote = "under a clock-skew fault the writers' clocks prove nothing, so what they did is placed by the history store's order (each operation between its invoke's put and its outcome's)"

// decodedHistories decodes a history answer (what, in errors) with the
// workload's own code, and refuses one whose keys a late invoke put may
// have rewritten (late: the workload's checker.*RewrittenInvokes).
func decodedHistories[H any](what string, v storeddata.LedgerHistoryValue, decode func(string, []history.KV) ([]H, error), late func([]H, checker.StoreOrder) checker.Rewritten) ([]H, error) {
	hs, err := decode(v.Prefix, historyKVs(v.KVs))
	if err != nil {
		return nil, fmt.Errorf("%s under %s: %w", what, v.Prefix, err)
	}
	if r := late(hs, checker.StoreOrderOf(v.Prefix, historyKVs(v.KVs))); len(r) > 0 {
		return nil, fmt.Errorf("%s under %s is malformed: %w", what, v.Prefix, r)
	}
	return hs, nil
}

// ledgerHistories decodes the ledger's history answer (decodedHistories).
func ledgerHistories(v storeddata.LedgerHistoryValue) ([]ledgerlog.History, error) {
	return decodedHistories("the ledger's history", v, ledgerlog.DecodeHistories, checker.LedgerRewrittenInvokes)
}

// answerOf returns the ledger source's answer to q in s, decoded into v,
// or why there is none.
func answerOf(s evidence.Snapshot, q evidence.Question, v any) (evidence.Answer, string) {
	return sourceAnswer(s, ledgerSource, q, v)
}

// sourceAnswer returns src's answer to q in s, decoded into v, or why
// there is none.
func sourceAnswer(s evidence.Snapshot, src evidence.Source, q evidence.Question, v any) (evidence.Answer, string) {
	a := s.Get(src, q)
	switch a.State {
	case evidence.NotAsked:
		return a, fmt.Sprintf("%s was not asked %s", src, q)
	case evidence.Unreadable:
		return a, fmt.Sprintf("%s could not read %s: %s", src, q, a.Reason)
	}
	if err := a.Decode(v); err != nil {
		return a, fmt.Sprintf("%s's %s: %v", src, q, err)
	}
	return a, ""
}

// readBegan is when a read began: its AskedAt, else its round's start,
// which is never later.
func readBegan(a evidence.Answer, s evidence.Snapshot) time.Time {
	if !a.AskedAt.IsZero() {
		return a.AskedAt
	}
	return s.Taken
}
