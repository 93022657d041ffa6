package source

import (
	"context"

	"github.com/faultline/faultline/framework/evidence"
)

// Unavailable is a source the lab cannot offer (no etcd access, no cluster
// DNS, no kubeconfig for a server): every round it answers each of its
// questions unreadable with the same reason, so the snapshot still shows
// the source and why it is silent.
type Unavailable struct {
	name      evidence.Source
	questions []evidence.Question
	reason    string
}

// NewUnavailable makes such a source.
func NewUnavailable(name evidence.Source, questions []evidence.Question, reason string) *Unavailable {
	return &Unavailable{name: name, questions: questions, reason: reason}
}

func (u *Unavailable) Source() evidence.Source        { return u.name }
func (u *Unavailable) Questions() []evidence.Question { return u.questions }
func (u *Unavailable) Read(context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	at := now()
	for _, q := range u.questions {
		out[q] = evidence.UnreadableAnswer(u.reason, at)
	}
	return out
}
