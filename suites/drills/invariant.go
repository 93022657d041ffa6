package drills

import (
	"fmt"
	"strings"

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
// Reads drill/pods from every API server; judged on the final snapshot
// from the API servers that answered there.
func DeletionsComplete() invariant.Invariant { return deletionsComplete{} }

type deletionsComplete struct{}

func (deletionsComplete) Name() string         { return DeletionsCompleteName }
func (deletionsComplete) Phase() verdict.Phase { return verdict.Convergence }
func (deletionsComplete) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: "apiserver/*", Question: QuestionPods}}
}

func (deletionsComplete) Judge(in invariant.Input) verdict.Judgement {
	var stuck, sources []string
	readable := 0
	for _, snap := range in.Snapshots {
		for _, src := range snap.Sources() {
			if !strings.HasPrefix(string(src), "apiserver/") {
				continue
			}
			var v PodsValue
			if err := snap.Get(src, QuestionPods).Decode(&v); err != nil {
				continue
			}
			readable++
			sources = append(sources, string(src))
			for _, p := range v.Pods {
				if p.DeletionTimestamp != nil {
					stuck = append(stuck, fmt.Sprintf("%s (uid %s, on %s, deletionTimestamp %s, per %s)", p.Name, p.UID, p.Node, p.DeletionTimestamp.Format("15:04:05"), src))
				}
			}
		}
	}
	if readable == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server listed the drill's pods"}
	}
	if len(stuck) > 0 {
		return verdict.Judgement{Verdict: verdict.Violated, Sources: sources, Reason: "pods still Terminating: " + strings.Join(stuck, "; ")}
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Sources: sources, Reason: "no pod of the drill is Terminating"}
}
