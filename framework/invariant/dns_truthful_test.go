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
		"coredns/worker2 (kube-system/coredns-x at 10.240.5.3:53) answered [10.250.0.50]", "TTL 5s left", "the same answer 4 time(s) through 10:00:11.300")

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
	for i := 0; i < 14; i++ {
		nx[i] = evidence.NameError
	}
	expect(t, inv, dnsRun(t, 14, 0, nx).input(WindowToSettle), verdict.Violated, "answered nothing", "a name error is cached less than 5s")
}

// dnsRead is one round of a hand-built DNS run: what cp1 answered ("" for
// a read that timed out) and what the instance answered, with its TTL.
type dnsRead struct {
	api string
	ip  string
	ttl uint32
}

func dnsRounds(t *testing.T, rounds map[int]dnsRead, n int) *run {
	r := newRun(t)
	for i := 0; i < n; i++ {
		rd := r.round(float64(i))
		d, ok := rounds[i]
		if !ok {
			continue
		}
		if d.api == "" {
			rd.unreadable("apiserver/cp1", evidence.AgentDNSExpected, 0.1, "timeout: no answer within 5s")
		} else {
			rd.value("apiserver/cp1", evidence.AgentDNSExpected, 0.1, evidence.DNSExpectedValue{Name: "dns-routes", IPs: []string{d.api}}, "")
		}
		if d.ip != "" {
			rd.value("coredns/worker2", evidence.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", d.ip, d.ttl), "")
		}
	}
	return r
}

// The cache counts a record's TTL down: an answer with TTL 1 from a cache
// whose entries live 5 s was fetched up to 5 s before it was served, so
// it is looked back at by its possible age, not by its TTL.
func TestDNSTruthfulLooksBackByTheEntrysPossibleAge(t *testing.T) {
	inv := DNSTruthful(testBound(2*time.Second), 5*time.Second)
	old, cur := "10.250.0.50", "10.250.0.77"
	// The API held .50 until its read at 3.1 and .77 from its read at 4.1.
	// An entry refilled just after 3.1 and served at 7 with TTL 1 is
	// truthful.
	rounds := map[int]dnsRead{}
	for i := 0; i < 9; i++ {
		api := old
		if i >= 4 {
			api = cur
		}
		rounds[i] = dnsRead{api: api, ip: api, ttl: 5}
	}
	rounds[7] = dnsRead{api: cur, ip: old, ttl: 1}
	expect(t, inv, dnsRounds(t, rounds, 9).input(WindowToSettle), verdict.Preserved)

	// A fresh entry (TTL 5) served at 9 with .50, gone from the API since
	// 4.1 at the latest: fetched after 8.0, later than the bound allows.
	rounds[7] = dnsRead{api: cur, ip: cur, ttl: 5}
	rounds[9] = dnsRead{api: cur, ip: old, ttl: 5}
	expect(t, inv, dnsRounds(t, rounds, 10).input(WindowToSettle), verdict.Violated, "coredns/worker2", "[10.250.0.50]")
}

// API reads that timed out across the change do not stand for "the API no
// longer held it".
func TestDNSTruthfulTimedOutAPIReadsAreNoProof(t *testing.T) {
	inv := DNSTruthful(testBound(2*time.Second), 5*time.Second)
	old, cur := "10.250.0.50", "10.250.0.77"
	rounds := map[int]dnsRead{0: {api: old, ip: old, ttl: 5}, 1: {api: old, ip: old, ttl: 5}}
	for i := 2; i < 13; i++ {
		rounds[i] = dnsRead{api: "", ip: old, ttl: 5}
	}
	rounds[13] = dnsRead{api: cur, ip: cur, ttl: 5}
	// Served at 14 with TTL 1: fetched after 9.0; the API's last read of
	// .50 was at 1.1, its first of .77 at 13.1, and nothing was read in
	// between: it may have held .50 after 7.0.
	rounds[14] = dnsRead{api: cur, ip: old, ttl: 1}
	expect(t, inv, dnsRounds(t, rounds, 15).input(WindowToSettle), verdict.InsufficientData, "timed out")

	// The lag a PRESERVED reports is measured from when the API changed,
	// bracketed by the reads on either side.
	rounds = map[int]dnsRead{}
	for i := 0; i < 8; i++ {
		api := old
		if i >= 3 {
			api = cur
		}
		ip := api
		if i == 3 {
			ip = old
		}
		rounds[i] = dnsRead{api: api, ip: ip, ttl: 5}
	}
	expect(t, inv, dnsRounds(t, rounds, 8).input(WindowToSettle), verdict.Preserved, "after the API changed")
}
