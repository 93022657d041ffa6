package source

import (
	"context"

	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
)

// APIRead reads the value of one question through an API server's client,
// with the resourceVersion it was read at ("" where there is none).
type APIRead func(ctx context.Context, cs kubernetes.Interface) (value any, resourceVersion string, err error)

// APIQuestion is a suite's own question asked of one API server: read
// says how. A failed read is unreadable with its reason's class.
type APIQuestion struct {
	name     evidence.Source
	client   kubernetes.Interface
	question evidence.Question
	read     APIRead
}

// NewAPIQuestion makes a reader named name that answers q through cs.
func NewAPIQuestion(name evidence.Source, cs kubernetes.Interface, q evidence.Question, read APIRead) *APIQuestion {
	return &APIQuestion{name: name, client: cs, question: q, read: read}
}

func (r *APIQuestion) Source() evidence.Source        { return r.name }
func (r *APIQuestion) Questions() []evidence.Question { return []evidence.Question{r.question} }

func (r *APIQuestion) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	v, rv, err := r.read(ctx, r.client)
	at := now()
	if err != nil {
		return map[evidence.Question]evidence.Answer{r.question: evidence.UnreadableAnswer(Reason(err), at)}
	}
	return map[evidence.Question]evidence.Answer{r.question: answer(v, at, rv)}
}
