package invariant

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// ReplicasRestoredName names the replicas-restored invariant.
const ReplicasRestoredName = "replicas-restored"

// ReplicasRestored: after heal, the test Deployment's ready replicas are
// back to its spec within the settle bound.
//
// Reads: deployment/replicas from every API server. The freshest answer
// (highest resourceVersion; the reads are consistent, so it is the
// latest state any of them showed) decides; when resourceVersions cannot
// be compared, the servers must agree or the verdict is
// INSUFFICIENT_DATA.
//
// Fires when, in the snapshot judged (the first settle sample in which
// the Deployment is restored, or the final one at the settle timeout when
// none was), the Deployment is
// missing or has fewer ready replicas than spec.replicas. More ready than
// spec (old pods not yet gone) counts as restored: availability is back.
//
// Why: the Deployment and ReplicaSet controllers promise to converge the
// number of ready pods to spec once nodes and the control plane are
// healthy again.
//
// Reads timed out or refused never count as a shortfall: a server that
// gave no answer is left out, and with no answer at all the verdict is
// INSUFFICIENT_DATA.
//
// Exercised when the ready replicas fell below spec (or the Deployment
// was missing) at some point of the run the input shows: in a sample
// before the judged one (the freshest answer of each, as above). Then
// restoring them was needed; otherwise the guarantee was not challenged.
// The timeline does not record the Deployment, so with the judged sample
// alone in the input whether it was exercised is not known: a PRESERVED
// then leaves Exercised unset, and its Exercise says so. VIOLATED is
// always exercised.
func ReplicasRestored() Invariant { return replicasRestored{} }

type replicasRestored struct{}

func (replicasRestored) Name() string         { return ReplicasRestoredName }
func (replicasRestored) Phase() verdict.Phase { return verdict.Convergence }
func (replicasRestored) Reads() []Reading {
	return []Reading{{Sources: ConsistentReaders, Question: evidence.DeploymentReplicas}}
}

func (replicasRestored) Judge(in Input) verdict.Judgement {
	snaps := Ordered(in.Snapshots)
	if len(snaps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no snapshot to judge"}
	}
	last := snaps[len(snaps)-1:]
	obs, gaps := Collect[evidence.DeploymentValue](last, ConsistentReaders, evidence.DeploymentReplicas)
	sources := SourcesOf(obs, gaps)
	if len(obs) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered for the Deployment: " + GapSummary(gaps), Sources: sources}
	}
	best, ok := freshest(obs)
	if !ok {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason:  "the API servers disagree about the Deployment and their resourceVersions cannot say which is newer: " + describeDeployments(obs),
			Sources: sources}
	}
	d := best.Value
	if short := shortfall(best); short != "" {
		return verdict.Judgement{Verdict: verdict.Violated, Reason: short, Sources: []string{string(best.Source)}, At: best.ReadAt,
			Exercised: verdict.Exercised(), Exercise: "ready replicas short of spec in the judged sample"}
	}
	j := verdict.Judgement{Verdict: verdict.Preserved,
		Reason:  fmt.Sprintf("%s shows %d of %d replicas ready at %s", best.Source, d.ReadyReplicas, d.Replicas, Stamp(best.ReadAt)),
		Sources: []string{string(best.Source)}, At: best.ReadAt}
	earlier := snaps[:len(snaps)-1]
	if len(earlier) == 0 {
		j.Exercise = "not known: the input holds only the judged sample, and the timeline does not record the Deployment, so whether its ready replicas fell below spec during the run is not shown"
		return j
	}
	for i := range earlier {
		obs, _ := Collect[evidence.DeploymentValue](earlier[i:i+1], ConsistentReaders, evidence.DeploymentReplicas)
		if len(obs) == 0 {
			continue
		}
		if o, ok := freshest(obs); ok {
			if short := shortfall(o); short != "" {
				j.Exercised, j.Exercise = verdict.Exercised(), "earlier, "+short
				return j
			}
		}
	}
	j.Exercised = verdict.NotExercised()
	j.Exercise = fmt.Sprintf("ready replicas at spec in each of %d earlier sample(s) that showed them; restoring them was never needed", len(earlier))
	return j
}

// shortfall says how a Deployment answer falls short of its spec, or "".
func shortfall(o Observation[evidence.DeploymentValue]) string {
	d := o.Value
	switch {
	case !d.Exists:
		return fmt.Sprintf("%s shows no test Deployment at %s", o.Source, Stamp(o.ReadAt))
	case d.ReadyReplicas < d.Replicas:
		return fmt.Sprintf("%s shows %d of %d replicas ready at %s (available %d, updated %d)", o.Source, d.ReadyReplicas, d.Replicas, Stamp(o.ReadAt), d.AvailableReplicas, d.UpdatedReplicas)
	}
	return ""
}

// freshest picks the answer with the highest resourceVersion; without
// comparable versions, the one all answers agree on.
func freshest(obs []Observation[evidence.DeploymentValue]) (Observation[evidence.DeploymentValue], bool) {
	var best *Observation[evidence.DeploymentValue]
	comparable := true
	for i := range obs {
		if _, err := resourceversion.CompareResourceVersion(obs[i].RV, obs[i].RV); err != nil {
			comparable = false
			break
		}
		if best == nil || olderThan(best.RV, obs[i].RV) {
			best = &obs[i]
		}
	}
	if comparable && best != nil {
		return *best, true
	}
	for _, o := range obs[1:] {
		if o.Value != obs[0].Value {
			return Observation[evidence.DeploymentValue]{}, false
		}
	}
	return obs[0], true
}

func describeDeployments(obs []Observation[evidence.DeploymentValue]) string {
	var parts []string
	for _, o := range obs {
		parts = append(parts, fmt.Sprintf("%s: exists=%v ready %d/%d (rv %q)", o.Source, o.Value.Exists, o.Value.ReadyReplicas, o.Value.Replicas, o.RV))
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
