package invariant

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// APIAgreementName names the api-agreement invariant.
const APIAgreementName = "api-agreement"

// APIAgreement: the API servers agree about worker1's readiness, the
// stateful pod's node and the test service's ready endpoints, each server
// asked at its own address, within each question's bound.
//
// Reads: worker1/ready (whether the node exists and its Ready status),
// statefulpod/object (which pod, by UID, and its node) and
// service/endpoints (the ready addresses) from every "apiserver/*"
// source, the virtual address included. Heartbeat times and other
// fields that change with every renewal are not compared.
//
// Every answer is a consistent read (source.APIServer asks with no
// resourceVersion: the GETs are quorum reads from etcd, the LIST is served
// from the watch cache only once the cache is proven as fresh as etcd), so
// two servers answering in one round differ only while a change is in
// flight between their reads; a lasting difference is one server serving
// an old state. Each question has its own bound, with the mechanism it
// models; the verdict prints both.
//
// Each round, for each pair of servers and question: the pair agrees when
// both answered alike, differs when both answered differently, and also
// agrees when one of them refused or answered with an error (a server that
// refuses serves no client, so it disagrees with no one). A read that
// timed out, was cancelled or could not reach its server leaves the round
// unknown: that server may have been serving anything.
//
// VIOLATED when a pair differed in every round of a stretch proven to last
// longer than the question's bound (see persistence.go).
//
// INSUFFICIENT_DATA when no round had two servers answering one question;
// or when a pair was not shown to agree over a stretch of differing or
// unknown rounds longer than the bound: a difference continued or bridged
// by unknown rounds, or unknown rounds alone (the pair not compared).
// PRESERVED thus needs every pair of serving servers compared across the
// whole input, at the bound's resolution; one comparison is not enough. A
// server that refused in every round is no pair's member and is listed
// apart; one that timed out throughout leaves its pairs uncovered.
//
// PRESERVED otherwise. It is exercised when some server's answer changed
// during the input (a change every server had to agree on) or some pair
// was seen to differ; if neither, nothing the servers had to agree on
// moved, and it is not exercised. VIOLATED is always exercised.
func APIAgreement(bounds map[evidence.Question]Bound) Invariant {
	own := make(map[evidence.Question]Bound, len(bounds))
	for q, b := range bounds {
		own[q] = b
	}
	return apiAgreement{bounds: own}
}

type apiAgreement struct{ bounds map[evidence.Question]Bound }

var agreementQuestions = []evidence.Question{evidence.NodeReady, evidence.PodObject, evidence.ServiceEndpoints}

func (apiAgreement) Name() string         { return APIAgreementName }
func (apiAgreement) Phase() verdict.Phase { return verdict.Safety }
func (apiAgreement) Reads() []Reading {
	var rs []Reading
	for _, q := range agreementQuestions {
		rs = append(rs, Reading{Sources: ConsistentReaders, Question: q})
	}
	return rs
}

// Bound is the largest of the questions' bounds: a difference on any
// question can fire only once it lasted past its own.
func (a apiAgreement) Bound() time.Duration {
	var longest time.Duration
	for _, b := range a.bounds {
		longest = max(longest, b.Limit)
	}
	return longest
}

// comparable renders the part of an answer the servers must agree on.
func comparable(q evidence.Question, raw json.RawMessage) (string, error) {
	switch q {
	case evidence.NodeReady:
		var v evidence.NodeReadyValue
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", err
		}
		if !v.Exists {
			return "no node", nil
		}
		return "Ready=" + v.Status, nil
	case evidence.PodObject:
		var v evidence.PodValue
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", err
		}
		if !v.Exists {
			return "no pod", nil
		}
		return fmt.Sprintf("pod %s on %q", v.UID, v.NodeName), nil
	case evidence.ServiceEndpoints:
		var v evidence.EndpointsValue
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", err
		}
		ready := append([]string(nil), v.Ready...)
		sort.Strings(ready)
		return "ready [" + strings.Join(ready, " ") + "]", nil
	}
	return "", fmt.Errorf("no comparison for %s", q)
}

// pairStretch is a stretch of one pair's rounds on one question, with the
// marks it came from.
type pairStretch struct {
	s           Stretch
	at          time.Time // when the stretch first passed the bound
	q           evidence.Question
	left, right string
	marks       []Mark
	gaps        []Gap
}

// firstDifference is the detail of the stretch's first differing round.
func (p pairStretch) firstDifference() string {
	for _, m := range p.marks {
		if m.State == Broken && !m.Taken.Before(p.s.First.Taken) && !m.Taken.After(p.s.Last.Taken) {
			return m.Detail
		}
	}
	return ""
}

// said is one server's comparable answer in one round.
type said struct {
	value  string
	readAt time.Time
}

func (a apiAgreement) Judge(in Input) verdict.Judgement {
	for _, q := range agreementQuestions {
		if b, ok := a.bounds[q]; !ok || b.Limit <= 0 {
			return verdict.Judgement{Verdict: verdict.InsufficientData,
				Reason: fmt.Sprintf("no bound was declared for how long API servers may differ about %s, so no difference can be judged", q)}
		}
	}
	snaps := Ordered(in.Snapshots)
	comparisons := 0
	compared := map[string]bool{}
	answered := map[string]bool{}
	unknownSeen := map[string]bool{}
	var seen []string
	var allGaps []Gap
	var violation, unsure *pairStretch
	var change, difference string
	missed := MissedTicks(in)
	for _, q := range agreementQuestions {
		bound := a.bounds[q].Limit
		obs, gaps := Collect[json.RawMessage](snaps, ConsistentReaders, q)
		per := make([]map[string]said, len(snaps))
		refused := make([]map[string]bool, len(snaps))
		for i := range snaps {
			per[i], refused[i] = map[string]said{}, map[string]bool{}
		}
		last := map[string]said{}
		for _, o := range obs {
			v, err := comparable(q, o.Value)
			if err != nil {
				gaps = append(gaps, Gap{Source: o.Source, Snapshot: o.Snapshot, At: o.ReadAt, Reason: "error: " + err.Error()})
				continue
			}
			src := string(o.Source)
			per[o.Snapshot][src] = said{value: v, readAt: o.ReadAt}
			answered[src] = true
			if prev, ok := last[src]; ok && prev.value != v && change == "" {
				change = fmt.Sprintf("%s's answer to %s changed from %s (read %s) to %s (read %s), a change every server had to agree on",
					src, q, prev.value, Stamp(prev.readAt), v, Stamp(o.ReadAt))
			}
			last[src] = said{value: v, readAt: o.ReadAt}
		}
		// A server that answered q in no round and refused it in every
		// round serves no client q: it is no pair's member.
		servesNone := map[string]bool{}
		for _, g := range gaps {
			src := string(g.Source)
			if g.Refused {
				refused[g.Snapshot][src] = true
				if _, ok := last[src]; !ok {
					if _, set := servesNone[src]; !set {
						servesNone[src] = true
					}
				}
			} else {
				servesNone[src] = false
				unknownSeen[src] = true
			}
		}
		allGaps = append(allGaps, gaps...)
		names := SourcesOf(obs, gaps)
		seen = append(seen, names...)
		for i, left := range names {
			if servesNone[left] {
				continue
			}
			for _, right := range names[i+1:] {
				if servesNone[right] {
					continue
				}
				var marks []Mark
				for si, s := range snaps {
					l, lok := per[si][left]
					r, rok := per[si][right]
					m := Mark{Taken: s.Taken, ReadAt: s.Taken}
					switch {
					case lok && rok:
						comparisons++
						compared[left], compared[right] = true, true
						m.ReadAt = later(l.readAt, r.readAt)
						if l.value == r.value {
							m.State = Holds
						} else {
							m.State = Broken
							m.Detail = fmt.Sprintf("%s said %s, %s said %s", left, l.value, right, r.value)
							if difference == "" {
								difference = fmt.Sprintf("%s and %s disagreed about %s in the round of %s (%s)", left, right, q, Stamp(s.Taken), m.Detail)
							}
						}
					case refused[si][left] || refused[si][right]:
						m.State = Holds
					default:
						m.State = Unknown
						if lok {
							m.ReadAt = l.readAt
						}
						if rok {
							m.ReadAt = r.readAt
						}
					}
					marks = append(marks, m)
				}
				marks = WithMissed(marks, missed)
				v, u := Persisting(marks, bound, true)
				pairGaps := gapsOf(gaps, left, right)
				if v != nil && (violation == nil || v.Last.Taken.Before(violation.at)) {
					violation = &pairStretch{s: Widened(marks, *v), at: v.Last.Taken, q: q, left: left, right: right, marks: marks, gaps: pairGaps}
				}
				if u != nil && (unsure == nil || u.Last.Taken.Before(unsure.at)) {
					unsure = &pairStretch{s: Widened(marks, *u), at: u.Last.Taken, q: q, left: left, right: right, marks: marks, gaps: pairGaps}
				}
			}
		}
	}
	seen = uniqueSorted(seen)
	var comparedList, refusedList, unknownList []string
	for _, src := range seen {
		switch {
		case compared[src]:
			comparedList = append(comparedList, src)
		case !answered[src] && !unknownSeen[src]:
			refusedList = append(refusedList, src)
		default:
			unknownList = append(unknownList, src)
		}
	}
	servers := fmt.Sprintf("compared: %s (%d pairwise comparisons)", listOrNone(comparedList), comparisons)
	if len(refusedList) > 0 {
		servers += "; refused throughout, serving no client: " + strings.Join(refusedList, ", ")
	}
	if len(unknownList) > 0 {
		servers += "; never compared, unknown: " + strings.Join(unknownList, ", ")
	}
	if f := violation; f != nil {
		reason := fmt.Sprintf("%s and %s disagreed about %s in every round from %s to %s, at least %s, beyond its bound of %s (first: %s; last: %s)",
			f.left, f.right, f.q, Stamp(f.s.First.Taken), Stamp(f.s.Last.Taken), f.s.Lasted().Round(time.Millisecond), a.bounds[f.q], f.s.First.Detail, f.s.Last.Detail)
		return verdict.Judgement{Verdict: verdict.Violated, Reason: reason, Sources: []string{f.left, f.right}, At: f.at,
			Exercised: verdict.Exercised(), Exercise: fmt.Sprintf("%s and %s disagreed about %s from %s", f.left, f.right, f.q, Stamp(f.s.First.Taken))}
	}
	if comparisons == 0 {
		reason := "no round had two API servers answering the same question; " + servers
		if len(allGaps) > 0 {
			reason += "; " + GapSummary(allGaps)
		}
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: reason, Sources: seen}
	}
	if f := unsure; f != nil {
		var what string
		if f.s.Broken > 0 {
			what = fmt.Sprintf("%s and %s could not be shown to agree about %s from %s to %s, longer than its bound of %s: they disagreed in %d of those rounds (first: %s), and in the others one of them timed out or could not be reached, so the difference may have lasted throughout",
				f.left, f.right, f.q, Stamp(f.s.First.Taken), Stamp(f.s.Last.Taken), a.bounds[f.q], f.s.Broken, f.firstDifference())
		} else {
			what = fmt.Sprintf("%s and %s were not compared about %s from %s to %s, longer than its bound of %s: in every round one of them timed out or could not be reached, so a difference past the bound could have gone unseen",
				f.left, f.right, f.q, Stamp(f.s.First.Taken), Stamp(f.s.Last.Taken), a.bounds[f.q])
		}
		if len(f.gaps) > 0 {
			what += " (" + GapSummary(f.gaps) + ")"
		}
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: what + "; " + servers,
			Sources: []string{f.left, f.right}, At: f.s.First.Taken}
	}
	var bounds []string
	for _, q := range agreementQuestions {
		bounds = append(bounds, fmt.Sprintf("%s %s", q, a.bounds[q]))
	}
	j := verdict.Judgement{Verdict: verdict.Preserved,
		Reason: fmt.Sprintf("no two API servers differed past the bound over the %s, every pair of serving servers compared throughout at the bound's resolution (bounds: %s); %s",
			in.Moment, strings.Join(bounds, "; "), servers),
		Sources: comparedList}
	switch {
	case change != "" && difference != "":
		j.Exercised, j.Exercise = verdict.Exercised(), change+"; "+difference+", and no longer did within the bound"
	case change != "":
		j.Exercised, j.Exercise = verdict.Exercised(), change
	case difference != "":
		j.Exercised, j.Exercise = verdict.Exercised(), difference+", and no longer did within the bound"
	default:
		j.Exercised, j.Exercise = verdict.NotExercised(), fmt.Sprintf("no compared answer changed over the %s (%d rounds) and no two servers differed: nothing the servers had to agree on moved", in.Moment, len(snaps))
	}
	return j
}

// gapsOf keeps the gaps of the sources named.
func gapsOf(gaps []Gap, sources ...string) []Gap {
	var out []Gap
	for _, g := range gaps {
		for _, s := range sources {
			if string(g.Source) == s {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

func listOrNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}
