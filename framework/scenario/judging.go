package scenario

import (
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// What a run's record keeps so that its evidence can be judged again
// (verdict.Judging), and the timeline each judging step is handed.
//
// An invariant is handed the timeline as it stood when it was judged: the
// pre-fault judgement sees no fault injected, a settle sample's sees no
// event of a later sample. The evidence file keeps the whole timeline, so
// each step keeps its moment, and judging the record again hands each
// step the events seen by then (eventsSeenBy). An event carries the time
// faultline saw it (Event.At), never later than it reached the timeline;
// faultline's own events (inject, heal, a forced deletion) reach it as
// they happen. A cluster event seen by a watcher reaches it with the next
// sample, so one seen after the last sample before a step and delivered
// after the step is handed to that step when judging again and was not
// when the run was judged: it lies after every snapshot the step judges,
// outside every stretch an invariant looks for events in.

// replay is what a run judged again from its record (rejudge.go) reads
// instead of the lab: the recorded timeline.
type replay struct {
	timeline evidence.Timeline
}

// judgingTimeline is the timeline a judging step hands its invariants. In
// a run, it is every event seen so far, and *at is set to now; when a
// recorded run is judged again, it is the recorded events seen by *at.
func (r *run) judgingTimeline(at *time.Time) evidence.Timeline {
	if r.replay != nil {
		return eventsSeenBy(r.replay.timeline, *at)
	}
	tl := r.timeline.Timeline()
	now := time.Now().UTC()
	r.mu.Lock()
	*at = now
	r.mu.Unlock()
	return tl
}

// settleMoment is where the moment the k-th settle sample is judged at is
// kept.
func (r *run) settleMoment(k int) *time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.judging.SettleAt) <= k {
		r.judging.SettleAt = append(r.judging.SettleAt, time.Time{})
	}
	return &r.judging.SettleAt[k]
}

// eventsSeenBy are the events of tl faultline saw by at, in order.
func eventsSeenBy(tl evidence.Timeline, at time.Time) evidence.Timeline {
	var out evidence.Timeline
	for _, e := range tl {
		if !e.At.After(at) {
			out = append(out, e)
		}
	}
	return out
}

// judgingRecord is what the run's record keeps for judging it again; call
// with r.mu held.
func (r *run) judgingRecord() *verdict.Judging {
	j := r.judging
	j.Invariants = judgedInvariants(r.sc.Invariants)
	j.SettleAt = slices.Clone(j.SettleAt)
	j.SettledIn = maps.Clone(j.SettledIn)
	j.Settle = verdict.Duration(r.sc.Settle)
	j.InjectStarted, j.HealStarted, j.HealEnded = utc(r.injectStarted), utc(r.healStarted), utc(r.healEnded)
	j.WindowStarted, j.WindowEnded = utc(r.windowFrom), utc(r.windowTo)
	j.Failed, j.Interrupted = r.st.failed, r.st.interrupted
	if r.replay == nil {
		cfg := r.eng.cfg
		j.SampleEvery = verdict.Duration(cfg.SampleEvery)
		j.OwnApplicability, j.NotApplicable = ownRows(cfg.Applicability, r.faultClass())
		j.FaultClasses = r.faultClasses()
	}
	return &j
}

// judgedInvariants are invs as a record names them.
func judgedInvariants(invs []invariant.Invariant) []verdict.JudgedInvariant {
	out := make([]verdict.JudgedInvariant, 0, len(invs))
	for _, inv := range invs {
		out = append(out, verdict.JudgedInvariant{Name: inv.Name(), Phase: inv.Phase(), Params: invariant.ParamsOf(inv)})
	}
	return out
}

// ownRows says whether table is the suite's own rather than the
// framework's, and if it is, its rows for class.
func ownRows(table invariant.Table, class string) (own bool, rows []verdict.Inapplicable) {
	if reflect.DeepEqual(table, invariant.Applicability) || (len(table) == 0 && len(invariant.Applicability) == 0) {
		return false, nil
	}
	for _, row := range table {
		if row.FaultClass == class {
			rows = append(rows, row)
		}
	}
	return true, rows
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
