package memlab

import (
	"context"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// Sources and questions the memlab sampler answers.
const (
	SourceFlags evidence.Source   = "memlab/flags"
	SourceDark  evidence.Source   = "memlab/dark"
	QuestionSet evidence.Question = "flags/set"
)

// Sampler reads the flags; its second source never answers, for the
// INSUFFICIENT_DATA scenario. It also answers evidence.PodRunningHere
// from the runtime of each of Nodes ("cri/<node>"), from State.Copies, so
// that a real invariant (invariant.SingleCopy) can be judged on memlab.
type Sampler struct{}

func (Sampler) Sample(ctx context.Context, l lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	taken := time.Now().UTC()
	snap := evidence.NewSnapshot(taken)
	m, err := asMemlab(l)
	if err != nil {
		return snap, nil, err
	}
	s, err := m.Load()
	if err != nil {
		snap.Set(SourceFlags, QuestionSet, evidence.UnreadableAnswer(err.Error(), time.Now().UTC()))
	} else {
		readAt := time.Now().UTC()
		a, err := evidence.ValueAnswer(s.ActiveFlags(readAt), readAt, "")
		if err != nil {
			return snap, nil, err
		}
		snap.Set(SourceFlags, QuestionSet, a)
		for _, node := range Nodes {
			a, err := evidence.ValueAnswer(runtimeOf(s, node), readAt, "")
			if err != nil {
				return snap, nil, err
			}
			snap.Set(evidence.Source("cri/"+node), evidence.PodRunningHere, a)
		}
	}
	snap.Set(SourceDark, QuestionSet, evidence.UnreadableAnswer("not deployed", time.Now().UTC()))
	return snap, nil, nil
}

// runtimeOf is what node's container runtime shows of the stateful pod.
func runtimeOf(s State, node string) evidence.RuntimePodValue {
	id, ok := s.Copies[node]
	if !ok {
		return evidence.RuntimePodValue{}
	}
	sandbox := "sandbox-" + id
	uid := "uid-" + node
	return evidence.RuntimePodValue{
		Running:    true,
		Sandboxes:  []evidence.RuntimeSandbox{{ID: sandbox, Name: "stateful-0", Namespace: "memlab", UID: uid, State: "SANDBOX_READY"}},
		Containers: []evidence.RuntimeContainer{{ID: id, Name: "app", SandboxID: sandbox, PodUID: uid, State: "CONTAINER_RUNNING"}},
	}
}
