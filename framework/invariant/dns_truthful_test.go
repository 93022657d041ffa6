package invariant

import (
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

func dnsAnswer(rcode string, ip string, ttl uint32) evidence.DNSAnswerValue {
	v := evidence.DNSAnswerValue{Name: "dns-routes.faultline-agents.svc.cluster.local", Server: "10.240.5.3:53", Instance: "kube-system/coredns-x", RCode: rcode}
	if ip != "" {
		v.Answers = []evidence.DNSRecord{{IP: ip, TTL: ttl}}
	}
	return v
}

// dnsRun: the service's address is .50 until second 3, none at second 3,
// .77 from second 4; the instance answers .50 until second stale.
func dnsRun(t *testing.T, rounds int, stale float64, rcodeAt map[int]string) *run {
	r := newRun(t)
	for i := 0; i < rounds; i++ {
		s := float64(i)
		exp := evidence.DNSExpectedValue{Name: "dns-routes", IPs: []string{"10.250.0.50"}}
		switch {
		case s == 3:
			exp.IPs = nil
		case s > 3:
			exp.IPs = []string{"10.250.0.77"}
		}
		rd := r.round(s).value("apiserver/cp1", evidence.AgentDNSExpected, 0.1, exp, "")
		a := dnsAnswer("RCodeSuccess", "10.250.0.50", 5)
		if s >= stale {
			a = dnsAnswer("RCodeSuccess", "10.250.0.77", 5)
		}
		if rc := rcodeAt[i]; rc != "" {
			a = dnsAnswer(rc, "", 0)
		}
		rd.value("coredns/worker2", evidence.AgentDNSAnswer, 0.3, a, "")
	}
	return r
}

func TestDNSTruthful(t *testing.T) {
	inv := DNSTruthful(testBound(3*time.Second), 5*time.Second)

	// The instance follows within its TTL: PRESERVED, exercised.
	j := expect(t, inv, dnsRun(t, 12, 6, nil).input(WindowToSettle), verdict.Preserved, "12 answers", "kept superseded records")
	if j.Exercised == nil || !*j.Exercised {
		t.Errorf("a change of the records exercises it: %+v", j)
	}

	// It keeps .50 to the end: at second 11, .50 was last recorded at 2.1,
	// more than TTL 5 s + bound 3 s before.
	expect(t, inv, dnsRun(t, 12, 100, nil).input(WindowToSettle), verdict.Violated,
		"coredns/worker2 (kube-system/coredns-x at 10.240.5.3:53) answered [10.250.0.50]", "TTL 5s", "the same answer 2 time(s) through 10:00:11.300")

	// A server failure is no answer: with every answer declined, nothing
	// can be said.
	all := map[int]string{}
	for i := 0; i < 6; i++ {
		all[i] = "RCodeServerFailure"
	}
	expect(t, inv, dnsRun(t, 6, 100, all).input(WindowToSettle), verdict.InsufficientData, "6 declined")

	// A name error while the name exists for longer than the negative TTL
	// and the bound is a wrong answer too.
	nx := map[int]string{}
	for i := 0; i < 12; i++ {
		nx[i] = evidence.NameError
	}
	expect(t, inv, dnsRun(t, 12, 0, nx).input(WindowToSettle), verdict.Violated, "answered nothing")
}
