package invariant

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// DNSTruthfulName names the dns-truthful invariant.
const DNSTruthfulName = "dns-truthful"

// DNSInstanceReaders are the CoreDNS instances' answers ("coredns/<node>").
const DNSInstanceReaders = "coredns/*"

// DNSTruthful: every CoreDNS instance answers for the test name with
// records the API held at some moment no longer ago than the answer's TTL
// and the bound.
//
// Reads agents/dns-expected from every API server (the service's cluster
// address, none while it does not exist) and agents/dns-answer from every
// instance ("coredns/<node>": its response code and A records with their
// TTLs, asked at the instance's own address).
//
// An answer read at t with TTL ttl (the largest of its records'; for a
// name error, negativeTTL, what the server's configuration caches a
// negative answer for) holds when, in a round taken between t − ttl −
// bound and t, an API server recorded exactly its records (a name error:
// no records). It is broken when no such round recorded them while one
// was read; unknown when no API server was read in that stretch. A server
// failure (SERVFAIL, REFUSED) is unreadable, not wrong: the instance
// declined to answer. Fires on the first broken answer: the lookback
// already allows the TTL and the bound, so one answer outside it is a
// client given records the cluster stopped holding longer ago than it
// could have cached them. INSUFFICIENT_DATA when no instance answered or
// no API server was read.
//
// Why: CoreDNS's kubernetes plugin answers from its informer's cache of
// Services and EndpointSlices; an instance whose watch stopped keeps
// answering what it last heard, with a fresh TTL each time, and nothing in
// Kubernetes compares its answers with the API.
//
// Exercised when the API's records changed during the input.
func DNSTruthful(bound Bound, negativeTTL time.Duration) Invariant {
	return dnsTruthful{bound: bound, negativeTTL: negativeTTL}
}

type dnsTruthful struct {
	bound       Bound
	negativeTTL time.Duration
}

func (dnsTruthful) Name() string           { return DNSTruthfulName }
func (dnsTruthful) Phase() verdict.Phase   { return verdict.Safety }
func (d dnsTruthful) Bound() time.Duration { return d.bound.Limit }
func (dnsTruthful) Reads() []Reading {
	return []Reading{
		{Sources: consistentReaders, Question: evidence.AgentDNSExpected},
		{Sources: DNSInstanceReaders, Question: evidence.AgentDNSAnswer},
	}
}

// apiRecords is what one API server held in one round.
type apiRecords struct {
	at     time.Time
	source string
	set    string
}

func (d dnsTruthful) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	exps, expGaps := collect[evidence.DNSExpectedValue](snaps, consistentReaders, evidence.AgentDNSExpected)
	answers, ansGaps := collect[evidence.DNSAnswerValue](snaps, DNSInstanceReaders, evidence.AgentDNSAnswer)
	if len(exps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered for the test name's records: " + gapSummary(expGaps)}
	}
	if len(answers) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no DNS instance answered: " + gapSummary(ansGaps)}
	}
	var recs []apiRecords
	changed := false
	for _, o := range exps {
		r := apiRecords{at: o.ReadAt, source: string(o.Source), set: setText(sortedCopy(o.Value.IPs))}
		if len(recs) > 0 && recs[0].set != r.set {
			changed = true
		}
		recs = append(recs, r)
	}
	exercise := "the API's records for the name never changed"
	if changed {
		exercise = "the API's records for the name changed, so every instance had to follow"
	}
	sort.SliceStable(answers, func(i, j int) bool { return answers[i].ReadAt.Before(answers[j].ReadAt) })
	held, declined, unknowns := 0, 0, 0
	var lastUnknown string
	longestLag, lagOf := time.Duration(0), ""
	for _, o := range answers {
		v := o.Value
		var ips []string
		ttl := d.negativeTTL
		switch v.RCode {
		case "RCodeSuccess":
			ttl = 0
			ips = ipsOf(v)
			for _, a := range v.Answers {
				ttl = max(ttl, time.Duration(a.TTL)*time.Second)
			}
		case evidence.NameError:
		default:
			declined++
			continue
		}
		got := setText(sortedCopy(ips))
		from := o.ReadAt.Add(-ttl - d.bound.Limit)
		var seen []string
		matched := false
		var newest time.Time
		for _, r := range recs {
			if r.at.Before(from) || r.at.After(o.ReadAt) {
				continue
			}
			seen = append(seen, fmt.Sprintf("%s %s at %s", r.source, r.set, stamp(r.at)))
			if r.set == got {
				matched = true
				if r.at.After(newest) {
					newest = r.at
				}
			}
		}
		switch {
		case matched:
			held++
			if lag := o.ReadAt.Sub(newest); lag > longestLag && got != latestSet(recs, o.ReadAt) {
				longestLag, lagOf = lag, string(o.Source)
			}
		case len(seen) == 0:
			unknowns++
			lastUnknown = fmt.Sprintf("%s answered %s at %s and no API server was read in the %s before it", o.Source, got, stamp(o.ReadAt), (ttl + d.bound.Limit).Round(time.Millisecond))
		default:
			// How long the instance went on answering the same.
			same, until := 0, o.ReadAt
			for _, later := range answers {
				if later.Source == o.Source && !later.ReadAt.Before(o.ReadAt) && later.Value.RCode == v.RCode && setText(sortedCopy(ipsOf(later.Value))) == got {
					same++
					until = later.ReadAt
				}
			}
			return verdict.Judgement{Verdict: verdict.Violated,
				Reason: fmt.Sprintf("%s (%s at %s) answered %s for %s at %s with TTL %s, while no API server recorded that since %s (the TTL, and the bound %s): %s; it gave the same answer %d time(s) through %s",
					o.Source, v.Instance, v.Server, got, v.Name, stamp(o.ReadAt), ttl, stamp(from), d.bound, strings.Join(lastN(seen, 3), "; "), same, stamp(until)),
				Sources: []string{string(o.Source)}, At: o.Taken, Exercised: verdict.Exercised(), Exercise: exercise}
		}
	}
	if held == 0 {
		reason := fmt.Sprintf("no answer could be compared with the API: %d declined (server failure), %d with no API read in their lookback", declined, unknowns)
		if lastUnknown != "" {
			reason += "; last: " + lastUnknown
		}
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: reason}
	}
	reason := fmt.Sprintf("%d answers from the instances matched records the API held within their TTL and the bound %s", held, d.bound.Limit)
	if declined+unknowns > 0 {
		reason += fmt.Sprintf(" (%d declined with a server failure, %d with no API read to compare: not counted)", declined, unknowns)
	}
	if longestLag > 0 {
		reason += fmt.Sprintf("; the longest an instance kept superseded records was %s, on %s", longestLag.Round(time.Millisecond), lagOf)
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Exercise: exercise}
	if changed {
		j.Exercised = verdict.Exercised()
	} else {
		j.Exercised = verdict.NotExercised()
	}
	return j
}

func ipsOf(v evidence.DNSAnswerValue) []string {
	var ips []string
	for _, a := range v.Answers {
		ips = append(ips, a.IP)
	}
	return ips
}

// latestSet is the records the newest API read at or before t held.
func latestSet(recs []apiRecords, t time.Time) string {
	var best apiRecords
	for _, r := range recs {
		if !r.at.After(t) && !r.at.Before(best.at) {
			best = r
		}
	}
	return best.set
}

func lastN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
