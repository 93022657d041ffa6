package invariants

import (
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// A tick at which no snapshot could be taken breaks a proof as an
// unreadable round does: the stretches on either side are never joined.
func TestMissedTicksBreakTheAgentsProofs(t *testing.T) {
	gap := missedAt(3, 4, 5)
	t.Run("policy-enforced", func(t *testing.T) {
		// Denied from 3, answered throughout: proven 3..8 without the gap.
		r := newRun(t)
		for _, s := range []float64{0, 1, 2, 6, 7, 8} {
			r.Round(s).Value("apiserver/cp1", dataplane.AgentPolicyExpected, 0.1, expectPair(s < 1), "").Value(
				"pod/worker2", dataplane.AgentPolicyProbe, 0.4, answered(), "")

		}
		in := r.Input(invariant.WindowToSettle)
		in.Timeline = gap
		expect(t, PolicyEnforced(testBound(5*time.Second)), in, verdict.InsufficientData, "no snapshot could be taken at this tick")
	})
	t.Run("agent-health-truthful", func(t *testing.T) {
		r := newRun(t)
		for _, s := range []float64{0, 1, 2, 6, 7, 8} {
			ready := "10.240.3.9"
			if s < 1 {
				ready = "10.240.3.5"
			}
			r.Round(s).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps(ready), "").Value(
				"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")

		}
		r = withHealth(t, r, 200)
		in := r.Input(invariant.WindowToSettle)
		in.Timeline = gap
		expect(t, AgentHealthTruthful(testBound(5*time.Second), testBound(5*time.Second)), in, verdict.InsufficientData, "no snapshot could be taken at this tick")
	})
}
