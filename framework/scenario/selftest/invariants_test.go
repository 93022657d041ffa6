package selftest

import (
	"fmt"
	"slices"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
)

// noFlag is violated by any snapshot in which memlab shows the flag set
// (after settle: by the sample judged).
type noFlag struct {
	name, flag string
	phase      verdict.Phase
}

func (n noFlag) Name() string         { return n.name }
func (n noFlag) Phase() verdict.Phase { return n.phase }
func (n noFlag) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: string(memlab.SourceFlags), Question: memlab.QuestionSet}}
}
func (n noFlag) Judge(in invariant.Input) verdict.Judgement {
	read := 0
	snaps := in.Snapshots
	if in.Moment == invariant.Final && len(snaps) > 0 {
		// After settle only the sample judged, the last, decides.
		snaps = snaps[len(snaps)-1:]
	}
	for _, s := range snaps {
		var flags []string
		if s.Get(memlab.SourceFlags, memlab.QuestionSet).Decode(&flags) != nil {
			continue
		}
		read++
		if slices.Contains(flags, n.flag) {
			// What it measured, for the reports' median and range over
			// repetitions: how many flags the deciding snapshot showed.
			return verdict.Judgement{Verdict: verdict.Violated, Reason: fmt.Sprintf("flag %s is set (flags %v)", n.flag, flags),
				Sources: []string{string(memlab.SourceFlags)}, At: s.Taken,
				Quantities: map[string]verdict.Quantity{"flags-set": {Value: float64(len(flags)), Unit: "flags"}}}
		}
	}
	if read == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no snapshot had the flags"}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: fmt.Sprintf("flag %s was not set in any of %d snapshots", n.flag, read)}
}

// darkSource reads a source that never answers and claims PRESERVED
// anyway; the engine must not let that claim through.
type darkSource struct{}

func (darkSource) Name() string         { return "dark-source" }
func (darkSource) Phase() verdict.Phase { return verdict.Safety }
func (darkSource) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: string(memlab.SourceDark), Question: memlab.QuestionSet}}
}
func (darkSource) Judge(invariant.Input) verdict.Judgement {
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: "saw nothing wrong"}
}
