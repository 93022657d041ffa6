package scenario

import (
	"fmt"
	"sort"

	"github.com/faultline/faultline/framework/verdict"
)

// CheckControls is the self-check over the runs of one suite run: one line
// per control that did not come out as it must. With repetitions it judges
// every repetition of each pair (a control must break what it controls in
// each, a null arm stay clean in each), and a line names its repetition.
//   - A positive control's fault arm (a run whose ControlOf names
//     invariants) must be JUDGED and each invariant it names VIOLATED: a
//     detector that cannot see the breakage it was built for makes every
//     PRESERVED it gives worthless. Where the control names the
//     violation kinds it is built to make (verdict.Run.ControlKinds), the
//     VIOLATED must be of one of them: another kind is another detector
//     firing, not the one the control tests.
//     Each such VIOLATED must name the sources it was judged from.
//   - A null arm must never be VIOLATED, DETECTOR_INVALID or ABORTED
//     (contaminated: its probe saw the effect with nothing injected; or
//     it reached no verdict): that is the detector firing with no fault,
//     or no control at all.
//   - The null arm of a positive control must judge each invariant the
//     control breaks PRESERVED: its readers gave the evidence the
//     detector decides from, and with nothing injected the detector said
//     it holds. INSUFFICIENT_DATA there means the control's sources were
//     not readable enough to decide, so the pair does not show the
//     detector telling a broken run from a clean one.
//
// Any other null arm's INSUFFICIENT_DATA is not a failure of the control
// but a gap in the evidence; Gaps lists those. The runs are the records the engine
// wrote (verdicts.jsonl), so the check reads typed verdicts, whichever
// process ran each spec. Suite.SelfCheck makes the engine run it after
// the suite and fail the suite on any line.
func CheckControls(runs []verdict.Run) []string {
	var problems []string
	names := runNames(runs)
	// controlled: per scenario and repetition, what its fault arm must
	// break, for its null arm.
	controlled := map[string][]string{}
	for _, r := range runs {
		if r.Arm == string(FaultArm) && len(r.ControlOf) > 0 {
			controlled[repKey(r)] = r.ControlOf
		}
	}
	for i, r := range runs {
		name := names[i]
		switch r.Arm {
		case string(FaultArm):
			verdicts := verdictsOf(r)
			for _, inv := range r.ControlOf {
				v, ok := verdicts[inv]
				other := ""
				if j := judgementOf(r, inv); j != nil && v == verdict.Violated {
					other = verdict.OtherKind(*j, r.ControlKindsOf(inv))
				}
				switch {
				case r.RunVerdict != verdict.RunJudged:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s reached no verdict: the run is %s", name, inv, r.RunVerdict))
				case !ok:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s: the scenario does not judge %s", name, inv, inv))
				case v != verdict.Violated:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s judged %s, not VIOLATED", name, inv, v))
				case other != "":
					problems = append(problems, fmt.Sprintf("%s: positive control of %s judged %s", name, inv, other))
				case len(sourcesOf(r, inv)) == 0:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s judged VIOLATED from no named source", name, inv))
				}
			}
		case string(NullArm):
			if r.RunVerdict == verdict.RunAborted {
				// An aborted null arm (failed reset, interrupted, or a probe
				// that saw the effect with nothing injected) is no control.
				problems = append(problems, fmt.Sprintf("%s: null arm reached no verdict (ABORTED)", name))
				continue
			}
			verdicts := verdictsOf(r)
			for _, inv := range sortedKeys(verdicts) {
				if v := verdicts[inv]; v == verdict.Violated || v == verdict.DetectorInvalid {
					problems = append(problems, fmt.Sprintf("%s: null arm judged %s %s with no fault injected", name, inv, v))
				}
			}
			for _, inv := range controlled[repKey(r)] {
				switch v, ok := verdicts[inv]; {
				case !ok:
					problems = append(problems, fmt.Sprintf("%s: null arm of a positive control of %s does not judge it", name, inv))
				case v == verdict.InsufficientData:
					problems = append(problems, fmt.Sprintf("%s: null arm of a positive control of %s judged it INSUFFICIENT_DATA: its sources did not give the evidence to decide, so the control does not show the detector telling a clean run", name, inv))
				}
			}
		}
	}
	return problems
}

// repKey names a scenario's repetition, whichever its arm.
func repKey(r verdict.Run) string {
	return fmt.Sprintf("%s\x00%d", r.Scenario, r.RepetitionNumber())
}

// sourcesOf are the sources r's judgement of inv names.
func sourcesOf(r verdict.Run, inv string) []string {
	if j := judgementOf(r, inv); j != nil {
		return j.Sources
	}
	return nil
}

// judgementOf is r's judgement of inv (the last, as verdictsOf takes);
// nil if none.
func judgementOf(r verdict.Run, inv string) *verdict.Judgement {
	var out *verdict.Judgement
	for i := range r.Judgements {
		if r.Judgements[i].Invariant == inv {
			out = &r.Judgements[i]
		}
	}
	return out
}

// Gaps lists the null arms' invariants judged INSUFFICIENT_DATA: no
// negative control was established for them in this run (for a positive
// control's own invariants, CheckControls counts that as a failure too).
func Gaps(runs []verdict.Run) []string {
	var out []string
	names := runNames(runs)
	for i, r := range runs {
		if r.Arm != string(NullArm) {
			continue
		}
		verdicts := verdictsOf(r)
		for _, inv := range sortedKeys(verdicts) {
			if verdicts[inv] == verdict.InsufficientData {
				out = append(out, fmt.Sprintf("%s: %s INSUFFICIENT_DATA", names[i], inv))
			}
		}
	}
	return out
}

// runNames names each run as its spec is named, "<scenario> [<arm>]", and
// where its pair ran in several repetitions, which one: "<scenario>
// [<arm>] repetition 2".
func runNames(runs []verdict.Run) []string {
	reps := map[string]map[int]bool{}
	for _, r := range runs {
		k := pairKey(r.Scenario, r.Arm)
		if reps[k] == nil {
			reps[k] = map[int]bool{}
		}
		reps[k][r.RepetitionNumber()] = true
	}
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = pairKey(r.Scenario, r.Arm)
		if len(reps[names[i]]) > 1 {
			names[i] += fmt.Sprintf(" repetition %d", r.RepetitionNumber())
		}
	}
	return names
}

func verdictsOf(r verdict.Run) map[string]verdict.Verdict {
	out := map[string]verdict.Verdict{}
	for _, j := range r.Judgements {
		out[j.Invariant] = j.Verdict
	}
	return out
}

func sortedKeys(m map[string]verdict.Verdict) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
