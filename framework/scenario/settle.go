package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// The settle phase (PhaseSettle): after the scenario's quiesce, if any,
// sampling until every convergence invariant has settled (neither
// violated nor short of evidence) or the settle timeout ends. It hands the
// judge phase a settleResult: the final snapshot, the settle samples
// before it, and the sample each convergence invariant settled in.

// settleResult is what PhaseSettle leaves for the judgement: the final
// snapshot, the settle samples before it, and the first sample in which
// each convergence invariant settled.
type settleResult struct {
	final     *evidence.Snapshot
	earlier   []evidence.Snapshot
	settledIn map[string]*evidence.Snapshot
}

// runSettle runs PhaseSettle: it samples until every convergence
// invariant has settled (neither violated nor short of evidence) or the
// settle timeout ends. judgeConvergence then judges each convergence
// invariant (assert) over the first sample in which it settled,
// or over the last sample, the final snapshot, when it never did. It
// returns nil, the run aborted, when no snapshot could be taken.
//
// Judging each invariant over the sample in which it settled, rather than
// all of them over the last one, matters when one of them never settles
// (a finding, or a positive control of a convergence invariant): the loop
// then runs to the timeout, and a source that happens to be slow at that
// last moment would otherwise decide every other convergence invariant,
// which had long since converged. Every settle sample is kept in the
// record beside the final snapshot: the safety invariants are judged over
// them too.
func (r *run) runSettle(ctx context.Context) *settleResult {
	r.enter(PhaseSettle)
	st := r.eng
	l := st.lab
	if q := r.sc.Quiesce; q != nil {
		qstart := time.Now()
		r.event(QuiesceStartedEvent, "before settling")
		if err := q(ctx, l); err != nil {
			r.event(QuiesceFailedEvent, err.Error())
			r.abort("quiesce", err)
			return nil
		}
		r.event(QuiescedEvent, fmt.Sprintf("after %s", time.Since(qstart).Round(time.Millisecond)))
		r.timed("quiesce", qstart)
		r.progress("quiesce", qstart, nil, "")
	}
	start := time.Now()
	deadline := start.Add(r.sc.Settle)
	var final *evidence.Snapshot
	var all []*evidence.Snapshot
	var lastErr error
	settledIn := map[string]*evidence.Snapshot{}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	done := false
	evidence.Stream(sctx, st.cfg.Sampler, l, st.cfg.SampleEvery, func(snap evidence.Snapshot, events []evidence.Event, err error) bool {
		if err != nil {
			lastErr = err
			r.sampleFailed(snap.Taken, "while settling: "+err.Error())
			return true
		}
		r.addEvents(events)
		final = &snap
		all = append(all, final)
		newly, settled := r.settle(len(all)-1, final, settledIn)
		for _, name := range newly {
			r.event("invariant-settled", fmt.Sprintf("%s, in the sample taken at %s, %s after heal",
				name, snap.Taken.UTC().Format("15:04:05.000"), time.Since(start).Round(time.Millisecond)))
		}
		if settled {
			done = true
			r.event("settled", fmt.Sprintf("after %s", time.Since(start).Round(time.Millisecond)))
			return false
		}
		return true
	})
	if !done && ctx.Err() == nil {
		r.event("settle-timeout", fmt.Sprintf("not converged within %s: %s", r.sc.Settle, strings.Join(names(r.unsettled(settledIn)), ", ")))
	}
	r.mu.Lock()
	switch {
	case done:
		r.judging.SettleEnded = verdict.SettleEndedSettled
	case ctx.Err() == nil:
		r.judging.SettleEnded = verdict.SettleEndedTimeout
	}
	r.mu.Unlock()
	r.timed("settle", start)
	var settled []evidence.Snapshot
	for _, snap := range all {
		settled = append(settled, *snap)
	}
	more := "settled"
	if !done {
		more = "not settled"
	}
	r.progress("settle", start, settled, more)
	if final == nil {
		r.abort("final snapshot", fmt.Errorf("no snapshot could be taken while settling: %v", lastErr))
		return nil
	}
	var earlier []evidence.Snapshot
	for _, snap := range all[:len(all)-1] {
		earlier = append(earlier, *snap)
	}
	r.mu.Lock()
	r.record.Final = final
	r.record.Settle = earlier
	r.mu.Unlock()
	r.complete(PhaseSettle)
	return &settleResult{final: final, earlier: earlier, settledIn: settledIn}
}

// settle judges, over snap, every convergence invariant still to be judged
// that has not settled in an earlier sample, and notes snap in settledIn
// for those it settles: neither violated nor short of evidence. Right
// after a heal the sources are often still unreadable (API servers
// reconnecting to etcd, a VIP moving back); a sample that merely shows no
// violation would give INSUFFICIENT_DATA for what a few seconds more would
// have answered, so it does not settle the invariant. It returns the names
// settled by snap, and whether every one has settled now. An invariant
// short of evidence for good costs the whole settle bound. k is the
// sample's place among the settle samples.
func (r *run) settle(k int, snap *evidence.Snapshot, settledIn map[string]*evidence.Snapshot) (newly []string, all bool) {
	in := invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{*snap}, Timeline: r.judgingTimeline(r.settleMoment(k)), Baseline: r.record.Baseline, FaultClasses: r.faultClasses()}
	all = true
	for _, inv := range r.unsettled(settledIn) {
		if v := invariant.Judge(inv, in).Verdict; v == verdict.Violated || v == verdict.InsufficientData {
			all = false
			continue
		}
		settledIn[inv.Name()] = snap
		newly = append(newly, inv.Name())
	}
	return newly, all
}

// unsettled returns the convergence invariants still to be judged that no
// sample has settled.
func (r *run) unsettled(settledIn map[string]*evidence.Snapshot) []invariant.Invariant {
	var out []invariant.Invariant
	for _, inv := range r.sc.Invariants {
		if _, ok := settledIn[inv.Name()]; !ok && inv.Phase() == verdict.Convergence && !r.isDecided(inv.Name()) {
			out = append(out, inv)
		}
	}
	return out
}

// names are the invariants' names.
func names(invs []invariant.Invariant) []string {
	out := make([]string, len(invs))
	for i, inv := range invs {
		out[i] = inv.Name()
	}
	return out
}
