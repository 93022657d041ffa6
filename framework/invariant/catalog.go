package invariant

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/evidence"
)

// Bound is a time bound with the mechanism it models, so that a verdict
// can print both: a figure without its reason cannot be checked.
type Bound struct {
	Limit time.Duration
	// Why names the mechanism the limit comes from and how it is sized.
	Why string
}

func (b Bound) String() string {
	if b.Why == "" {
		return b.Limit.String()
	}
	return fmt.Sprintf("%s (%s)", b.Limit, b.Why)
}

// Bounds are the time bounds invariants are declared with; suites take
// them from the lab's timer profile and their sampling, so that a bound
// means the same thing on every lab.
type Bounds struct {
	// Agreement is, per question api-agreement compares, how long two API
	// servers may give different answers.
	Agreement map[evidence.Question]Bound
	// Ordering is the longest stretch no-time-travel lets pass without a
	// server's reads put in order with the others'.
	Ordering Bound
	// Endpoints is how long a ready endpoint may point at a pod that does
	// not run or answer (endpoints-truthful): node-monitor-grace-period
	// plus the controllers' reaction.
	Endpoints time.Duration
}

// AgreementQuestions are the questions api-agreement compares; Bounds.Agreement
// needs a bound for each.
func AgreementQuestions() []evidence.Question {
	return append([]evidence.Question(nil), agreementQuestions...)
}

// All returns the nine invariants, safety ones first, in report order.
func All(b Bounds) []Invariant {
	return []Invariant{
		SingleCopy(),
		APIAgreement(b.Agreement),
		NoTimeTravel(b.Ordering),
		EndpointsTruthful(b.Endpoints),
		SingleLeader(),
		GracefulDeletion(),
		AcknowledgedWritesSurvive(),
		ReplicasRestored(),
		Convergence(),
	}
}

// Names lists the nine invariants' names, in report order.
func Names() []string {
	var out []string
	for _, inv := range All(Bounds{}) {
		out = append(out, inv.Name())
	}
	return out
}
