package invariant

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// NoTimeTravelName names the no-time-travel invariant.
const NoTimeTravelName = "no-time-travel"

// noTimeTravelQuestions are the objects whose resourceVersions are compared,
// each only with itself (resourceVersions compare within one resource).
// worker1/taints is left out: it carries the node's resourceVersion again.
var noTimeTravelQuestions = []evidence.Question{evidence.NodeReady, evidence.NodeLease, evidence.PodObject, evidence.ServiceEndpoints}

// NoTimeTravel: a client never reads an older resourceVersion of an object
// after having read a newer one, across the API servers and the virtual
// address.
//
// Reads: worker1/ready, worker1/lease, statefulpod/object and
// service/endpoints with their resourceVersions, from every API server
// ("apiserver/*", the virtual address included) and from the in-cluster
// informer. resourceVersions are compared with apimachinery's
// resourceversion.CompareResourceVersion; answers without a well-formed
// one (an object that does not exist) are not compared.
//
// Fires, for the API servers: when a read that began after another read
// of the same object had returned got an older resourceVersion. Their
// reads are consistent reads (no resourceVersion asked), which Kubernetes
// serves linearizably whichever server answers, so one client moving
// between servers, as through the virtual address, must never go back.
// Reads in the same round overlap in time and are never compared.
//
// Fires, for the informer: when it shows an older resourceVersion than it
// showed itself before. A cache may lag the servers (merely stale, which
// its contract allows), but a watch never goes back.
//
// PRESERVED needs API-server reads put in order, and every server that was
// serving put in order across the whole input: a server's round is covered
// when it returned a read with a resourceVersion, or refused every read (a
// server that refuses serves no client); a read that timed out, was
// cancelled or could not reach its server leaves the round unknown, since
// the server may have served an old state then. A stretch of unknown
// rounds longer than the coverage bound (measured as persistence.go
// measures stretches) is INSUFFICIENT_DATA naming the server; a server
// that refused every read is listed apart and needs no coverage.
// INSUFFICIENT_DATA too when no two API-server reads of one object could be
// put in order: the informer's comparisons with itself never make it
// PRESERVED, since they say nothing of a client moving between servers.
//
// Exercised: VIOLATED always; PRESERVED when some object's resourceVersion
// advanced between a read from one API server and a later read from
// another (a client moving between them could have gone back); otherwise
// it is not exercised.
func NoTimeTravel(coverage Bound) Invariant { return noTimeTravel{coverage: coverage} }

type noTimeTravel struct{ coverage Bound }

// ConsistentReaders are the API servers, each read at its own address
// with consistent reads ("apiserver/<host>", "apiserver/vip").
const ConsistentReaders = "apiserver/*"

const cacheReader = "informer"

func (noTimeTravel) Name() string         { return NoTimeTravelName }
func (noTimeTravel) Phase() verdict.Phase { return verdict.Safety }
func (noTimeTravel) Reads() []Reading {
	var rs []Reading
	for _, q := range noTimeTravelQuestions {
		rs = append(rs, Reading{Sources: ConsistentReaders, Question: q}, Reading{Sources: cacheReader, Question: q})
	}
	return rs
}

// versioned is one read with a well-formed resourceVersion.
type versioned = Observation[struct{}]

// wellFormed keeps the reads whose resourceVersion can be compared.
func wellFormed(obs []Observation[any]) []versioned {
	var out []versioned
	for _, o := range obs {
		if _, err := resourceversion.CompareResourceVersion(o.RV, o.RV); err != nil {
			continue
		}
		out = append(out, versioned{Source: o.Source, Snapshot: o.Snapshot, Taken: o.Taken, ReadAt: o.ReadAt, RV: o.RV})
	}
	return out
}

func olderThan(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}

type travel struct {
	q           evidence.Question
	before, now versioned
	cache       bool
}

func (t travel) String() string {
	if t.cache {
		return fmt.Sprintf("%s showed %s at resourceVersion %s (read %s), after it had shown resourceVersion %s (read %s): its cache went back",
			t.now.Source, t.q, t.now.RV, Stamp(t.now.ReadAt), t.before.RV, Stamp(t.before.ReadAt))
	}
	return fmt.Sprintf("%s returned %s at resourceVersion %s to a read begun at %s, after %s had returned resourceVersion %s at %s",
		t.now.Source, t.q, t.now.RV, Stamp(t.now.Taken), t.before.Source, t.before.RV, Stamp(t.before.ReadAt))
}

// serverRound is what one API server's reads of one round showed.
type serverRound struct {
	ordered bool // a read with a well-formed resourceVersion
	unknown bool // a read that timed out, was cancelled or unreachable
	refused bool // a read it refused or answered with an error
}

func (n noTimeTravel) Judge(in Input) verdict.Judgement {
	if n.coverage.Limit <= 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: "no coverage bound was declared, so no stretch of unordered reads can be judged"}
	}
	snaps := Ordered(in.Snapshots)
	var found []travel
	serverPairs, cachePairs := 0, 0
	var all []Gap
	var readers []string
	var advanced string
	rounds := map[evidence.Source][]serverRound{}
	round := func(src evidence.Source, i int) *serverRound {
		if rounds[src] == nil {
			rounds[src] = make([]serverRound, len(snaps))
		}
		return &rounds[src][i]
	}
	for _, q := range noTimeTravelQuestions {
		consistent, gaps := Collect[any](snaps, ConsistentReaders, q)
		all = append(all, gaps...)
		for _, g := range gaps {
			if g.Refused {
				round(g.Source, g.Snapshot).refused = true
			} else {
				round(g.Source, g.Snapshot).unknown = true
			}
		}
		for _, o := range consistent {
			round(o.Source, o.Snapshot)
		}
		cache, gaps := Collect[any](snaps, cacheReader, q)
		all = append(all, gaps...)
		readers = append(readers, SourcesOf(consistent, nil)...)
		readers = append(readers, SourcesOf(cache, nil)...)

		// Consistent reads: every read that returned before another began
		// bounds it from below.
		reads := wellFormed(consistent)
		for _, r := range reads {
			round(r.Source, r.Snapshot).ordered = true
		}
		byReturn := append([]versioned(nil), reads...)
		sort.SliceStable(byReturn, func(i, j int) bool { return byReturn[i].ReadAt.Before(byReturn[j].ReadAt) })
		byStart := append([]versioned(nil), reads...)
		sort.SliceStable(byStart, func(i, j int) bool { return byStart[i].Taken.Before(byStart[j].Taken) })
		var newest *versioned
		oldestOf := map[evidence.Source]versioned{}
		k := 0
		for _, b := range byStart {
			for k < len(byReturn) && byReturn[k].ReadAt.Before(b.Taken) {
				r := byReturn[k]
				if newest == nil || olderThan(newest.RV, r.RV) {
					newest = &r
				}
				if o, ok := oldestOf[r.Source]; !ok || olderThan(r.RV, o.RV) {
					oldestOf[r.Source] = r
				}
				k++
			}
			if newest == nil {
				continue
			}
			serverPairs++
			if olderThan(b.RV, newest.RV) {
				found = append(found, travel{q: q, before: *newest, now: b})
			}
			if advanced == "" {
				var others []evidence.Source
				for src := range oldestOf {
					if src != b.Source {
						others = append(others, src)
					}
				}
				sort.Slice(others, func(i, j int) bool { return others[i] < others[j] })
				for _, src := range others {
					if o := oldestOf[src]; olderThan(o.RV, b.RV) {
						advanced = fmt.Sprintf("%s advanced from resourceVersion %s (%s, returned %s) to %s (%s, read begun %s): a client moving between the servers could have gone back",
							q, o.RV, o.Source, Stamp(o.ReadAt), b.RV, b.Source, Stamp(b.Taken))
						break
					}
				}
			}
		}

		// The cache: only against what it showed itself.
		var prev *versioned
		for _, c := range wellFormed(cache) {
			if prev != nil {
				cachePairs++
				if olderThan(c.RV, prev.RV) {
					found = append(found, travel{q: q, before: *prev, now: c, cache: true})
				}
			}
			if prev == nil || olderThan(prev.RV, c.RV) {
				c := c
				prev = &c
			}
		}
	}
	readers = uniqueSorted(readers)
	if len(found) > 0 {
		sort.SliceStable(found, func(i, j int) bool { return found[i].now.Taken.Before(found[j].now.Taken) })
		f := found[0]
		reason := "a client read an older resourceVersion after a newer one: " + f.String()
		if len(found) > 1 {
			reason += fmt.Sprintf(" (%d such reads in all)", len(found))
		}
		return verdict.Judgement{Verdict: verdict.Violated, Reason: reason, Sources: uniqueSorted([]string{string(f.before.Source), string(f.now.Source)}), At: f.now.ReadAt,
			Exercised: verdict.Exercised(), Exercise: fmt.Sprintf("%s went back from resourceVersion %s to %s", f.q, f.before.RV, f.now.RV)}
	}
	if serverPairs == 0 {
		reason := "no two API-server reads of one object with resourceVersions could be put in order"
		if cachePairs > 0 {
			reason += fmt.Sprintf("; the informer's %d comparisons with itself show only that its cache never went back, not that a client moving between API servers never does", cachePairs)
		}
		if len(all) > 0 {
			reason += "; " + GapSummary(all)
		}
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: reason, Sources: readers}
	}

	// Coverage: every serving server's reads put in order across the input.
	var servers []evidence.Source
	for src := range rounds {
		servers = append(servers, src)
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i] < servers[j] })
	var refusedThroughout []string
	var lapse *Stretch
	var lapsed evidence.Source
	for _, src := range servers {
		var marks []Mark
		servedNone := true
		for i, r := range rounds[src] {
			m := Mark{Taken: snaps[i].Taken, ReadAt: snaps[i].Taken}
			switch {
			case r.ordered:
				m.State = Holds
				servedNone = false
			case r.refused && !r.unknown:
				m.State = Holds
			default:
				m.State = Unknown
				servedNone = false
			}
			marks = append(marks, m)
		}
		if servedNone {
			refusedThroughout = append(refusedThroughout, string(src))
			continue
		}
		marks = WithMissed(marks, MissedTicks(in))
		if _, u := Persisting(marks, n.coverage.Limit, true); u != nil && (lapse == nil || u.Last.Taken.Before(lapse.Last.Taken)) {
			w := Widened(marks, *u)
			lapse, lapsed = &w, src
		}
	}
	if lapse != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("%s's reads were not put in order with any other from %s to %s, longer than the coverage bound of %s: it timed out, could not be reached or returned no resourceVersion in every round, so a client it served then may have gone back unseen (%s)",
				lapsed, Stamp(lapse.First.Taken), Stamp(lapse.Last.Taken), n.coverage, GapSummary(gapsOf(all, string(lapsed)))),
			Sources: []string{string(lapsed)}, At: lapse.First.Taken}
	}
	reason := fmt.Sprintf("no read went back over the %s: %d API-server reads each compared with the newest read that had returned before it began, %d informer reads with its own, every serving server's reads in order with no gap past the coverage bound of %s; readers %v",
		in.Moment, serverPairs, cachePairs, n.coverage, readers)
	if len(refusedThroughout) > 0 {
		reason += "; refused throughout, serving no client: " + strings.Join(refusedThroughout, ", ")
	}
	j := verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: readers}
	if advanced != "" {
		j.Exercised, j.Exercise = verdict.Exercised(), advanced
	} else {
		j.Exercised, j.Exercise = verdict.NotExercised(), fmt.Sprintf("no object's resourceVersion advanced between reads from two API servers over the %s: a client moving between them had nothing newer to lose", in.Moment)
	}
	return j
}

func uniqueSorted(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
