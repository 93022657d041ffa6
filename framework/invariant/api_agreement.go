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
// asked at its own address, within the staleness bound.
//
// Reads: worker1/ready (whether the node exists and its Ready status),
// statefulpod/object (which pod, by UID, and its node) and
// service/endpoints (the ready addresses) from every "apiserver/*"
// source, the virtual address included. Heartbeat times and other
// fields that change with every renewal are not compared.
//
// Fires when two servers gave different answers to one question in every
// round of a stretch proven to last longer than staleness (see
// persistence.go). Reads are consistent reads, so servers that both
// answer can differ only while a change is in flight; a lasting
// difference is one server serving an old state.
//
// A server that does not answer serves no client, so it disagrees with
// no one; but two disagreements bridged only by rounds in which one of the
// pair was unreadable, lasting past the bound, are not proof either way:
// INSUFFICIENT_DATA, as when no round had two servers answering the same
// question.
func APIAgreement(staleness time.Duration) Invariant { return apiAgreement{staleness: staleness} }

type apiAgreement struct{ staleness time.Duration }

var agreementQuestions = []evidence.Question{evidence.NodeReady, evidence.PodObject, evidence.ServiceEndpoints}

func (apiAgreement) Name() string         { return APIAgreementName }
func (apiAgreement) Phase() verdict.Phase { return verdict.Safety }
func (apiAgreement) Reads() []Reading {
	var rs []Reading
	for _, q := range agreementQuestions {
		rs = append(rs, Reading{Sources: consistentReaders, Question: q})
	}
	return rs
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

func (a apiAgreement) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	compared := 0
	var servers []string
	var firstViolation, firstUnsure *struct {
		s           stretch
		q           evidence.Question
		left, right string
	}
	for _, q := range agreementQuestions {
		obs, gaps := collect[json.RawMessage](snaps, consistentReaders, q)
		servers = append(servers, sourcesOf(obs, gaps)...)
		// Per snapshot: each server's comparable answer, or unreadable.
		type said struct {
			value  string
			readAt time.Time
		}
		per := make([]map[string]said, len(snaps))
		for i := range per {
			per[i] = map[string]said{}
		}
		for _, o := range obs {
			v, err := comparable(q, o.Value)
			if err != nil {
				continue
			}
			per[o.Snapshot][string(o.Source)] = said{value: v, readAt: o.ReadAt}
		}
		names := sourcesOf(obs, gaps)
		for i, left := range names {
			for _, right := range names[i+1:] {
				var marks []mark
				for si, s := range snaps {
					l, lok := per[si][left]
					r, rok := per[si][right]
					m := mark{Taken: s.Taken}
					switch {
					case lok && rok:
						compared++
						m.ReadAt = later(l.readAt, r.readAt)
						if l.value == r.value {
							m.State = holds
						} else {
							m.State = broken
							m.Detail = fmt.Sprintf("%s said %s, %s said %s", left, l.value, right, r.value)
						}
					default:
						m.State = unknown
						m.ReadAt = s.Taken
						if lok {
							m.ReadAt = l.readAt
						}
						if rok {
							m.ReadAt = r.readAt
						}
					}
					marks = append(marks, m)
				}
				v, u := persisting(marks, a.staleness, false)
				if v != nil && (firstViolation == nil || v.Last.Taken.Before(firstViolation.s.Last.Taken)) {
					firstViolation = &struct {
						s           stretch
						q           evidence.Question
						left, right string
					}{*v, q, left, right}
				}
				if u != nil && (firstUnsure == nil || u.Last.Taken.Before(firstUnsure.s.Last.Taken)) {
					firstUnsure = &struct {
						s           stretch
						q           evidence.Question
						left, right string
					}{*u, q, left, right}
				}
			}
		}
	}
	servers = uniqueSorted(servers)
	if f := firstViolation; f != nil {
		return verdict.Judgement{Verdict: verdict.Violated,
			Reason: fmt.Sprintf("%s and %s disagreed about %s in every round from %s to %s, at least %s, beyond the staleness bound of %s (first: %s; last: %s)",
				f.left, f.right, f.q, stamp(f.s.First.Taken), stamp(f.s.Last.Taken), f.s.Lasted().Round(time.Millisecond), a.staleness, f.s.First.Detail, f.s.Last.Detail),
			Sources: []string{f.left, f.right}, At: f.s.Last.Taken}
	}
	if compared == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no round had two API servers answering the same question", Sources: servers}
	}
	if f := firstUnsure; f != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s and %s could not be shown to agree about %s from %s to %s (longer than the staleness bound of %s): they disagreed or one was unreadable in every round",
				f.left, f.right, f.q, stamp(f.s.First.Taken), stamp(f.s.Last.Taken), a.staleness),
			Sources: []string{f.left, f.right}, At: f.s.First.Taken}
	}
	return verdict.Judgement{Verdict: verdict.Preserved,
		Reason:  fmt.Sprintf("no disagreement between API servers lasted beyond %s (%d pairwise comparisons among %s)", a.staleness, compared, strings.Join(servers, ", ")),
		Sources: servers}
}
