package invariants

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/invariant"

	"github.com/faultline/faultline/framework/verdict"
)

// DNSTruthfulName names the dns-truthful invariant.
const DNSTruthfulName = "dns-truthful"

// DNSInstanceReaders are the CoreDNS instances' answers ("coredns/<node>").
const DNSInstanceReaders = "coredns/*"

// DNSTruthful: every CoreDNS instance answers for the test name with
// records the API held no longer ago than the instance's cache may keep
// an answer and the bound.
//
// Reads agents/dns-expected from every API server (the service's cluster
// address, none while it does not exist) and agents/dns-answer from every
// instance ("coredns/<node>": its response code and A records with their
// TTLs, asked at the instance's own address).
//
// How old an answer may be: the cache plugin stores an entry with a TTL
// of at most cacheTTL and serves it with the TTL counted down in whole
// seconds (coredns plugin/cache, item.ttl: stored TTL minus the whole
// seconds since it was stored), so an answer served with TTL r was
// fetched less than cacheTTL − r + 1 s before it was served; a name error
// carries no record TTL, so less than cacheTTL. It was served at or after
// the start of its round, so it was fetched after Taken − that age. The
// kubernetes plugin answers from its informer, which may lag the API by
// the bound: the API must have held the answer's records at some moment
// at or after from = Taken − age − bound.
//
// An answer is broken when the API is proven not to have held its records
// at any moment from from until the answer was served: a readable read
// (of any server) returned by from did not hold them, was begun after the
// last read holding them (if any) returned, and every read from it
// through the first read begun after the answer found the same records at
// the same resourceVersion, none failing and no tick missed between. A
// state between two reads that differ is not seen (a service recreated
// between them passes through "no such name"), so an answer whose
// look-back spans a change or a failed read is unknown, as is one with no
// API read after it; two reads that found no service carry no
// resourceVersion, so a name created and deleted again between them is
// not seen (resolution: one sampling interval). An answer holds when a
// read holding its records returned at or after from, or when the reads
// bracketing the change (the last holding them, the first after it not
// holding them) were consecutive, with from between them: the API may
// have changed after from. It is unknown when API reads failed or a tick
// was missed between those two: a gap never stands for "the API no longer
// held it". A server failure (SERVFAIL, REFUSED) is no answer: the
// instance declined.
//
// Fires on the first broken answer. INSUFFICIENT_DATA when an answer is
// unknown, no instance answered or no API server was read, or, when the
// API's records changed, an instance gave no answer (readable, not
// declined) served late enough that its look-back starts after the last
// change returned: PRESERVED needs every answer shown to be within its
// age and the bound, and every instance shown to have followed.
//
// Why: CoreDNS's kubernetes plugin answers from its informer's cache of
// Services and EndpointSlices; an instance whose watch stopped keeps
// answering what it last heard, with a fresh TTL each time, and nothing in
// Kubernetes compares its answers with the API.
//
// Exercised when the API's records changed during the input. A PRESERVED
// reason gives the longest an instance kept superseded records, measured
// from when the API changed (between the last read holding them and the
// first not holding them) to the answer.
func DNSTruthful(bound invariant.Bound, cacheTTL time.Duration) invariant.Invariant {
	return dnsTruthful{bound: bound, cacheTTL: cacheTTL}
}

type dnsTruthful struct {
	bound    invariant.Bound
	cacheTTL time.Duration
}

func (dnsTruthful) Name() string           { return DNSTruthfulName }
func (dnsTruthful) Phase() verdict.Phase   { return verdict.Safety }
func (d dnsTruthful) Bound() time.Duration { return d.bound.Limit }
func (dnsTruthful) Reads() []invariant.Reading {
	return []invariant.Reading{
		{Sources: invariant.ConsistentReaders, Question: dataplane.AgentDNSExpected},
		{Sources: DNSInstanceReaders, Question: dataplane.AgentDNSAnswer},
	}
}

// apiRecords is what one API server held at one read.
type apiRecords struct {
	taken, at time.Time
	source    string
	set       string
	// rv is the service's resourceVersion, "" when it did not exist.
	rv string
}

// maxAge is the longest ago an answer can have been fetched: the cache
// counts a stored TTL of at most cacheTTL down in whole seconds.
func (d dnsTruthful) maxAge(v dataplane.DNSAnswerValue) (time.Duration, string) {
	if v.RCode != "RCodeSuccess" || len(v.Answers) == 0 {
		return d.cacheTTL, fmt.Sprintf("a name error is cached less than %s", d.cacheTTL)
	}
	r := time.Duration(v.Answers[0].TTL) * time.Second
	for _, a := range v.Answers {
		r = min(r, time.Duration(a.TTL)*time.Second)
	}
	left := max(d.cacheTTL-r, 0)
	return left + time.Second, fmt.Sprintf("TTL %s left of at most %s, counted down in whole seconds: fetched less than %s before", r, d.cacheTTL, left+time.Second)
}

// heldSince says whether the API can have held set at some moment in
// [from, until] (until: when the answer was served), and when it changed
// away from it: the last read holding it and the read that shows it no
// longer held it.
type heldState int

const (
	heldMaybe heldState = iota
	heldNot
	heldUnknown
)

// apiHistory is what the API servers were read to hold: the readable
// reads, the reads that failed and the ticks at which nothing was read.
type apiHistory struct {
	recs   []apiRecords
	gaps   []invariant.Gap
	missed []invariant.MissedTick
}

// silent says why the API's state between lo and hi was not read, if a
// read failed or a tick was missed between them.
func (h apiHistory) silent(lo, hi time.Time) string {
	for _, g := range h.gaps {
		if g.At.After(lo) && g.At.Before(hi) {
			return fmt.Sprintf("%s's read at %s timed out or failed (%s)", g.Source, invariant.Stamp(g.At), g.Reason)
		}
	}
	for _, m := range h.missed {
		if m.At.After(lo) && m.At.Before(hi) {
			return fmt.Sprintf("no snapshot could be taken at %s (%s)", invariant.Stamp(m.At), m.Why)
		}
	}
	return ""
}

func (h apiHistory) heldSince(set string, from, until time.Time) (state heldState, last, next *apiRecords, why string) {
	recs := h.recs
	for i := range recs {
		if recs[i].set == set && (last == nil || recs[i].at.After(last.at)) {
			last = &recs[i]
		}
	}
	if last != nil && !last.at.Before(from) {
		return heldMaybe, last, nil, ""
	}
	// next: the latest read returned by from, begun after the last read
	// holding set returned, that did not hold it.
	for i := range recs {
		r := &recs[i]
		if r.set == set || r.at.After(from) || (last != nil && r.taken.Before(last.at)) {
			continue
		}
		if next == nil || r.at.After(next.at) {
			next = r
		}
	}
	if next == nil {
		if last == nil {
			return heldUnknown, nil, nil, fmt.Sprintf("no API read returned by %s shows what the API held then", invariant.Stamp(from))
		}
		// The change away from set (if there was one) may have come after
		// from; whether the reads between say so decides.
		hi := from
		if n := firstAfter(recs, set, last); n != nil {
			hi = n.taken
		}
		if s := h.silent(last.at, hi); s != "" {
			return heldUnknown, last, nil, s + ", between the last read that held it and the first that did not"
		}
		return heldMaybe, last, nil, ""
	}
	// The API did not hold set at next's read; it is proven not to have
	// held it at any moment up to until only if every read from next to
	// the first read begun at or after until found the same records at the
	// same resourceVersion, and none failed or was missed between: a
	// state between two reads that differ is not seen (a service recreated
	// between them passes through "no such name"). Two reads that found no
	// service at all carry no resourceVersion: a name created and deleted
	// again between them is not seen (resolution: one sampling interval).
	var after *apiRecords
	for i := range recs {
		r := &recs[i]
		if !r.taken.Before(until) && (after == nil || r.taken.Before(after.taken)) {
			after = r
		}
	}
	if after == nil {
		return heldUnknown, last, next, fmt.Sprintf("no API read begun at or after %s shows the API did not hold it again by then", invariant.Stamp(until))
	}
	for i := range recs {
		r := &recs[i]
		if r.at.Before(next.taken) || r.taken.After(after.at) {
			continue
		}
		if r.set != next.set || r.rv != next.rv {
			return heldUnknown, last, next, fmt.Sprintf("the API's records changed between %s's read returned at %s (%s) and %s's read returned at %s (%s), so it may have held it at a moment no read saw",
				next.source, invariant.Stamp(next.at), next.set, r.source, invariant.Stamp(r.at), r.set)
		}
	}
	if s := h.silent(next.taken, after.at); s != "" {
		return heldUnknown, last, next, s + ", after the read that shows the API no longer held it, so it may have held it again unseen"
	}
	return heldNot, last, next, ""
}

func (d dnsTruthful) Judge(in invariant.Input) verdict.Judgement {
	snaps := invariant.Ordered(in.Snapshots)
	exps, expGaps := invariant.Collect[dataplane.DNSExpectedValue](snaps, invariant.ConsistentReaders, dataplane.AgentDNSExpected)
	answers, ansGaps := invariant.Collect[dataplane.DNSAnswerValue](snaps, DNSInstanceReaders, dataplane.AgentDNSAnswer)
	if len(exps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered for the test name's records: " + invariant.GapSummary(expGaps)}
	}
	if len(answers) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no DNS instance answered: " + invariant.GapSummary(ansGaps)}
	}
	var recs []apiRecords
	changed := false
	for _, o := range exps {
		r := apiRecords{taken: o.Taken, at: o.ReadAt, source: string(o.Source), set: setText(slices.Sorted(slices.Values(o.Value.IPs))), rv: o.RV}
		if len(recs) > 0 && recs[0].set != r.set {
			changed = true
		}
		recs = append(recs, r)
	}
	hist := apiHistory{recs: recs, gaps: expGaps, missed: invariant.MissedTicks(in)}
	exercise := "the API's records for the name never changed"
	if changed {
		exercise = "the API's records for the name changed, so every instance had to follow"
	}
	sort.SliceStable(answers, func(i, j int) bool { return answers[i].ReadAt.Before(answers[j].ReadAt) })
	held, declined := 0, 0
	// lookedPast is, per instance, the latest start of a held answer's
	// look-back.
	lookedPast := map[string]time.Time{}
	var unknowns []string
	var longestLo, longest time.Duration
	lagOf := ""
	for _, o := range answers {
		v := o.Value
		var ips []string
		switch v.RCode {
		case "RCodeSuccess":
			ips = ipsOf(v)
		case dataplane.NameError:
		default:
			declined++
			continue
		}
		got := setText(slices.Sorted(slices.Values(ips)))
		age, ageWhy := d.maxAge(v)
		from := o.Taken.Add(-age - d.bound.Limit)
		state, last, next, why := hist.heldSince(got, from, o.ReadAt)
		switch state {
		case heldMaybe:
			held++
			if from.After(lookedPast[string(o.Source)]) {
				lookedPast[string(o.Source)] = from
			}
			if next != nil || (last != nil && got != latestSet(recs, o.ReadAt)) {
				// Kept superseded records: the API changed after the last
				// read holding them began and by the first read not
				// holding them returned. Only an answer served after that
				// return (its round began then or later) is shown to be
				// superseded; one that may have been served before it has
				// no lag to report.
				if n := firstAfter(recs, got, last); n != nil && !o.Taken.Before(n.at) {
					lo, hi := o.Taken.Sub(n.at), o.ReadAt.Sub(last.taken)
					if hi > longest {
						longestLo, longest, lagOf = lo, hi, string(o.Source)
					}
				}
			}
		case heldUnknown:
			unknowns = append(unknowns, fmt.Sprintf("%s answered %s at %s (%s), so the API must have held it at or after %s: %s", o.Source, got, invariant.Stamp(o.ReadAt), ageWhy, invariant.Stamp(from), why))
		case heldNot:
			same, until := 0, o.ReadAt
			for _, later := range answers {
				if later.Source == o.Source && !later.ReadAt.Before(o.ReadAt) && later.Value.RCode == v.RCode && setText(slices.Sorted(slices.Values(ipsOf(later.Value)))) == got {
					same++
					until = later.ReadAt
				}
			}
			heldText := "no API read held it"
			if last != nil {
				heldText = fmt.Sprintf("the API held it last in %s's read returned at %s", last.source, invariant.Stamp(last.at))
			}
			return verdict.Judgement{Verdict: verdict.Violated,
				Reason: fmt.Sprintf("%s (%s at %s) answered %s for %s at %s (%s), so the API must have held it at some moment from %s to then (bound %s); %s, and from %s's read returned at %s on every read held %s, unchanged, none failing, through the first read begun after the answer; it gave the same answer %d time(s) through %s",
					o.Source, v.Instance, v.Server, got, v.Name, invariant.Stamp(o.ReadAt), ageWhy, invariant.Stamp(from), d.bound, heldText, next.source, invariant.Stamp(next.at), next.set, same, invariant.Stamp(until)),
				Sources: []string{string(o.Source)}, At: o.Taken, Exercised: verdict.Exercised(), Exercise: exercise}
		}
	}
	if len(unknowns) > 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%d answer(s) could not be compared with the API (%d held, %d declined with a server failure); first: %s", len(unknowns), held, declined, unknowns[0])}
	}
	if held == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: fmt.Sprintf("no answer could be compared with the API: %d declined (server failure)", declined)}
	}
	if changed {
		// Every instance must be shown to have followed the last change:
		// an answer whose look-back starts after the change returned, so
		// that it would have been proven wrong had the instance kept the
		// superseded records.
		change := lastChange(recs)
		for _, src := range invariant.SourcesOf(answers, ansGaps) {
			if !lookedPast[src].Before(change.at) {
				continue
			}
			return verdict.Judgement{Verdict: verdict.InsufficientData,
				Reason: fmt.Sprintf("the API's records changed to %s by %s's read returned at %s, and no answer of %s was served late enough to show it followed (its possible age and the bound %s after the change), so whether it kept the superseded records is not known (%d answers held, %d declined with a server failure)",
					change.set, change.source, invariant.Stamp(change.at), src, d.bound.Limit, held, declined)}
		}
	}
	reason := fmt.Sprintf("%d answers from the instances held records the API held within their possible age (the cache keeps an entry at most %s) and the bound %s", held, d.cacheTTL, d.bound.Limit)
	if declined > 0 {
		reason += fmt.Sprintf(" (%d declined with a server failure: not counted)", declined)
	}
	if longest > 0 {
		reason += fmt.Sprintf("; the longest an instance kept superseded records was between %s and %s after the API changed, on %s", longestLo.Round(time.Millisecond), longest.Round(time.Millisecond), lagOf)
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Exercise: exercise}
	if changed {
		j.Exercised = verdict.Exercised()
	} else {
		j.Exercised = verdict.NotExercised()
	}
	return j
}

// lastChange is the read (in the order the reads returned) that first
// showed the API's last change of records.
func lastChange(recs []apiRecords) apiRecords {
	byAt := append([]apiRecords(nil), recs...)
	sort.SliceStable(byAt, func(i, j int) bool { return byAt[i].at.Before(byAt[j].at) })
	var out apiRecords
	for i := 1; i < len(byAt); i++ {
		if byAt[i].set != byAt[i-1].set {
			out = byAt[i]
		}
	}
	return out
}

// firstAfter is the first read begun after last returned that did not
// hold set: by its return the API had changed away from set.
func firstAfter(recs []apiRecords, set string, last *apiRecords) *apiRecords {
	if last == nil {
		return nil
	}
	var out *apiRecords
	for i := range recs {
		r := &recs[i]
		if r.set == set || r.taken.Before(last.at) {
			continue
		}
		if out == nil || r.at.Before(out.at) {
			out = r
		}
	}
	return out
}

func ipsOf(v dataplane.DNSAnswerValue) []string {
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
