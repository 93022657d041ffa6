package invariants

import (
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/verdict"
)

func dnsAnswer(rcode string, ip string, ttl uint32) dataplane.DNSAnswerValue {
	v := dataplane.DNSAnswerValue{Name: "dns-routes.faultline-agents.svc.cluster.local", Server: "10.240.5.3:53", Instance: "kube-system/coredns-x", RCode: rcode}
	if ip != "" {
		v.Answers = []dataplane.DNSRecord{{IP: ip, TTL: ttl}}
	}
	return v
}

// dnsRun: the service's address is .50 until second 3, none at second 3,
// .77 from second 4; the instance answers .50 until second stale.
func dnsRun(t *testing.T, rounds int, stale float64, rcodeAt map[int]string) *run {
	r := newRun(t)
	for i := 0; i < rounds; i++ {
		s := float64(i)
		exp := dataplane.DNSExpectedValue{Name: "dns-routes", IPs: []string{"10.250.0.50"}}
		switch {
		case s == 3:
			exp.IPs = nil
		case s > 3:
			exp.IPs = []string{"10.250.0.77"}
		}
		rd := r.Round(s).Value("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, exp, "")
		a := dnsAnswer("RCodeSuccess", "10.250.0.50", 5)
		if s >= stale {
			a = dnsAnswer("RCodeSuccess", "10.250.0.77", 5)
		}
		if rc := rcodeAt[i]; rc != "" {
			a = dnsAnswer(rc, "", 0)
		}
		rd.Value("coredns/worker2", dataplane.AgentDNSAnswer, 0.3, a, "")
	}
	return r
}

func TestDNSTruthful(t *testing.T) {
	inv := DNSTruthful(testBound(3*time.Second), 5*time.Second)

	// The instance follows within its TTL: PRESERVED, exercised.
	j := expect(t, inv, dnsRun(t, 12, 6, nil).Input(invariant.WindowToSettle), verdict.Preserved, "12 answers", "kept superseded records")
	if j.Exercised == nil || !*j.Exercised {
		t.Errorf("a change of the records exercises it: %+v", j)
	}

	// It keeps .50 to the end: at second 9, .50 was last recorded at 2.1,
	// more than TTL 5 s + bound 3 s before, and the reads from 4.1 on held
	// .77 unchanged. (At 8 the look-back reaches the read at 3.1 that
	// found no service, and the API changed after it: it may have held
	// .50 again at a moment no read saw.)
	expect(t, inv, dnsRun(t, 12, 100, nil).Input(invariant.WindowToSettle), verdict.Violated,
		"coredns/worker2 (kube-system/coredns-x at 10.240.5.3:53) answered [10.250.0.50] for dns-routes.faultline-agents.svc.cluster.local at 10:00:09.300", "TTL 5s left", "the same answer 3 time(s) through 10:00:11.300")

	// A server failure is no answer: with every answer declined, nothing
	// can be said.
	all := map[int]string{}
	for i := 0; i < 6; i++ {
		all[i] = "RCodeServerFailure"
	}
	expect(t, inv, dnsRun(t, 6, 100, all).Input(invariant.WindowToSettle), verdict.InsufficientData, "6 declined")

	// A name error while the name exists for longer than the negative TTL
	// and the bound is a wrong answer too.
	nx := map[int]string{}
	for i := 0; i < 15; i++ {
		nx[i] = dataplane.NameError
	}
	expect(t, inv, dnsRun(t, 15, 0, nx).Input(invariant.WindowToSettle), verdict.Violated, "answered nothing", "a name error is cached less than 5s")
	// The same name error in the last round only: no API read after it
	// shows the API did not delete the name just before it.
	last := map[int]string{13: dataplane.NameError}
	expect(t, inv, dnsRun(t, 14, 0, last).Input(invariant.WindowToSettle), verdict.InsufficientData, "no API read begun at or after 10:00:13.300")
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
		rd := r.Round(float64(i))
		d, ok := rounds[i]
		if !ok {
			continue
		}
		if d.api == "" {
			rd.Unreadable("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, "timeout: no answer within 5s")
		} else {
			rd.Value("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, dataplane.DNSExpectedValue{Name: "dns-routes", IPs: []string{d.api}}, "")
		}
		if d.ip != "" {
			rd.Value("coredns/worker2", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", d.ip, d.ttl), "")
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
	expect(t, inv, dnsRounds(t, rounds, 9).Input(invariant.WindowToSettle), verdict.Preserved)

	// A fresh entry (TTL 5) served at 9 with .50, gone from the API since
	// 4.1 at the latest: fetched after 8.0, later than the bound allows.
	rounds[7] = dnsRead{api: cur, ip: cur, ttl: 5}
	rounds[9] = dnsRead{api: cur, ip: old, ttl: 5}
	rounds[10] = dnsRead{api: cur, ip: cur, ttl: 5}
	expect(t, inv, dnsRounds(t, rounds, 11).Input(invariant.WindowToSettle), verdict.Violated, "coredns/worker2", "[10.250.0.50]")
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
	expect(t, inv, dnsRounds(t, rounds, 15).Input(invariant.WindowToSettle), verdict.InsufficientData, "timed out")

	// The lag a PRESERVED reports is measured from when the API changed,
	// bracketed by the reads on either side: the change came after the
	// read begun at 2.0 and by the one returned at 3.1; .50 was served in
	// [4.0, 4.3], so between 0.9 s and 2.3 s after it.
	rounds = map[int]dnsRead{}
	for i := 0; i < 8; i++ {
		api := old
		if i >= 3 {
			api = cur
		}
		ip := api
		if i == 3 || i == 4 {
			ip = old
		}
		rounds[i] = dnsRead{api: api, ip: ip, ttl: 5}
	}
	expect(t, inv, dnsRounds(t, rounds, 8).Input(invariant.WindowToSettle), verdict.Preserved, "between 900ms and 2.3s after the API changed")
}

// An answer no API read held is unknown, never wrong: the API can hold a
// state between two reads that neither sees. Here the name is recreated
// (deleted, then created with a new address) between the reads at 5.1
// and 6.1, so the API held "no such name" for a moment no read saw; an
// instance that heard the delete before the create caches a name error
// (less than 5 s) and serves it through 9. The first read of the input,
// holding .50, proves nothing about when the API stopped holding "nothing".
func TestDNSTruthfulAStateBetweenReadsIsNotProvenGone(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 12; i++ {
		api := "10.250.0.50"
		if i >= 6 {
			api = "10.250.0.77"
		}
		rd := r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, dataplane.DNSExpectedValue{Name: "dns-routes", IPs: []string{api}}, "")
		var a dataplane.DNSAnswerValue
		switch {
		case i < 6:
			a = dnsAnswer("RCodeSuccess", "10.250.0.50", 5)
		case i < 10:
			a = dnsAnswer(dataplane.NameError, "", 0)
		default:
			a = dnsAnswer("RCodeSuccess", "10.250.0.77", 5)
		}
		rd.Value("coredns/worker2", dataplane.AgentDNSAnswer, 0.3, a, "")
	}
	j := notVerdict(t, DNSTruthful(testBound(2*time.Second), 5*time.Second), r.Input(invariant.WindowToSettle), verdict.Violated)
	if j.Verdict != verdict.InsufficientData {
		t.Errorf("a name error no read held: got %s, want INSUFFICIENT_DATA: %s", j.Verdict, j.Reason)
	}
}

// The same with failed reads: the service is recreated at second 6 with
// address .77, every API read from 6 on timed out, and the instance
// answers the new, true address. No read held .77, so nothing shows when
// the API held it: unknown, not VIOLATED.
func TestDNSTruthfulAnAnswerNoReadHeldIsNotProvenWrong(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 12; i++ {
		rd := r.Round(float64(i))
		if i < 6 {
			rd.Value("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, dataplane.DNSExpectedValue{Name: "dns-routes", IPs: []string{"10.250.0.50"}}, "").Value(
				"coredns/worker2", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", "10.250.0.50", 5), "")

			continue
		}
		rd.Unreadable("apiserver/cp1", dataplane.AgentDNSExpected, 5, "timeout: no answer within 5s").Value(
			"coredns/worker2", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", "10.250.0.77", 5), "")

	}
	expect(t, DNSTruthful(testBound(2*time.Second), 5*time.Second), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "could not be compared with the API")
}

// A read that held the answer before does not make a later unseen state
// impossible: the API found no service at 0.1 and .50 from 1.1; the
// service is recreated (passing through "no such name") between the reads
// at 5.1 and 6.1. A name error served at 9 (from = 9 − 5 − 2 = 2) may come
// from that moment: unknown, not VIOLATED.
func TestDNSTruthfulARecreatedNameIsNotProvenNeverAbsent(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 12; i++ {
		var ips []string
		rv := ""
		switch {
		case i >= 6:
			ips, rv = []string{"10.250.0.77"}, "300"
		case i >= 1:
			ips, rv = []string{"10.250.0.50"}, "200"
		}
		a := dnsAnswer("RCodeSuccess", "10.250.0.50", 5)
		switch {
		case i >= 9:
			a = dnsAnswer(dataplane.NameError, "", 0)
		case i >= 7:
			a = dnsAnswer("RCodeSuccess", "10.250.0.77", 5)
		}
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, dataplane.DNSExpectedValue{Name: "dns-routes", IPs: ips}, rv).Value(
			"coredns/worker2", dataplane.AgentDNSAnswer, 0.3, a, "")

	}
	expect(t, DNSTruthful(testBound(2*time.Second), 5*time.Second), r.Input(invariant.WindowToSettle), verdict.InsufficientData,
		"changed between", "may have held it at a moment no read saw")
}

// Reads that contradict an answer on both sides of its look-back, the
// service unchanged between them, prove it wrong even when no read ever
// held it.
func TestDNSTruthfulUnchangedReadsProveAnAnswerNoReadHeldWrong(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 8; i++ {
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, dataplane.DNSExpectedValue{Name: "dns-routes", IPs: []string{"10.250.0.77"}}, "300").Value(
			"coredns/worker2", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", "10.250.0.50", 5), "")

	}
	expect(t, DNSTruthful(testBound(2*time.Second), 5*time.Second), r.Input(invariant.WindowToSettle), verdict.Violated,
		"answered [10.250.0.50]", "at 10:00:04.300", "no API read held it", "held [10.250.0.77], unchanged")
}

// A tick at which no snapshot was taken is an API read that did not
// happen: the API held .50 at 3.1, nothing was sampled from 4 to 9, and
// it held .77 at 10.1. An answer of .50 at 10 (from = 10 − 1 − 2 = 7) may
// be truthful (the API may have changed at 9.9) or not (at 3.2): unknown.
func TestDNSTruthfulMissedTicksAreUnknownReads(t *testing.T) {
	r := newRun(t)
	for i := 0; i < 14; i++ {
		if i >= 4 && i <= 9 {
			continue
		}
		api, ans := "10.250.0.50", "10.250.0.50"
		if i >= 10 {
			api = "10.250.0.77"
		}
		if i >= 11 {
			ans = "10.250.0.77"
		}
		r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, dataplane.DNSExpectedValue{Name: "dns-routes", IPs: []string{api}}, "").Value(
			"coredns/worker2", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", ans, 5), "")

	}
	in := r.Input(invariant.WindowToSettle)
	in.Timeline = missedAt(4, 5, 6, 7, 8, 9)
	expect(t, DNSTruthful(testBound(2*time.Second), 5*time.Second), in, verdict.InsufficientData, "no snapshot could be taken at 10:00:04.000")
}

// PRESERVED needs an answer from every instance after the change: the
// records change at 4, and every answer after it timed out, or was a
// server failure (the instance declined). Nothing shows the instance
// followed.
func TestDNSTruthfulPreservedNeedsAnAnswerAfterTheChange(t *testing.T) {
	for _, how := range []string{"timeout", "servfail", "covered"} {
		r := newRun(t)
		for i := 0; i < 16; i++ {
			api := "10.250.0.50"
			if i >= 4 {
				api = "10.250.0.77"
			}
			rd := r.Round(float64(i)).Value("apiserver/cp1", dataplane.AgentDNSExpected, 0.1, dataplane.DNSExpectedValue{Name: "dns-routes", IPs: []string{api}}, "").Value(
				"coredns/worker1", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", api, 5), "")

			switch {
			case i < 4:
				rd.Value("coredns/worker2", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", "10.250.0.50", 5), "")
			case how == "timeout":
				rd.Unreadable("coredns/worker2", dataplane.AgentDNSAnswer, 0.3, "timeout: no answer within 1s")
			case how == "servfail":
				rd.Value("coredns/worker2", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeServerFailure", "", 0), "")
			default:
				rd.Value("coredns/worker2", dataplane.AgentDNSAnswer, 0.3, dnsAnswer("RCodeSuccess", api, 5), "")
			}
		}
		in := r.Input(invariant.WindowToSettle)
		inv := DNSTruthful(testBound(2*time.Second), 5*time.Second)
		if how == "covered" {
			expect(t, inv, in, verdict.Preserved, "answers from the instances held records")
			continue
		}
		expect(t, inv, in, verdict.InsufficientData, "no answer of coredns/worker2 was served late enough")
	}
}

// A lag is never negative: an answer of the old records served in the
// round whose API read first showed the change may have been served
// before the change, so it shows no superseded records kept and no lag;
// the clamp to 0 reported one ("between 0s and ...").
func TestDNSTruthfulNoLagFromAnAnswerThatMayPrecedeTheChange(t *testing.T) {
	old, cur := "10.250.0.50", "10.250.0.77"
	rounds := map[int]dnsRead{}
	for i := 0; i < 14; i++ {
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
	j := expect(t, DNSTruthful(testBound(2*time.Second), 5*time.Second), dnsRounds(t, rounds, 14).Input(invariant.WindowToSettle), verdict.Preserved)
	if strings.Contains(j.Reason, "kept superseded records") {
		t.Errorf("a lag from an answer that may have been served before the change: %s", j.Reason)
	}
}
