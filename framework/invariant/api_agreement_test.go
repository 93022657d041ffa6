package invariant

import (
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

var readyUnknown = evidence.NodeReadyValue{Exists: true, Status: "Unknown"}

func TestAPIAgreementPreservedWhenServersDifferOnlyBriefly(t *testing.T) {
	r := newRun(t)
	r.round(0).value(cp1, evidence.NodeReady, 0.1, readyTrue, "1").value(cp2, evidence.NodeReady, 0.1, readyTrue, "1")
	// worker1 goes Unknown; cp2 is a round behind.
	r.round(1).value(cp1, evidence.NodeReady, 0.1, readyUnknown, "2").value(cp2, evidence.NodeReady, 0.1, readyTrue, "1")
	r.round(2).value(cp1, evidence.NodeReady, 0.1, readyUnknown, "2").value(cp2, evidence.NodeReady, 0.1, readyUnknown, "2")
	// Heartbeat times differ between reads; they are not compared.
	hb := readyUnknown
	hb.LastHeartbeatTime = sec(2.5)
	r.round(3).value(cp1, evidence.NodeReady, 0.1, hb, "3").value(cp2, evidence.NodeReady, 0.1, readyUnknown, "2")
	expect(t, APIAgreement(5*time.Second), r.input(Window), verdict.Preserved, "apiserver/cp1, apiserver/cp2")
}

func TestAPIAgreementViolatedWhenAServerStaysBehindPastTheBound(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s <= 8; s++ {
		r.round(s).
			value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u2", NodeName: "worker2"}, "").
			value(cp3, evidence.PodObject, 0.2, evidence.PodValue{Exists: true, UID: "u1", NodeName: "worker1"}, "")
	}
	expect(t, APIAgreement(5*time.Second), r.input(Window), verdict.Violated,
		"apiserver/cp1 and apiserver/cp3 disagreed about statefulpod/object", `apiserver/cp1 said pod u2 on "worker2", apiserver/cp3 said pod u1 on "worker1"`, "5s")
}

func TestAPIAgreementASilentServerDisagreesWithNoOne(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s <= 8; s++ {
		r.round(s).
			value(cp1, evidence.ServiceEndpoints, 0.1, evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}, "").
			value(cp2, evidence.ServiceEndpoints, 0.1, evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}, "").
			unreadable(cp3, evidence.ServiceEndpoints, 1.5, "timeout: etcd unreachable")
	}
	expect(t, APIAgreement(5*time.Second), r.input(Window), verdict.Preserved)
}

func TestAPIAgreementDisagreementsBridgedByUnreadableRoundsAreNotProof(t *testing.T) {
	r := newRun(t)
	behind := evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}
	now := evidence.EndpointsValue{Ready: []string{"10.244.2.7"}}
	for s := 0.0; s <= 8; s++ {
		rd := r.round(s).value(cp1, evidence.ServiceEndpoints, 0.1, now, "")
		if int(s)%2 == 0 {
			rd.value(cp2, evidence.ServiceEndpoints, 0.1, behind, "")
		} else {
			rd.unreadable(cp2, evidence.ServiceEndpoints, 1.5, "timeout")
		}
	}
	expect(t, APIAgreement(5*time.Second), r.input(Window), verdict.InsufficientData, "could not be shown to agree")
}

func TestAPIAgreementInsufficientWithOneServer(t *testing.T) {
	r := newRun(t)
	r.round(0).value(cp1, evidence.NodeReady, 0.1, readyTrue, "1").unreadable(cp2, evidence.NodeReady, 1.5, "connection refused")
	expect(t, APIAgreement(5*time.Second), r.input(Window), verdict.InsufficientData, "no round had two API servers")
}
