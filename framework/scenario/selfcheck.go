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
//     PRESERVED it gives worthless.
//   - A null arm must never be VIOLATED, DETECTOR_INVALID or ABORTED
//     (contaminated: its probe saw the effect with nothing injected; or
//     it reached no verdict): that is the detector firing with no fault,
//     or no control at all.
//
// A null arm's INSUFFICIENT_DATA is not a failure of the control but a gap
// in the evidence; Gaps lists those. The runs are the records the engine
// wrote (verdicts.jsonl), so the check reads typed verdicts, whichever
// process ran each spec. Suite.SelfCheck makes the engine run it after
// the suite and fail the suite on any line.
func CheckControls(runs []verdict.Run) []string {
	var problems []string
	names := runNames(runs)
	for i, r := range runs {
		name := names[i]
		switch r.Arm {
		case string(FaultArm):
			verdicts := verdictsOf(r)
			for _, inv := range r.ControlOf {
				v, ok := verdicts[inv]
				switch {
				case r.RunVerdict != verdict.RunJudged:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s reached no verdict: the run is %s", name, inv, r.RunVerdict))
				case !ok:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s: the scenario does not judge %s", name, inv, inv))
				case v != verdict.Violated:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s judged %s, not VIOLATED", name, inv, v))
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
		}
	}
	return problems
}

// Gaps lists the null arms' invariants judged INSUFFICIENT_DATA: no
// negative control was established for them in this run.
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
