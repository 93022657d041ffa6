package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

const prober = evidence.Source("probe/worker2")

func probed(addr string, answered bool, detail string) evidence.EndpointProbesValue {
	return evidence.EndpointProbesValue{Probes: []evidence.EndpointProbe{{Address: addr, Answered: answered, Detail: detail}}}
}

func podAt(uid, node, ip string) evidence.PodValue {
	v := podOn(uid, node)
	v.PodIP = ip
	v.Ready = true
	return v
}

func ready(addrs ...string) evidence.EndpointsValue {
	return evidence.EndpointsValue{Ready: addrs, NotReady: []string{}, Slices: 1}
}

func TestEndpointsTruthfulPreservedWhenTheEndpointRunsAndAnswers(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s < 10; s++ {
		r.round(s).value(cp1, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").
			value(cp1, evidence.PodObject, 0.1, podAt("u1", "worker1", "10.244.1.5"), "").
			value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").
			value(prober, evidence.EndpointProbes, 0.3, probed("10.244.1.5", true, "200 OK"), "")
	}
	expect(t, EndpointsTruthful(5*time.Second), r.input(Window), verdict.Preserved, "1 addresses over 10 server reads")
}

func TestEndpointsTruthfulWithinTheBoundIsNotAViolation(t *testing.T) {
	// worker1 is cut off: the pod stops answering; the endpoint leaves the
	// ready set 4 s later, inside a 5 s bound.
	r := newRun(t)
	for s := 0.0; s < 10; s++ {
		rd := r.round(s).value(cp1, evidence.PodObject, 0.1, podAt("u1", "worker1", "10.244.1.5"), "").
			value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "")
		switch {
		case s < 2:
			rd.value(cp1, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").value(prober, evidence.EndpointProbes, 0.3, probed("10.244.1.5", true, "200 OK"), "")
		case s < 6:
			rd.value(cp1, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").value(prober, evidence.EndpointProbes, 0.3, probed("10.244.1.5", false, "i/o timeout"), "")
		default:
			rd.value(cp1, evidence.ServiceEndpoints, 0.1, ready(), "").value(prober, evidence.EndpointProbes, 0.3, evidence.EndpointProbesValue{}, "")
		}
	}
	expect(t, EndpointsTruthful(5*time.Second), r.input(Window), verdict.Preserved)
}

func TestEndpointsTruthfulViolatedWhenAReadyEndpointNeverAnswersPastTheBound(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s < 12; s++ {
		r.round(s).value(cp2, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").
			value(cp2, evidence.PodObject, 0.1, podAt("u1", "worker1", "10.244.1.5"), "").
			value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").
			value(prober, evidence.EndpointProbes, 0.3, probed("10.244.1.5", false, "i/o timeout"), "")
	}
	expect(t, EndpointsTruthful(5*time.Second), r.input(Window), verdict.Violated, "apiserver/cp2 kept 10.244.1.5", "did not answer", "i/o timeout")
}

func TestEndpointsTruthfulViolatedWhenTheEndpointPointsAtAPodThatMoved(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s < 8; s++ {
		r.round(s).value(cp1, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").
			value(cp1, evidence.PodObject, 0.1, podAt("u2", "worker2", "10.244.2.9"), "")
	}
	expect(t, EndpointsTruthful(5*time.Second), r.input(Window), verdict.Violated, "no pod of the service at 10.244.1.5")
}

func TestEndpointsTruthfulInsufficientWhenNothingCanCheckTheEndpoint(t *testing.T) {
	// The runtime is readable and running, but no prober answers: whether
	// the endpoint answers is unknown for longer than the bound.
	r := newRun(t)
	for s := 0.0; s < 8; s++ {
		r.round(s).value(cp1, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").
			value(cp1, evidence.PodObject, 0.1, podAt("u1", "worker1", "10.244.1.5"), "").
			value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").
			unreadable(prober, evidence.EndpointProbes, 1, "not deployed")
	}
	expect(t, EndpointsTruthful(5*time.Second), r.input(Window), verdict.InsufficientData, "without it being shown to run and answer", "no prober tried", "longer than the bound of 5s")
}

func TestEndpointsTruthfulAWindowEndingBeforeTheBoundCannotTell(t *testing.T) {
	// The endpoint stops answering 2 s before the evidence ends; the bound
	// is 5 s: whether it would have been withdrawn in time is unknown.
	r := newRun(t)
	for s := 0.0; s < 8; s++ {
		answered := s < 6
		r.round(s).value(cp1, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").
			value(cp1, evidence.PodObject, 0.1, podAt("u1", "worker1", "10.244.1.5"), "").
			value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").
			value(prober, evidence.EndpointProbes, 0.3, probed("10.244.1.5", answered, "i/o timeout"), "")
	}
	j := expect(t, EndpointsTruthful(5*time.Second), r.input(Window), verdict.InsufficientData, "before the bound could pass", "when the evidence ended, under the bound of 5s")
	if strings.Contains(j.Reason, "longer than the bound") {
		t.Errorf("a stretch cut short by the end of the evidence is called longer than the bound: %s", j.Reason)
	}
}

func TestEndpointsTruthfulDoesNotCountAProberOnThePodsOwnNode(t *testing.T) {
	// worker1's pod network is cut: worker2 gets no answer, worker1 itself
	// still reaches its own pod over its local bridge. The endpoint is
	// broken for every client of the service elsewhere.
	const local = evidence.Source("probe/worker1")
	r := newRun(t)
	for s := 0.0; s < 12; s++ {
		r.round(s).value(cp1, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").
			value(cp1, evidence.PodObject, 0.1, podAt("u1", "worker1", "10.244.1.5"), "").
			value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").
			value(prober, evidence.EndpointProbes, 0.3, probed("10.244.1.5", false, "i/o timeout"), "").
			value(local, evidence.EndpointProbes, 0.3, probed("10.244.1.5", true, "HTTP/1.1 200 OK"), "")
	}
	expect(t, EndpointsTruthful(5*time.Second), r.input(Window), verdict.Violated, "did not answer", "probe/worker2")

	// Only the pod's own node probed: nobody else tried, so it cannot tell.
	r = newRun(t)
	for s := 0.0; s < 12; s++ {
		r.round(s).value(cp1, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").
			value(cp1, evidence.PodObject, 0.1, podAt("u1", "worker1", "10.244.1.5"), "").
			value(cri1, q, 0.2, runtimeWith("u1", map[string]string{"c1": running}), "").
			value(local, evidence.EndpointProbes, 0.3, probed("10.244.1.5", true, "HTTP/1.1 200 OK"), "")
	}
	expect(t, EndpointsTruthful(5*time.Second), r.input(Window), verdict.InsufficientData, "no prober tried")
}
