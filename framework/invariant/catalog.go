package invariant

import "time"

// Bounds are the time bounds invariants are declared with; suites take
// them from the lab's timer profile, so that a bound means the same thing
// on every lab.
type Bounds struct {
	// Staleness is how long two API servers may disagree (api-agreement).
	Staleness time.Duration
	// Endpoints is how long a ready endpoint may point at a pod that does
	// not run or answer (endpoints-truthful): node-monitor-grace-period
	// plus the controllers' reaction.
	Endpoints time.Duration
}

// All returns the nine invariants, safety ones first, in report order.
func All(b Bounds) []Invariant {
	return []Invariant{
		SingleCopy(),
		APIAgreement(b.Staleness),
		NoTimeTravel(),
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
