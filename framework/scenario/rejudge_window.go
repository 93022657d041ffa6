package scenario

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// Re-judging a record's run verdict: the window and the effect probes
// the recorded timeline holds, measured again with the engine's own rule.

// rejudgeRunVerdict decides the run verdict again with runVerdict, from
// the effect probes the recorded timeline holds, the window's bounds
// (windowOf) and the share the record says the run required, and gives
// the effect coverage measured again (nil when the record had none). A
// record that does not say whether a step failed keeps an ABORTED verdict
// as it is.
func rejudgeRunVerdict(rec verdict.Run, jg verdict.Judging, tl evidence.Timeline, rj *verdict.Rejudged) (verdict.RunVerdict, string, *verdict.EffectCoverage) {
	if rec.Judging == nil && rec.RunVerdict == verdict.RunAborted {
		rj.Notes = append(rj.Notes, "ABORTED kept as recorded: the record does not say whether a step failed or the run was cut short")
		return rec.RunVerdict, rec.RunReason, nil
	}
	required := 0.0
	if rec.Effect != nil {
		required = rec.Effect.Required
	}
	probes := probesOf(tl, rec.FaultKind)
	w := windowOf(rec, jg, tl, rj)
	if jg.WindowStarted.IsZero() {
		probes = connectLooksLasted(probes, rj)
	}
	rv, reason := runVerdict(Arm(rec.Arm), jg.Failed, jg.Interrupted, probes, required, w)
	if rec.Effect == nil {
		return rv, reason, nil
	}
	c := effectCoverage(probes, required, w)
	return rv, reason, &c
}

// windowOf is the recorded run's window for its effect coverage: the
// bounds the record keeps, or, in a record written before it kept them,
// from the engine's own events (the window starts once the fault is
// injected and ends before its heal starts, which also holds the
// sampler's last reads: the share is then a little low), noted in rj. The
// zero span when neither is there: the probes are then counted. A look's
// reach is half the suite's tick, the recorded one; a record that did not
// keep the tick (no judging: the one derived from the pre-fault samples
// is a loaded machine's gap, not the tick) is taken at the engine's
// default, noted.
func windowOf(rec verdict.Run, jg verdict.Judging, tl evidence.Timeline, rj *verdict.Rejudged) span {
	tick := time.Duration(jg.SampleEvery)
	if rec.Judging == nil || tick <= 0 {
		tick = defaultSampleEvery
		rj.Notes = append(rj.Notes, fmt.Sprintf("effect coverage with looks at the engine's default tick, %s: the record keeps no tick of its own", tick))
	}
	w := span{From: jg.WindowStarted, To: jg.WindowEnded, Resolution: lookReach(tick)}
	if w.known() {
		return w
	}
	for _, e := range tl {
		if e.Source != "faultline" {
			continue
		}
		switch {
		case e.Kind == invariant.FaultInjectedEvent && w.To.IsZero():
			w.From = e.At
		case e.Kind == invariant.HealStartedEvent && !w.From.IsZero() && w.To.IsZero():
			w.To = e.At
		}
	}
	if !w.known() {
		rj.Notes = append(rj.Notes, "effect coverage by the share of probes: the record keeps no window bounds, nor the fault-injected and heal-started events to read them from")
		return span{}
	}
	rj.Notes = append(rj.Notes, fmt.Sprintf("effect coverage over the window from the fault-injected event (%s) to the heal-started event (%s): the record predates window bounds", w.From.UTC().Format("15:04:05.000Z"), w.To.UTC().Format("15:04:05.000Z")))
	return w
}

// connectLooksLasted gives the looks of a record written before looks
// kept how long they saw the effect (fault.Effect.Lasted) the stretch a
// cut's connect probe waited: its detail ("TCP from ...: timed out") is
// written only when the connect waited out its whole timeout unanswered,
// which was connectProbeTimeout then as now. Other looks stay moments.
func connectLooksLasted(probes []probe, rj *verdict.Rejudged) []probe {
	n := 0
	for i, p := range probes {
		if p.Err == nil && p.Effect.Observed && p.Effect.Lasted == 0 && strings.HasPrefix(p.Effect.Detail, "TCP from ") && strings.HasSuffix(p.Effect.Detail, ": timed out") {
			probes[i].Effect.Lasted = recordedConnectWait
			n++
		}
	}
	if n > 0 {
		rj.Notes = append(rj.Notes, fmt.Sprintf("%d looks of a connect that timed out taken to have seen the cut for the %s they waited: the record predates looks' own durations", n, recordedConnectWait))
	}
	return probes
}

// recordedConnectWait is how long the cut faults' connect probes waited
// in records written before looks kept their durations: the faults
// package's connectProbeTimeout, 3 s, in every release that wrote such
// records.
const recordedConnectWait = 3 * time.Second

// probesOf are the window's effect probes as the timeline holds them.
func probesOf(tl evidence.Timeline, kind string) []probe {
	var out []probe
	for _, e := range tl {
		if e.Source != "faultline" || e.Subject != "fault/"+kind {
			continue
		}
		switch e.Kind {
		case probeEffectEvent:
			out = append(out, probe{At: e.At, Effect: fault.Effect{Observed: true, Detail: e.Detail, Lasted: e.Lasted}})
		case probeNoEffectEvent:
			out = append(out, probe{At: e.At, Effect: fault.Effect{Detail: e.Detail}})
		case probeFailedEvent:
			out = append(out, probe{At: e.At, Err: errors.New(e.Detail)})
		}
	}
	return out
}
