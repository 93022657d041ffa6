package scenario

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// The done phase (PhaseDone): the run becomes its record, once: the run
// verdict (runVerdict), a verdict for every invariant (one never judged is
// INSUFFICIENT_DATA, saying why), the effect coverage, the load, and what
// judging the run again needs. It hands its caller the verdict.Run the
// run folder appends.

// finish turns the run into its record once: every invariant gets a
// verdict (those never judged get INSUFFICIENT_DATA saying why).
func (r *run) finish(specState string) verdict.Run {
	r.enter(PhaseDone)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.finished != nil {
		if specState != "" {
			r.st.finished.SpecState = specState
		}
		return *r.st.finished
	}
	if r.ended.IsZero() {
		r.ended = time.Now()
	}
	required := r.sc.requiredEffectShare()
	if r.sc.arm() == NullArm {
		required = 0
	}
	rv, reason := runVerdict(r.sc.arm(), r.st.failed, r.st.interrupted, r.probes, required, r.span())
	var coverage *verdict.EffectCoverage
	if len(r.probes) > 0 || r.st.whole[PhaseWindow] {
		c := effectCoverage(r.probes, required, r.span())
		coverage = &c
	}
	if l, ok := readLoad(); ok {
		r.load = append(r.load, l)
	}
	js := judgementsOf(r.sc.Invariants, r.decided, reason)
	r.record.Timeline = r.timeline.Timeline()
	st := r.eng
	out := verdict.Run{
		RunID: r.id, Suite: st.name, Scenario: r.sc.ID, Title: r.sc.Title, Arm: string(r.sc.arm()),
		FaultClass: string(r.sc.Fault.Class()), FaultKind: r.sc.Fault.Kind(),
		Labels:  sortedLabels(r.sc),
		Started: r.started.UTC(), Ended: r.ended.UTC(),
		RunVerdict: rv, RunReason: reason, Judgements: js, Timings: r.timings,
		Lab: st.labInfo, GitCommit: st.commit, ConfigHash: st.configHash, SpecState: specState,
		Role: r.sc.role(), ControlOf: slices.Clone(r.sc.mustBreak()), ControlKinds: r.sc.mustBreakKinds(), Load: r.load, Effect: coverage,
		Emulation: r.sc.emulation(st.lab), Repetition: r.rep,
	}
	out.Judging = r.judgingRecord()
	r.st.finished = &out
	r.st.whole[PhaseDone] = true
	return out
}

// runVerdict decides what the whole run says. The rule for the two arms:
//   - any phase failed (reset, ledger, inject, heal) or the run was
//     interrupted → ABORTED: it reached no judgement to trust;
//   - fault arm whose probes that saw the effect attest a smaller share
//     of the window than required (attested: each look speaks for what
//     it saw and half a tick either side, lookReach) → FAULT_INEFFECTIVE, with
//     the coverage: the verdicts would describe a cluster mostly without
//     the fault, or one the probes did not show under it;
//   - null arm whose probe DID see the effect with nothing injected → the
//     control is contaminated → ABORTED, with the probe's detail;
//   - null arm whose probe saw nothing → JUDGED (that is the control
//     working, never FAULT_INEFFECTIVE);
//   - fault arm whose probes attest the required share or more → JUDGED.
//
// A probe that could not look (error) did not see the effect: it counts
// among the probes, not among those that saw it, and attests nothing. A
// window w not known (a record that kept neither its bounds nor the
// events they are read from) is measured by the share of probes instead,
// and the reason says so.
func runVerdict(arm Arm, aborted, interrupted string, probes []probe, required float64, w span) (verdict.RunVerdict, string) {
	if aborted != "" {
		return verdict.RunAborted, aborted
	}
	if interrupted != "" {
		return verdict.RunAborted, interrupted
	}
	var seen *probe
	var last string
	for i := range probes {
		p := probes[i]
		if p.Err != nil {
			last = "probe failed: " + p.Err.Error()
			continue
		}
		last = p.Effect.Detail
		if p.Effect.Observed && seen == nil {
			seen = &probes[i]
		}
	}
	if arm == NullArm {
		if seen != nil {
			return verdict.RunAborted, fmt.Sprintf("null arm: the effect probe saw the fault's effect at %s with nothing injected (%s); the control is contaminated and none of its verdicts count", seen.At.UTC().Format("15:04:05.000Z"), seen.Effect.Detail)
		}
		return verdict.RunJudged, ""
	}
	c := effectCoverage(probes, required, w)
	share := c.Share()
	if c.InTime() {
		share = c.Covered
	}
	if seen != nil && share >= required {
		return verdict.RunJudged, ""
	}
	var reason string
	switch {
	case seen == nil:
		reason = fmt.Sprintf("the effect probe saw no effect in %d probes during the window", c.Probes)
	case c.InTime():
		reason = fmt.Sprintf("the effect probe saw the effect in %d of %d probes during the window, which attest %.0f%% of its %s (each look %s either side of what it saw), under the %.0f%% the scenario requires for the fault to have held through it; first seen at %s (%s)",
			c.Observed, c.Probes, 100*c.Covered, w.To.Sub(w.From).Round(time.Millisecond), w.Resolution, 100*required, seen.At.UTC().Format("15:04:05.000Z"), seen.Effect.Detail)
	default:
		reason = fmt.Sprintf("the effect probe saw the effect in %d of %d probes during the window (%.0f%%; the window's bounds are not recorded, so probes are counted), under the %.0f%% of probes the scenario requires for the fault to have held through it; first seen at %s (%s)",
			c.Observed, c.Probes, 100*c.Share(), 100*required, seen.At.UTC().Format("15:04:05.000Z"), seen.Effect.Detail)
	}
	if c.Failed > 0 {
		reason += fmt.Sprintf(" (%d of them could not look)", c.Failed)
	}
	if last != "" {
		reason += "; last: " + last
	}
	return verdict.FaultIneffective, reason
}

// judgementsOf are the verdicts of invs, in their order: those decided,
// and for any other INSUFFICIENT_DATA saying it was not judged and why
// the run stopped (reason, "" when it did not).
func judgementsOf(invs []invariant.Invariant, decided map[string]verdict.Judgement, reason string) []verdict.Judgement {
	notJudged := "not judged: " + reason
	if reason == "" {
		notJudged = "not judged"
	}
	var js []verdict.Judgement
	for _, inv := range invs {
		j, ok := decided[inv.Name()]
		if !ok {
			j = verdict.Judgement{Invariant: inv.Name(), Phase: inv.Phase(), Verdict: verdict.InsufficientData, Reason: notJudged}
		}
		js = append(js, j)
	}
	return js
}

func sortedLabels(s Scenario) []string {
	ls := s.AllLabels()
	sort.Strings(ls)
	return ls
}

// verdictLine is a run's closing line: its run verdict (with the reason
// when it reached no judgement) and how many invariants came out each way,
// naming the VIOLATED ones.
func verdictLine(id string, rec verdict.Run) string {
	line := fmt.Sprintf("%s: %s", id, rec.RunVerdict)
	if rec.RunReason != "" {
		line += " (" + rec.RunReason + ")"
	}
	counts := map[verdict.Verdict]int{}
	var order []verdict.Verdict
	var violated []string
	for _, j := range rec.Judgements {
		if counts[j.Verdict] == 0 {
			order = append(order, j.Verdict)
		}
		counts[j.Verdict]++
		if j.Verdict == verdict.Violated {
			violated = append(violated, j.Invariant)
		}
	}
	var parts []string
	for _, v := range order {
		part := fmt.Sprintf("%d %s", counts[v], v)
		if v == verdict.Violated {
			part += " (" + strings.Join(violated, ", ") + ")"
		}
		parts = append(parts, part)
	}
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	return line
}

// emulation is what the lab emulates of the run: the fault's, then the
// scenario's own, joined.
func (s Scenario) emulation(l lab.Lab) string {
	parts := []string{fault.EmulationOf(s.Fault, l)}
	if s.Emulation != nil && l != nil {
		parts = append(parts, s.Emulation(l))
	}
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
