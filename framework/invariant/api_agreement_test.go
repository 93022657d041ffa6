package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

var readyUnknown = evidence.NodeReadyValue{Exists: true, Status: "Unknown"}

// agreeWithin is api-agreement with one bound for every question.
func agreeWithin(d time.Duration) Invariant {
	bounds := map[evidence.Question]Bound{}
	for _, q := range agreementQuestions {
		bounds[q] = Bound{Limit: d, Why: "the test's bound"}
	}
	return APIAgreement(bounds)
}

func TestAPIAgreementPreservedWhenServersDifferOnlyBriefly(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "1").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "1")
	// worker1 goes Unknown; cp2 is a round behind.
	r.Round(1).Value(cp1, evidence.NodeReady, 0.1, readyUnknown, "2").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "1")
	r.Round(2).Value(cp1, evidence.NodeReady, 0.1, readyUnknown, "2").Value(cp2, evidence.NodeReady, 0.1, readyUnknown, "2")
	// Heartbeat times differ between reads; they are not compared.
	hb := readyUnknown
	hb.LastHeartbeatTime = sec(2.5)
	r.Round(3).Value(cp1, evidence.NodeReady, 0.1, hb, "3").Value(cp2, evidence.NodeReady, 0.1, readyUnknown, "2")
	j := expect(t, agreeWithin(5*time.Second), r.input(Window), verdict.Preserved, "apiserver/cp1, apiserver/cp2")
	// worker1 went Unknown: a change both servers had to agree on.
	wantExercised(t, j, true, "worker1/ready", "Ready=Unknown")
}

func TestAPIAgreementViolatedWhenAServerStaysBehindPastTheBound(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s <= 8; s++ {
		r.Round(s).
			Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u2", NodeName: "worker2"}, "").
			Value(cp3, evidence.PodObject, 0.2, evidence.PodValue{Exists: true, UID: "u1", NodeName: "worker1"}, "")
	}
	j := expect(t, agreeWithin(5*time.Second), r.input(Window), verdict.Violated,
		"apiserver/cp1 and apiserver/cp3 disagreed about statefulpod/object", `apiserver/cp1 said pod u2 on "worker2", apiserver/cp3 said pod u1 on "worker1"`, "5s", "the test's bound")
	wantExercised(t, j, true, "disagreed")
}

func TestAPIAgreementARefusingServerDisagreesWithNoOne(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s <= 8; s++ {
		r.Round(s).
			Value(cp1, evidence.ServiceEndpoints, 0.1, evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}, "").
			Value(cp2, evidence.ServiceEndpoints, 0.1, evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}, "").
			Unreadable(cp3, evidence.ServiceEndpoints, 0.01, "connection refused: dial tcp 10.231.0.13:6443")
	}
	j := expect(t, agreeWithin(5*time.Second), r.input(Window), verdict.Preserved,
		"compared: apiserver/cp1, apiserver/cp2 (", "refused throughout, serving no client: apiserver/cp3")
	if strings.Contains(j.Reason, "compared: apiserver/cp1, apiserver/cp2, apiserver/cp3") {
		t.Errorf("a server that answered no round is listed among those compared: %s", j.Reason)
	}
	// Nothing the servers had to agree on changed.
	wantExercised(t, j, false, "no compared answer changed")
}

func TestAPIAgreementATimedOutServerIsUnknownNotSilent(t *testing.T) {
	// cp3 may be serving clients an old state, slowly: a timeout says
	// nothing of what it serves.
	r := newRun(t)
	for s := 0.0; s <= 8; s++ {
		r.Round(s).
			Value(cp1, evidence.ServiceEndpoints, 0.1, evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}, "").
			Value(cp2, evidence.ServiceEndpoints, 0.1, evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}, "").
			Unreadable(cp3, evidence.ServiceEndpoints, 2, "timeout: no answer within 2s")
	}
	expect(t, agreeWithin(5*time.Second), r.input(Window), verdict.InsufficientData,
		"apiserver/cp1 and apiserver/cp3", "service/endpoints", "10:00:00.000", "10:00:08.000", "5s", "apiserver/cp3 unreadable 9 time(s)")
}

func TestAPIAgreementDisagreementsBridgedByUnreadableRoundsAreNotProof(t *testing.T) {
	r := newRun(t)
	behind := evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}
	now := evidence.EndpointsValue{Ready: []string{"10.244.2.7"}}
	for s := 0.0; s <= 8; s++ {
		rd := r.Round(s).Value(cp1, evidence.ServiceEndpoints, 0.1, now, "")
		if int(s)%2 == 0 {
			rd.Value(cp2, evidence.ServiceEndpoints, 0.1, behind, "")
		} else {
			rd.Unreadable(cp2, evidence.ServiceEndpoints, 1.5, "timeout")
		}
	}
	expect(t, agreeWithin(5*time.Second), r.input(Window), verdict.InsufficientData, "could not be shown to agree")
}

func TestAPIAgreementADisagreementContinuedByTimeoutsIsNotPreserved(t *testing.T) {
	behind := evidence.EndpointsValue{Ready: []string{"10.244.1.5"}}
	now := evidence.EndpointsValue{Ready: []string{"10.244.2.7"}}
	timedOut := newRun(t)
	for s := 0.0; s <= 8; s++ {
		rd := timedOut.Round(s).Value(cp1, evidence.ServiceEndpoints, 0.1, now, "")
		if s < 2 {
			rd.Value(cp2, evidence.ServiceEndpoints, 0.1, behind, "")
		} else {
			rd.Unreadable(cp2, evidence.ServiceEndpoints, 2, "timeout: no answer within 2s")
		}
	}
	expect(t, agreeWithin(5*time.Second), timedOut.input(Window), verdict.InsufficientData,
		"could not be shown to agree", "apiserver/cp1 and apiserver/cp2", "disagreed", "10:00:00.000")

	// Once cp2 refuses, it serves no client an old state: the difference
	// ended there.
	refused := newRun(t)
	for s := 0.0; s <= 8; s++ {
		rd := refused.Round(s).Value(cp1, evidence.ServiceEndpoints, 0.1, now, "")
		if s < 2 {
			rd.Value(cp2, evidence.ServiceEndpoints, 0.1, behind, "")
		} else {
			rd.Unreadable(cp2, evidence.ServiceEndpoints, 0.01, "connection refused: dial tcp 10.231.0.12:6443")
		}
	}
	j := expect(t, agreeWithin(5*time.Second), refused.input(Window), verdict.Preserved)
	wantExercised(t, j, true, "disagreed")
}

func TestAPIAgreementOneComparisonIsNotCoverage(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "1").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "1")
	for s := 1.0; s <= 8; s++ {
		r.Round(s).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "1").Unreadable(cp2, evidence.NodeReady, 2, "timeout: no answer within 2s")
	}
	expect(t, agreeWithin(5*time.Second), r.input(Window), verdict.InsufficientData,
		"apiserver/cp1 and apiserver/cp2 were not compared about worker1/ready", "10:00:01.000", "5s")
}

func TestAPIAgreementInsufficientWithOneServer(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "1").Unreadable(cp2, evidence.NodeReady, 1.5, "connection refused")
	expect(t, agreeWithin(5*time.Second), r.input(Window), verdict.InsufficientData, "no round had two API servers")
}

func TestAPIAgreementJudgesEachQuestionByItsOwnBound(t *testing.T) {
	bounds := map[evidence.Question]Bound{
		evidence.NodeReady:        {Limit: 20 * time.Second, Why: "node status"},
		evidence.PodObject:        {Limit: 3 * time.Second, Why: "quorum read"},
		evidence.ServiceEndpoints: {Limit: 3 * time.Second, Why: "fresh watch cache"},
	}
	inv := APIAgreement(bounds)
	if b, ok := inv.(Bounded); !ok || b.Bound() != 20*time.Second {
		t.Fatalf("api-agreement's bound for sizing a pre-fault window: %v, want its longest, 20s", inv)
	}
	nodeOnly := newRun(t)
	for s := 0.0; s <= 8; s++ {
		nodeOnly.Round(s).Value(cp1, evidence.NodeReady, 0.1, readyUnknown, "2").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "1")
	}
	expect(t, inv, nodeOnly.input(Window), verdict.Preserved, "worker1/ready 20s (node status)", "statefulpod/object 3s (quorum read)")

	pod := newRun(t)
	for s := 0.0; s <= 8; s++ {
		pod.Round(s).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u2", NodeName: "worker2"}, "").
			Value(cp2, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u1", NodeName: "worker1"}, "")
	}
	expect(t, inv, pod.input(Window), verdict.Violated, "statefulpod/object", "bound of 3s (quorum read)", "from 10:00:00.000 to 10:00:08.000")
}

func TestAPIAgreementWithoutABoundJudgesNothing(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "1").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "1")
	expect(t, APIAgreement(map[evidence.Question]Bound{evidence.NodeReady: {Limit: time.Second}}), r.input(Window), verdict.InsufficientData, "no bound", "statefulpod/object")
	expect(t, NoTimeTravel(Bound{}), r.input(Window), verdict.InsufficientData, "no coverage bound")
}
