package invariants

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/verdict"
)

// A node that misses an endpoint the API added is not "forwarding to what
// the API no longer records": the reason says which way it differs.
func TestServiceRoutesSaysANodeMissesANewEndpoint(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 12; i++ {
		ready := []string{"10.240.3.5"}
		if i >= 3 {
			ready = []string{"10.240.3.5", "10.240.3.9"}
		}
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps(ready...), "").Value(
			"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")

	}
	j := expect(t, ServiceRoutesTruthful(testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.Violated,
		"does not forward to [10.240.3.9], which apiserver/cp1 records as ready")
	if strings.Contains(j.Reason, "no longer records") {
		t.Errorf("a node that misses a new endpoint is said to keep an old one: %s", j.Reason)
	}
}

// Every VIOLATED reason states its bound's mechanism, not a claim that
// the bound was measured.
func TestAgentReasonsStateTheBoundsMechanism(t *testing.T) {
	for _, c := range []struct {
		inv invariant.Invariant
		in  invariant.Input
	}{
		{ServiceRoutesTruthful(testBound(3 * time.Second)), routesRun(t, 12, 9, nil).Input(invariant.WindowToSettle)},
		{PolicyEnforced(testBound(3 * time.Second)), policyRun(t, 12, 10, nil).Input(invariant.WindowToSettle)},
		{AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second)), withHealth(t, routesRun(t, 12, 9, nil), 200).Input(invariant.WindowToSettle)},
	} {
		j := expect(t, c.inv, c.in, verdict.Violated)
		if strings.Contains(j.Reason, "measured in the null arm") || !strings.Contains(j.Reason, "test mechanism") {
			t.Errorf("%s: the reason does not state the bound's mechanism: %s", c.inv.Name(), j.Reason)
		}
	}
}
