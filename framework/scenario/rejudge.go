package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/record"
	"github.com/faultline/faultline/framework/verdict"
)

// Judging a recorded run again: the run's evidence is handed, step by
// step, to the engine's own judging (judgePreFault, settle,
// judgeConvergence, judgeSafety, runVerdict), with the invariants
// re-created from the record by name and parameters (invariant.Decode)
// and each step's timeline cut at the moment the step was judged
// (judging.go). Nothing is sampled: what the run did not record cannot be
// judged, and is named. The safety invariants are judged over every
// sample the run took, through its last settle sample, even where the
// current checker would have stopped settling sooner: those samples are
// what the run saw, and the safety verdict is a verdict over them.

// RejudgeOptions say who judges again, and when.
type RejudgeOptions struct {
	// At is when the run is judged again (Rejudged.At).
	At time.Time
	// Checker is the commit of the code judging again (Rejudged.GitCommit).
	Checker string
	// FolderApplicability is the applicability table of the run's folder
	// (record.ReadApplicability), nil if it has none: a record written
	// before runs kept their own table's rows is judged with it when it
	// differs from the framework's.
	FolderApplicability []verdict.Inapplicable
}

// ErrAlreadyRejudged: the record is itself a re-judged one; the run is
// judged again from the record the engine wrote.
var ErrAlreadyRejudged = errors.New("the record was made by re-judging, not by the run")

// Rejudge judges a recorded run's evidence again with the invariants and
// the engine's judging as they are in this program, and returns the
// record with the new verdicts: the recorded run's fields, its judgements
// and run verdict judged again, its Judging as used, and Rejudged saying
// when, by which checker and which invariants could not be judged again
// and why (those have no judgement). ev is the run's evidence, nil when
// the folder has none.
//
// An invariant no package linked into the program registers is an error
// wrapping invariant.ErrUnknown: the program lacks the code, so nothing
// it would give could stand for the current checker.
func Rejudge(rec verdict.Run, ev *evidence.Record, opt RejudgeOptions) (verdict.Run, error) {
	if rec.Rejudged != nil {
		return verdict.Run{}, fmt.Errorf("run %s: %w (at %s): judge the run folder's own record again", rec.RunID, ErrAlreadyRejudged, rec.Rejudged.At.UTC().Format(time.RFC3339))
	}
	at := opt.At
	if at.IsZero() {
		at = time.Now()
	}
	out := rec
	out.Judgements = nil
	out.Rejudged = &verdict.Rejudged{At: at.UTC(), GitCommit: opt.Checker}
	var jg verdict.Judging
	if rec.Judging != nil {
		jg = *rec.Judging
		jg.SettleAt = slices.Clone(jg.SettleAt)
	} else {
		jg = deriveJudging(rec, ev, opt.FolderApplicability, out.Rejudged)
	}
	if jg.FaultClasses == nil && Arm(rec.Arm) != NullArm && rec.FaultClass != "" {
		// A record written before it kept what the run injected: its
		// fault's class stands for it (a compound's earlier parts are
		// not known).
		jg.FaultClasses = []string{rec.FaultClass}
		out.Rejudged.Notes = append(out.Rejudged.Notes, fmt.Sprintf("the record does not keep the classes of what the run injected: its fault class %s stands for them", rec.FaultClass))
	}
	invs, err := reCreate(rec, jg.Invariants, out.Rejudged)
	if err != nil {
		return verdict.Run{}, err
	}
	recorded := jg
	out.Judging = &recorded
	var none string
	switch {
	case ev == nil:
		none = "the run folder holds no evidence of the run"
	case rec.Judging == nil && jg.PreFaultAt.IsZero() && len(ev.PreFault) == 0 && (len(ev.Window) > 0 || ev.Final != nil):
		none = "the record was written before runs sampled a pre-fault window: without one, a condition already broken before the fault cannot be told apart from one the fault caused (DETECTOR_INVALID)"
	case !jg.PreFaultAt.IsZero() && ev.Baseline == nil:
		none = "the run was judged before its fault, but its evidence has no baseline snapshot"
	}
	if none != "" {
		// Nothing is judged again: what the record would have been read
		// for does not apply, and the run verdict stays as recorded.
		notRejudgedAll(out.Rejudged, invs, none)
		out.Rejudged.Notes = nil
		return out, nil
	}
	table, own := rejudgeTable(jg)
	if own {
		out.Rejudged.Notes = append(out.Rejudged.Notes, "NOT_APPLICABLE from the rows of the suite's own applicability table the record holds, not the framework's")
	}
	if !jg.PreFaultAt.IsZero() {
		invs = longEnoughBeforeTheFault(invs, table, rec.FaultClass, *ev.Baseline, ev.PreFault, time.Duration(jg.SampleEvery), out.Rejudged)
	}

	sc := Scenario{ID: rec.Scenario, Title: rec.Title, Arm: Arm(rec.Arm), Invariants: invs,
		Settle: time.Duration(jg.Settle), ControlOf: record.ControlledInvariants(rec),
		ControlKinds: rec.ControlKinds}
	r := &run{sc: sc, id: rec.RunID, decided: map[string]verdict.Judgement{}, class: rec.FaultClass,
		timings: map[string]float64{}, judging: jg, replay: &replay{timeline: ev.Timeline}, record: *ev,
		injectStarted: jg.InjectStarted, healStarted: jg.HealStarted, healEnded: jg.HealEnded,
		windowFrom: jg.WindowStarted, windowTo: jg.WindowEnded}
	if !jg.PreFaultAt.IsZero() {
		r.judgePreFault(table, *ev.Baseline, ev.PreFault)
	}
	if !jg.ConvergenceAt.IsZero() && ev.Final != nil {
		r.judgeConvergence(r.settleAgain(out.Rejudged))
	}
	if !jg.SafetyAt.IsZero() {
		r.judgeSafety()
	}

	rv, reason, effect := rejudgeRunVerdict(rec, jg, ev.Timeline, out.Rejudged)
	out.RunVerdict, out.RunReason = rv, reason
	if effect != nil {
		out.Effect = effect
	}
	out.Judgements = judgementsOf(r.sc.Invariants, r.decided, reason)
	again := *r.judgingRecord()
	again.Invariants = recorded.Invariants
	again.Failed, again.Interrupted = recorded.Failed, recorded.Interrupted
	out.Judging = &again
	return out, nil
}

// reCreate builds the run's invariants from their recorded names and
// parameters; one that cannot be built is named in rj with why, and left
// out. A name no linked package registers is an error.
func reCreate(rec verdict.Run, recorded []verdict.JudgedInvariant, rj *verdict.Rejudged) ([]invariant.Invariant, error) {
	var out []invariant.Invariant
	for _, ji := range recorded {
		inv, err := invariant.Decode(ji.Name, ji.Params)
		switch {
		case errors.Is(err, invariant.ErrUnknown):
			return nil, fmt.Errorf("run %s (scenario %s) judged invariant %q, which no package linked into this program registers (invariant.Register): %w", rec.RunID, rec.Scenario, ji.Name, err)
		case errors.Is(err, invariant.ErrNoParams) && rec.Judging == nil:
			rj.NotRejudged = append(rj.NotRejudged, verdict.NotRejudged{Invariant: ji.Name,
				Why: "the record was written before runs kept their invariants' parameters, and " + ji.Name + " is built with some (its bounds)"})
		case err != nil:
			rj.NotRejudged = append(rj.NotRejudged, verdict.NotRejudged{Invariant: ji.Name, Why: err.Error()})
		default:
			out = append(out, inv)
		}
	}
	return out, nil
}

func notRejudgedAll(rj *verdict.Rejudged, invs []invariant.Invariant, why string) {
	for _, inv := range invs {
		rj.NotRejudged = append(rj.NotRejudged, verdict.NotRejudged{Invariant: inv.Name(), Why: why})
	}
}

// rejudgeTable is the applicability table to judge again with: the
// framework's as it is now, unless the run was judged with its suite's
// own, whose rows for the run's fault class the record holds.
func rejudgeTable(jg verdict.Judging) (invariant.Table, bool) {
	if jg.OwnApplicability {
		return invariant.Table(jg.NotApplicable), true
	}
	return invariant.Applicability, false
}

// longEnoughBeforeTheFault keeps the invariants the recorded pre-fault
// window was long enough for (preFaultLength), as the engine would not
// have gone on with a shorter one: a condition an invariant could not yet
// have fired on then might have been broken before the fault. Those not
// applicable under the table need none.
func longEnoughBeforeTheFault(invs []invariant.Invariant, table invariant.Table, class string, baseline evidence.Snapshot, preFault []evidence.Snapshot, every time.Duration, rj *verdict.Rejudged) []invariant.Invariant {
	var out []invariant.Invariant
	for _, inv := range invs {
		if _, na := table.Lookup(class, inv.Name()); na {
			out = append(out, inv)
			continue
		}
		rounds, span := preFaultLength([]invariant.Invariant{inv}, every)
		if preFaultLongEnough(baseline, preFault, rounds, span) {
			out = append(out, inv)
			continue
		}
		got := time.Duration(0)
		if len(preFault) > 0 {
			got = preFault[len(preFault)-1].Taken.Sub(baseline.Taken)
		}
		rj.NotRejudged = append(rj.NotRejudged, verdict.NotRejudged{Invariant: inv.Name(),
			Why: fmt.Sprintf("the recorded pre-fault window (%d samples, the last %s after the baseline) is shorter than the %d rounds spanning more than %s it needs to be able to fire before the fault, so a condition already broken then could not be ruled out",
				len(preFault), got.Round(time.Millisecond), rounds, span)})
	}
	return out
}

// settleAgain runs the settle loop over the recorded settle samples, in
// order, as runSettle does over those it takes: each convergence
// invariant settles in the first sample in which it is neither violated
// nor short of evidence, and the loop ends once all have. A convergence
// invariant that settles in none of them is judged on the last, the final
// snapshot, when the run's settling ran to its timeout (or was cut
// short); when it ended because every convergence invariant had settled
// by the checker the run was judged with, the run sampled no further, and
// what the current checker would have judged then is not in the record:
// the invariant is named in rj and not judged.
func (r *run) settleAgain(rj *verdict.Rejudged) *settleResult {
	samples := append(append([]evidence.Snapshot(nil), r.record.Settle...), *r.record.Final)
	if len(r.judging.SettleAt) != len(samples) {
		if len(r.judging.SettleAt) > 0 {
			rj.Notes = append(rj.Notes, fmt.Sprintf("the record holds %d moments for %d settle samples: each judged with the events seen by the next sample's start instead", len(r.judging.SettleAt), len(samples)))
		}
		r.judging.SettleAt = derivedSettleMoments(samples, r.judging.ConvergenceAt)
	}
	settledIn := map[string]*evidence.Snapshot{}
	var final *evidence.Snapshot
	n := 0
	for k := range samples {
		final = &samples[k]
		n = k + 1
		if _, all := r.settle(k, final, settledIn); all {
			break
		}
	}
	if unsettled := r.unsettled(settledIn); len(unsettled) > 0 && r.judging.SettleEnded == verdict.SettleEndedSettled {
		for _, inv := range unsettled {
			rj.NotRejudged = append(rj.NotRejudged, verdict.NotRejudged{Invariant: inv.Name(),
				Why: fmt.Sprintf("it settles in none of the %d settle samples recorded (the last taken at %s): the run stopped settling there because every convergence invariant had settled by the checker it was judged with, and would have sampled on for up to its settle timeout%s under this one",
					len(samples), final.Taken.UTC().Format("15:04:05.000"), settleTimeoutOf(r.sc.Settle))})
		}
		r.sc.Invariants = slices.DeleteFunc(r.sc.Invariants, func(inv invariant.Invariant) bool { return slices.Contains(unsettled, inv) })
	}
	return &settleResult{final: final, earlier: samples[:n-1], settledIn: settledIn}
}

// derivedSettleMoments are the moments the settle samples are taken to
// have been judged at when the record does not hold them: each by the
// next one's start, when its events had all been seen, and the last at
// the convergence invariants' judgement.
func derivedSettleMoments(samples []evidence.Snapshot, last time.Time) []time.Time {
	out := make([]time.Time, len(samples))
	for k := range samples {
		if k+1 < len(samples) {
			out[k] = samples[k+1].Taken
		} else {
			out[k] = last
		}
	}
	return out
}

// deriveJudging reads what a record written before runs kept their
// Judging holds of it from the record and the engine's own timeline
// events, and notes in rj what it took from where.
func deriveJudging(rec verdict.Run, ev *evidence.Record, folderTable []verdict.Inapplicable, rj *verdict.Rejudged) verdict.Judging {
	var jg verdict.Judging
	for _, j := range rec.Judgements {
		jg.Invariants = append(jg.Invariants, verdict.JudgedInvariant{Name: j.Invariant, Phase: j.Phase})
	}
	switch {
	case folderTable == nil:
		rj.Notes = append(rj.Notes, "NOT_APPLICABLE from the framework's applicability table as it is now: neither the record nor its folder holds the table it was judged with")
	case reflect.DeepEqual(invariant.Table(folderTable), invariant.Applicability) || (len(folderTable) == 0 && len(invariant.Applicability) == 0):
	default:
		jg.OwnApplicability = true
		for _, row := range folderTable {
			if row.FaultClass == rec.FaultClass {
				jg.NotApplicable = append(jg.NotApplicable, row)
			}
		}
		rj.Notes = append(rj.Notes, "the folder's applicability table differs from the framework's as it is now, and the record does not say whether it was the suite's own: its rows are used")
	}
	if ev == nil {
		return jg
	}
	scenarioEvent := func(kind string) (evidence.Event, bool) {
		for _, e := range ev.Timeline {
			if e.Source == "faultline" && e.Subject == "scenario/"+rec.Scenario && e.Kind == kind {
				return e, true
			}
		}
		return evidence.Event{}, false
	}
	if e, ok := scenarioEvent("pre-fault-window"); ok {
		jg.PreFaultAt = e.At
	}
	if ev.Baseline != nil && len(ev.PreFault) > 0 {
		prev := ev.Baseline.Taken
		var longest time.Duration
		for _, s := range ev.PreFault {
			longest = max(longest, s.Taken.Sub(prev))
			prev = s.Taken
		}
		jg.SampleEvery = verdict.Duration(longest)
		rj.Notes = append(rj.Notes, "the sampling interval taken as the longest between the pre-fault samples (not recorded)")
	}
	if e, ok := scenarioEvent("ledger-recorded"); ok {
		jg.InjectStarted = e.At
		rj.Notes = append(rj.Notes, "the inject's start taken from the heal ledger's entry, written just before it (not recorded)")
	}
	if e, ok := scenarioEvent(invariant.HealStartedEvent); ok {
		jg.HealStarted = e.At
	}
	if e, ok := scenarioEvent(invariant.FaultHealedEvent); ok {
		jg.HealEnded = e.At
	} else if e, ok := scenarioEvent("heal-failed"); ok {
		jg.HealEnded = e.At
	}
	var judged time.Time
	if e, ok := scenarioEvent("settled"); ok {
		jg.SettleEnded, judged = verdict.SettleEndedSettled, e.At
	} else if e, ok := scenarioEvent("settle-timeout"); ok {
		jg.SettleEnded, judged = verdict.SettleEndedTimeout, e.At
		if d, err := time.ParseDuration(strings.TrimPrefix(strings.SplitN(e.Detail, ":", 2)[0], "not converged within ")); err == nil {
			jg.Settle = verdict.Duration(d)
		}
	} else if len(ev.Timeline) > 0 {
		judged = ev.Timeline[len(ev.Timeline)-1].At
	}
	if ev.Final != nil {
		jg.ConvergenceAt = judged
	}
	for _, j := range rec.Judgements {
		if j.Phase == verdict.Safety && j.Verdict != verdict.NotApplicable && j.Verdict != verdict.DetectorInvalid && !strings.HasPrefix(j.Reason, "not judged") {
			jg.SafetyAt = judged
		}
	}
	rj.Notes = append(rj.Notes, "each judgement's timeline cut at the engine's own event just before it (pre-fault-window, settled or settle-timeout), each settle sample's at the next sample's start: the record does not hold when each was judged")
	return jg
}
