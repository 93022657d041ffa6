package invariants

import (
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

func eps(ready ...string) evidence.EndpointsValue {
	return evidence.EndpointsValue{Ready: ready, NotReady: []string{}, Slices: 1}
}

func dnat(backends ...string) evidence.ProxyBackendsValue {
	v := evidence.ProxyBackendsValue{Ports: []evidence.ProxyPort{{Port: "faultline-agents/routes:http", ClusterIP: "10.250.0.50", ServicePort: "80/tcp", Backends: backends}}}
	if len(backends) == 0 {
		v.Ports[0].Rejected = true
	}
	return v
}

// routesRun: the backend moves from .5 to .9 at second 3 in the API;
// worker2 follows in the next round, worker1 keeps .5 until second
// stale (or follows at once when stale is 0).
func routesRun(t *testing.T, rounds int, stale float64, worker1Unreadable map[int]bool) *run {
	r := newRun(t)
	for i := 0; i < rounds; i++ {
		s := float64(i)
		ready := "10.240.3.5"
		if s >= 3 {
			ready = "10.240.3.9"
		}
		rd := r.Round(s).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps(ready), "")
		w2 := "10.240.3.5:8080"
		if s >= 4 {
			w2 = "10.240.3.9:8080"
		}
		rd.Value("kube-proxy/worker2", dataplane.AgentServiceTranslation, 0.2, dnat(w2), "")
		w1 := "10.240.3.5:8080"
		if s >= 4 && (stale == 0 || s >= stale) {
			w1 = "10.240.3.9:8080"
		}
		if worker1Unreadable[i] {
			rd.Unreadable("kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.3, "timeout: no answer within 4s")
		} else {
			rd.Value("kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat(w1), "")
		}
		rd.Value("pod/worker1", dataplane.AgentServiceProbe, 0.5, dataplane.DialValue{Target: "10.250.0.50:80", Connected: false, Error: "timeout"}, "")
	}
	return r
}

func TestServiceRoutesTruthful(t *testing.T) {
	inv := ServiceRoutesTruthful(testBound(3 * time.Second))

	// Both nodes follow the change within a round: PRESERVED, exercised.
	j := expect(t, inv, routesRun(t, 10, 0, nil).Input(invariant.WindowToSettle), verdict.Preserved, "kube-proxy/worker1", "bound 3s")
	if j.Exercised == nil || !*j.Exercised {
		t.Errorf("a change of the ready endpoints exercises it: %+v", j)
	}

	// worker1 keeps the old backend until second 9: proven from 3.2 to 8
	// (the change round reads .9 in the API), longer than 3 s.
	j = expect(t, inv, routesRun(t, 12, 9, nil).Input(invariant.WindowToSettle), verdict.Violated,
		"kube-proxy/worker1 forwards to [10.240.3.5] while apiserver/cp1 records [10.240.3.9]", "pod/worker1's connection to 10.250.0.50:80 failed (timeout)", "bound 3s")
	if j.At.IsZero() || len(j.Sources) != 2 || j.Sources[0] != "kube-proxy/worker1" || j.Sources[1] != "apiserver/cp1" {
		t.Errorf("the violation names its node, the server it was judged against and its moment: %+v", j)
	}

	// The same stale node, but unreadable after one broken round: it could
	// have kept the old rules, so the evidence cannot say.
	unread := map[int]bool{}
	for i := 4; i < 10; i++ {
		unread[i] = true
	}
	expect(t, inv, routesRun(t, 12, 0, unread).Input(invariant.WindowToSettle), verdict.InsufficientData, "could not be read")

	// Nothing changed: PRESERVED, not exercised.
	r := newRun(t)
	for i := 0; i < 5; i++ {
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps("10.240.3.5"), "").Value(
			"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")

	}
	j = expect(t, inv, r.Input(invariant.WindowToSettle), verdict.Preserved)
	if j.Exercised == nil || *j.Exercised {
		t.Errorf("no change: not exercised: %+v", j)
	}

	// No endpoints and a node that rejects: they agree.
	r = newRun(t)
	for i := 0; i < 5; i++ {
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps(), "").Value(
			"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat(), "")

	}
	expect(t, inv, r.Input(invariant.WindowToSettle), verdict.Preserved)

	// No API server ever answered.
	r = newRun(t)
	r.Round(0).Unreadable("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, "timeout").Value(
		"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")

	expect(t, inv, r.Input(invariant.WindowToSettle), verdict.InsufficientData, "no API server answered")
}

// A tick at which no snapshot could be taken is a round that could not
// tell: two broken stretches on either side of it, each within the bound,
// prove nothing together.
func TestServiceRoutesAMissedTickBreaksTheProof(t *testing.T) {
	r := newRun(t)
	for _, s := range []float64{0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11} {
		w1 := "10.240.3.5:8080"
		if s >= 11 {
			w1 = "10.240.3.9:8080"
		}
		r.Round(s).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps(map[bool]string{true: "10.240.3.5", false: "10.240.3.9"}[s < 4]), "").Value(
			"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat(w1), "")

	}
	in := r.Input(invariant.WindowToSettle)
	in.Timeline = evidence.Timeline{{At: sec(7), Source: "faultline", Subject: "scenario/x", Kind: invariant.SampleFailedEvent, Detail: "opening the lab's sources: connection refused"}}
	// Broken from 4.2 to 6 and from 8.2 to 10: 1.8 s each, within the
	// bound; bridged across the missed tick they would be 5.8 s.
	expect(t, ServiceRoutesTruthful(testBound(3*time.Second)), in, verdict.InsufficientData, "no snapshot could be taken at this tick", "opening the lab's sources")
}

// Every rule dump after the change unreadable: nothing shows the node
// followed, so the stretch after the change is not covered.
func TestServiceRoutesNeedsReadableRulesAfterAChange(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 12; i++ {
		s := float64(i)
		ready := "10.240.3.5"
		if s >= 3 {
			ready = "10.240.3.9"
		}
		rd := r.Round(s).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps(ready), "")
		if s < 3 {
			rd.Value("kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")
		} else {
			rd.Unreadable("kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.3, "timeout: no answer within 4s")
		}
	}
	expect(t, ServiceRoutesTruthful(testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "kube-proxy/worker1", "could not be read")
}

// A stale server answering alone in some rounds must not vouch for a
// stale node in them: the node is judged against each server's record.
func TestServiceRoutesAStaleServerDoesNotMaskAStaleNode(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 14; i++ {
		s := float64(i)
		rd := r.Round(s)
		switch {
		case s < 3:
			rd.Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps("10.240.3.5"), "").Value(
				"apiserver/cp2", dataplane.AgentServiceEndpoints, 0.1, eps("10.240.3.5"), "")

		case i%2 == 0:
			// cp1 has the change; cp2 times out.
			rd.Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps("10.240.3.9"), "").Unreadable(
				"apiserver/cp2", dataplane.AgentServiceEndpoints, 0.3, "timeout: no answer within 4s")

		default:
			// cp2 still answers the old set; cp1 times out.
			rd.Value("apiserver/cp2", dataplane.AgentServiceEndpoints, 0.1, eps("10.240.3.5"), "").Unreadable(
				"apiserver/cp1", dataplane.AgentServiceEndpoints, 0.3, "timeout: no answer within 4s")

		}
		rd.Value("kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")
	}
	expect(t, ServiceRoutesTruthful(testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "kube-proxy/worker1", "apiserver/cp1")

	// Two servers that contradict each other in every round certify no
	// node: there is no record to judge it by.
	r = newRun(t)
	for i := 0; i < 12; i++ {
		s := float64(i)
		cp1 := "10.240.3.5"
		if s >= 3 {
			cp1 = "10.240.3.9"
		}
		r.Round(s).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps(cp1), "").Value(
			"apiserver/cp2", dataplane.AgentServiceEndpoints, 0.1, eps("10.240.3.5"), "").Value(

			"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")

	}
	expect(t, ServiceRoutesTruthful(testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "disagreed")
}

// An endpoint in two EndpointSlices (which the EndpointSlice API allows)
// is one ready address, not a difference.
func TestServiceRoutesCountsAnEndpointInTwoSlicesOnce(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 10; i++ {
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, evidence.EndpointsValue{Ready: []string{"10.240.3.9", "10.240.3.5", "10.240.3.9"}, NotReady: []string{}, Slices: 2}, "").Value(
			"kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080", "10.240.3.9:8080"), "")

	}
	expect(t, ServiceRoutesTruthful(testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.Preserved)
}

// A change in the last rounds is not covered by later reads: the ready
// set changes at 10, and worker1's rules could not be read at 10 or 11.
// The suspect stretch is under the bound, yet no round showed the node
// applying the change: INSUFFICIENT_DATA, not PRESERVED.
func TestServiceRoutesAChangeAtTheEndIsNotCovered(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 12; i++ {
		ready := "10.240.3.5"
		if i >= 10 {
			ready = "10.240.3.9"
		}
		rd := r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentServiceEndpoints, 0.1, eps(ready), "")
		if i >= 10 {
			rd.Unreadable("kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.3, "timeout: no answer within 4s")
		} else {
			rd.Value("kube-proxy/worker1", dataplane.AgentServiceTranslation, 0.2, dnat("10.240.3.5:8080"), "")
		}
	}
	expect(t, ServiceRoutesTruthful(testBound(3*time.Second)), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "not covered by later reads")
}
