package disagree

import (
	"fmt"
	"sort"
	"strings"

	"github.com/faultline/faultline/framework/verdict"
)

// ControlLabelPrefix marks a positive control: "control:single-copy" on a
// scenario known to break single-copy.
const ControlLabelPrefix = "control:"

// SpecRun is what the self-check needs of one finished spec: its labels and
// the verdicts the engine reported for it.
type SpecRun struct {
	Name       string
	Labels     []string
	RunVerdict verdict.RunVerdict
	Verdicts   map[string]verdict.Verdict
}

func (s SpecRun) arm() string {
	for _, l := range s.Labels {
		if a, ok := strings.CutPrefix(l, "arm:"); ok {
			return a
		}
	}
	return ""
}

// controls names the invariants s is a positive control of.
func (s SpecRun) controls() []string { return ControlsOf(s.Labels) }

// ControlsOf names the invariants that labels mark a scenario as a
// positive control of.
func ControlsOf(labels []string) []string {
	var out []string
	for _, l := range labels {
		if inv, ok := strings.CutPrefix(l, ControlLabelPrefix); ok {
			out = append(out, inv)
		}
	}
	return out
}

// CheckControls checks the suite's controls over the specs that ran and
// returns one line per control that did not come out as it must:
//   - a positive control's fault arm must be judged and its invariant
//     VIOLATED: a detector that cannot see the breakage it was built for
//     makes every PRESERVED it gives worthless;
//   - a null arm must never be VIOLATED, DETECTOR_INVALID or contaminated
//     (its probe saw the effect with nothing injected): that is the
//     detector firing with no fault.
//
// A null arm's INSUFFICIENT_DATA is not a failure of the control but a gap
// in the evidence; Gaps lists those.
func CheckControls(runs []SpecRun) []string {
	var problems []string
	for _, s := range runs {
		switch s.arm() {
		case "fault":
			for _, inv := range s.controls() {
				v, ok := s.Verdicts[inv]
				switch {
				case s.RunVerdict != verdict.RunJudged:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s reached no verdict: the run is %s", s.Name, inv, s.RunVerdict))
				case !ok:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s: the scenario does not judge %s", s.Name, inv, inv))
				case v != verdict.Violated:
					problems = append(problems, fmt.Sprintf("%s: positive control of %s judged %s, not VIOLATED", s.Name, inv, v))
				}
			}
		case "null":
			if s.RunVerdict == verdict.RunAborted {
				// An aborted null arm (failed reset, interrupted, or a probe
				// that saw the effect with nothing injected) is no control.
				problems = append(problems, fmt.Sprintf("%s: null arm reached no verdict (ABORTED)", s.Name))
				continue
			}
			for _, inv := range sortedKeys(s.Verdicts) {
				if v := s.Verdicts[inv]; v == verdict.Violated || v == verdict.DetectorInvalid {
					problems = append(problems, fmt.Sprintf("%s: null arm judged %s %s with no fault injected", s.Name, inv, v))
				}
			}
		}
	}
	return problems
}

// Gaps lists the null arms' invariants judged INSUFFICIENT_DATA: no
// negative control was established for them in this run.
func Gaps(runs []SpecRun) []string {
	var out []string
	for _, s := range runs {
		if s.arm() != "null" {
			continue
		}
		for _, inv := range sortedKeys(s.Verdicts) {
			if s.Verdicts[inv] == verdict.InsufficientData {
				out = append(out, fmt.Sprintf("%s: %s INSUFFICIENT_DATA", s.Name, inv))
			}
		}
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
