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
// INSUFFICIENT_DATA scenario.
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
		a, err := evidence.ValueAnswer(s.ActiveFlags(), time.Now().UTC(), "")
		if err != nil {
			return snap, nil, err
		}
		snap.Set(SourceFlags, QuestionSet, a)
	}
	snap.Set(SourceDark, QuestionSet, evidence.UnreadableAnswer("not deployed", time.Now().UTC()))
	return snap, nil, nil
}
