package drills

import (
	"fmt"
	"strings"

	"github.com/faultline/faultline/framework/evidence"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// DeletionsCompleteName names the deletions-complete invariant.
const DeletionsCompleteName = "deletions-complete"

// DeletionsComplete: once the fault is healed, no pod of the drill stays
// Terminating. A pod marked for deletion while its node was gone is
// removed only when the node's kubelet confirms its containers stopped;
// the node back, that confirmation must come without anyone forcing it.
//
// Reads drill/pods from every API server; judged on the sample it is
// handed last (the settle sample it settled in, or the final snapshot),
// from the API servers that answered there. The earlier samples only say
// whether it was exercised: whether any pod of the drill was Terminating
// at all since the fault.
func DeletionsComplete() invariant.Invariant { return deletionsComplete{} }

// Registered by name, so that a record of a drill run can be judged
// again (invariant.Decode).
func init() { invariant.Register(DeletionsCompleteName, invariant.Plain(DeletionsComplete)) }

type deletionsComplete struct{}

func (deletionsComplete) Name() string         { return DeletionsCompleteName }
func (deletionsComplete) Phase() verdict.Phase { return verdict.Convergence }
func (deletionsComplete) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: "apiserver/*", Question: QuestionPods}}
}

func (deletionsComplete) Judge(in invariant.Input) verdict.Judgement {
	if len(in.Snapshots) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no snapshot to judge"}
	}
	stuck, sources := terminating(in.Snapshots[len(in.Snapshots)-1])
	if len(sources) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server listed the drill's pods in the judged sample"}
	}
	if len(stuck) > 0 {
		return verdict.Judgement{Verdict: verdict.Violated, Sources: sources, Reason: "pods still Terminating: " + strings.Join(stuck, "; "),
			Exercised: verdict.Exercised(), Exercise: "pods Terminating in the judged sample"}
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Sources: sources, Reason: "no pod of the drill is Terminating"}
	earlier := in.Snapshots[:len(in.Snapshots)-1]
	for _, snap := range earlier {
		if stuck, _ := terminating(snap); len(stuck) > 0 {
			j.Exercised, j.Exercise = verdict.Exercised(), "earlier, at "+snap.Taken.UTC().Format("15:04:05.000")+": "+stuck[0]
			return j
		}
	}
	if len(earlier) == 0 {
		j.Exercise = "not known: the input holds only the judged sample"
		return j
	}
	j.Exercised = verdict.NotExercised()
	j.Exercise = fmt.Sprintf("no pod of the drill Terminating in any of %d earlier sample(s)", len(earlier))
	return j
}

// terminating lists the drill's pods with a deletionTimestamp in snap, per
// API server that listed them, and those servers.
func terminating(snap evidence.Snapshot) (stuck, sources []string) {
	for _, src := range snap.Sources() {
		if !strings.HasPrefix(string(src), "apiserver/") {
			continue
		}
		var v PodsValue
		if err := snap.Get(src, QuestionPods).Decode(&v); err != nil {
			continue
		}
		sources = append(sources, string(src))
		for _, p := range v.Pods {
			if p.DeletionTimestamp != nil {
				stuck = append(stuck, fmt.Sprintf("%s (uid %s, on %s, deletionTimestamp %s, per %s)", p.Name, p.UID, p.Node, p.DeletionTimestamp.Format("15:04:05"), src))
			}
		}
	}
	return stuck, sources
}
