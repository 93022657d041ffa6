package invariants

import (
	"fmt"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// electorSource answers the leader-elected writer's question: its
// writers' histories as the history store holds them.
const electorSource evidence.Source = "elector"

// latestElectorHistory is the latest readable elector/history answer in
// snaps (the history grows through a run, so the latest holds every
// operation invoked before it was read), decoded with the workload's own
// code, and the reads after it that gave none (a judgement from it holds
// only as unreadTail.hold says); or why there is none.
func latestElectorHistory(snaps []evidence.Snapshot) ([]electorlog.History, storeddata.ElectorHistoryValue, unreadTail, string) {
	why := "no snapshot to judge"
	for i := len(snaps) - 1; i >= 0; i-- {
		a := snaps[i].Get(electorSource, storeddata.ElectorHistory)
		var w string
		switch a.State {
		case evidence.NotAsked:
			w = fmt.Sprintf("%s was not asked %s", electorSource, storeddata.ElectorHistory)
		case evidence.Unreadable:
			w = fmt.Sprintf("%s could not read %s: %s", electorSource, storeddata.ElectorHistory, a.Reason)
		default:
			tail := tailAfter(snaps, i, a, electorSource, storeddata.ElectorHistory)
			var v storeddata.ElectorHistoryValue
			if err := a.Decode(&v); err != nil {
				return nil, v, tail, fmt.Sprintf("%s's %s: %v", electorSource, storeddata.ElectorHistory, err)
			}
			hs, err := electorlog.DecodeHistories(v.Prefix, historyKVs(v.KVs))
			if err != nil {
				return nil, v, tail, fmt.Sprintf("the elector's history under %s: %v: a history with parts missing cannot say what was accepted", v.Prefix, err)
			}
			if late := checker.ElectorRewrittenInvokes(hs, checker.StoreOrderOf(v.Prefix, historyKVs(v.KVs))); len(late) > 0 {
				return nil, v, tail, fmt.Sprintf("the elector's history under %s is malformed: %v", v.Prefix, late)
			}
			return hs, v, tail, ""
		}
		if i == len(snaps)-1 {
			why = w
		}
	}
	return nil, storeddata.ElectorHistoryValue{}, unreadTail{}, "no readable elector history in the input: " + why
}
