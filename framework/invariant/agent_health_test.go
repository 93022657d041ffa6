package invariant

import (
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// withHealth adds each node's agents' health to every round of r, with
// kube-proxy on worker1 answering status.
func withHealth(t *testing.T, r *run, status int) *run {
	for i := range r.snaps {
		for _, n := range []string{"worker1", "worker2"} {
			code := 200
			if n == "worker1" {
				code = status
			}
			v := evidence.AgentHealthValue{Agents: map[string]evidence.AgentHealthAnswer{
				"kube-proxy":  {StatusCode: code, Body: `{"healthy":true}`},
				"kube-router": {StatusCode: 200, Body: "OK"},
			}}
			a, err := evidence.ValueAnswer(v, r.snaps[i].Taken.Add(300*time.Millisecond), "")
			if err != nil {
				t.Fatal(err)
			}
			r.snaps[i].Set(evidence.Source("agents/"+n), evidence.AgentHealth, a)
		}
	}
	return r
}

func TestAgentHealthTruthful(t *testing.T) {
	inv := AgentHealthTruthful(testBound(3*time.Second), testBound(3*time.Second))
	expect(t, inv, withHealth(t, routesRun(t, 12, 9, nil), 200).input(WindowToSettle), verdict.Violated,
		"kube-proxy on worker1 reported itself healthy", "answered its health check 200", "forwards to [10.240.3.5]")
	j := expect(t, inv, withHealth(t, routesRun(t, 12, 9, nil), 503).input(WindowToSettle), verdict.Preserved)
	if j.Exercised == nil || !*j.Exercised {
		t.Errorf("a diverging agent that says it is unhealthy exercises it: %+v", j)
	}
	// A change both nodes follow within a round still diverges for that
	// round: exercised, never past the bound.
	expect(t, inv, withHealth(t, routesRun(t, 10, 0, nil), 200).input(WindowToSettle), verdict.Preserved)
	steady := newRun(t)
	for i := 0; i < 5; i++ {
		steady.round(float64(i)).value("apiserver/cp1", evidence.AgentServiceEndpoints, 0.1, eps("10.240.3.5"), "").
			value("kube-proxy/worker1", evidence.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")
	}
	j = expect(t, inv, withHealth(t, steady, 200).input(WindowToSettle), verdict.Preserved)
	if j.Exercised == nil || *j.Exercised {
		t.Errorf("agents that never diverge do not exercise it: %+v", j)
	}
	expect(t, inv, routesRun(t, 10, 0, nil).input(WindowToSettle), verdict.InsufficientData, "health was read")
}
