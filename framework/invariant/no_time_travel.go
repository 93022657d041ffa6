package invariant

import (
	"fmt"
	"sort"

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
// INSUFFICIENT_DATA when no two reads of one object could be put in order.
func NoTimeTravel() Invariant { return noTimeTravel{} }

type noTimeTravel struct{}

const (
	consistentReaders = "apiserver/*"
	cacheReader       = "informer"
)

func (noTimeTravel) Name() string         { return NoTimeTravelName }
func (noTimeTravel) Phase() verdict.Phase { return verdict.Safety }
func (noTimeTravel) Reads() []Reading {
	var rs []Reading
	for _, q := range noTimeTravelQuestions {
		rs = append(rs, Reading{Sources: consistentReaders, Question: q}, Reading{Sources: cacheReader, Question: q})
	}
	return rs
}

// versioned is one read with a well-formed resourceVersion.
type versioned = observation[struct{}]

// wellFormed keeps the reads whose resourceVersion can be compared.
func wellFormed(obs []observation[any]) []versioned {
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
			t.now.Source, t.q, t.now.RV, stamp(t.now.ReadAt), t.before.RV, stamp(t.before.ReadAt))
	}
	return fmt.Sprintf("%s returned %s at resourceVersion %s to a read begun at %s, after %s had returned resourceVersion %s at %s",
		t.now.Source, t.q, t.now.RV, stamp(t.now.Taken), t.before.Source, t.before.RV, stamp(t.before.ReadAt))
}

func (noTimeTravel) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	var found []travel
	pairs := 0
	var all []gap
	var readers []string
	for _, q := range noTimeTravelQuestions {
		consistent, gaps := collect[any](snaps, consistentReaders, q)
		all = append(all, gaps...)
		cache, gaps := collect[any](snaps, cacheReader, q)
		all = append(all, gaps...)
		readers = append(readers, sourcesOf(consistent, nil)...)
		readers = append(readers, sourcesOf(cache, nil)...)

		// Consistent reads: every read that returned before another began
		// bounds it from below.
		reads := wellFormed(consistent)
		byReturn := append([]versioned(nil), reads...)
		sort.SliceStable(byReturn, func(i, j int) bool { return byReturn[i].ReadAt.Before(byReturn[j].ReadAt) })
		byStart := append([]versioned(nil), reads...)
		sort.SliceStable(byStart, func(i, j int) bool { return byStart[i].Taken.Before(byStart[j].Taken) })
		var newest *versioned
		k := 0
		for _, b := range byStart {
			for k < len(byReturn) && byReturn[k].ReadAt.Before(b.Taken) {
				if newest == nil || olderThan(newest.RV, byReturn[k].RV) {
					v := byReturn[k]
					newest = &v
				}
				k++
			}
			if newest == nil {
				continue
			}
			pairs++
			if olderThan(b.RV, newest.RV) {
				found = append(found, travel{q: q, before: *newest, now: b})
			}
		}

		// The cache: only against what it showed itself.
		var prev *versioned
		for _, c := range wellFormed(cache) {
			if prev != nil {
				pairs++
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
		return verdict.Judgement{Verdict: verdict.Violated, Reason: reason, Sources: uniqueSorted([]string{string(f.before.Source), string(f.now.Source)}), At: f.now.ReadAt}
	}
	if pairs == 0 {
		reason := "no two reads of one object with resourceVersions could be put in order"
		if len(all) > 0 {
			reason += "; " + gapSummary(all)
		}
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: reason, Sources: readers}
	}
	return verdict.Judgement{Verdict: verdict.Preserved,
		Reason:  fmt.Sprintf("no read went back: %d reads each compared with the newest read that had returned before it began, from %v", pairs, readers),
		Sources: readers}
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
