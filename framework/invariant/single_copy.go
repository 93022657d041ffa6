package invariant

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// SingleCopyName names the single-copy invariant.
const SingleCopyName = "single-copy"

// SingleCopy: the stateful test pod never runs on two nodes at the same
// moment.
//
// Reads: statefulpod/running-here from the container runtime of every
// worker ("cri/*", the runtime read over SSH), never the API server,
// which cannot see a node it is cut off from. A copy is a container of the pod's name
// in state CONTAINER_RUNNING, whatever its sandbox's state: a running
// process is what can act twice.
//
// Fires when two different nodes had a copy running at one proven moment:
// a container seen running by two reads ran throughout between them (see
// simultaneity.go), so that span overlapping another node's span, or
// containing another node's whole read, proves both ran at once. Two
// nodes each seen running the pod in the same round, or one after the
// other, are not proof; a pod restarting on one node (a new container or
// sandbox there) is never two copies.
//
// Why: a StatefulSet promises at most one pod per identity ("at most
// one" semantics); Kubernetes keeps it by not replacing a pod until the
// API knows the old one stopped.
//
// INSUFFICIENT_DATA when some snapshot had a runtime unreadable while
// another node ran the pod, or two runtimes unreadable at once: a second
// copy could have hidden there. Copies that overlap only between two
// sampling rounds are not seen; that is the resolution of the evidence.
//
// Exercised when the pod moved within the input: the runtimes saw its
// containers running on two nodes (at any moments), or running under two
// pod UIDs (a new incarnation), or the timeline has the API creating or
// scheduling a pod of its name (a pod-created or pod-scheduled event of
// the pod a runtime ran, within the input's span; an event a relisting
// replayed counts by when the cluster recorded it, since it is seen only
// when the listing came: evidence.Event.Within): then a second copy
// could have started. A pod that ran on one node as one incarnation
// throughout, container restarts included, never challenged the
// guarantee, and its PRESERVED says so. VIOLATED is always exercised.
func SingleCopy() Invariant { return singleCopy{} }

// Timeline events of the pods in the fixtures' namespace (recorded by
// evidence/watch).
const (
	podCreatedEvent   = "pod-created"
	podScheduledEvent = "pod-scheduled"
	podDeletionEvent  = "pod-deletion-set"
	podDeletedEvent   = "pod-deleted"
)

type singleCopy struct{}

func (singleCopy) Name() string         { return SingleCopyName }
func (singleCopy) Phase() verdict.Phase { return verdict.Safety }
func (singleCopy) Reads() []Reading {
	return []Reading{{Sources: "cri/*", Question: evidence.PodRunningHere}}
}

// runningContainers returns the IDs of the pod's running containers.
func runningContainers(v evidence.RuntimePodValue) []string {
	var ids []string
	for _, c := range v.Containers {
		if c.State == "CONTAINER_RUNNING" {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

func (singleCopy) Judge(in Input) verdict.Judgement {
	snaps := Ordered(in.Snapshots)
	obs, gaps := Collect[evidence.RuntimePodValue](snaps, "cri/*", evidence.PodRunningHere)
	if len(obs) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no container runtime was readable: " + GapSummary(gaps)}
	}
	byPlace := map[string][]placeRead{}
	bySnap := map[int][]placeRead{}
	for _, o := range obs {
		r := placeRead{Place: string(o.Source), Taken: o.Taken, ReadAt: o.ReadAt, Active: runningContainers(o.Value)}
		byPlace[r.Place] = append(byPlace[r.Place], r)
		bySnap[o.Snapshot] = append(bySnap[o.Snapshot], r)
	}
	places := SourcesOf(obs, gaps)
	if ov, ok := firstOverlap(byPlace); ok {
		return verdict.Judgement{
			Verdict:   verdict.Violated,
			Reason:    "the stateful pod ran on two nodes at once: " + describeOverlap(ov, "container"),
			Sources:   []string{ov.A.Place, ov.B.Place},
			At:        ov.At,
			Exercised: verdict.Exercised(),
			Exercise:  fmt.Sprintf("copies on %s and %s", HostOf(evidence.Source(ov.A.Place)), HostOf(evidence.Source(ov.B.Place))),
		}
	}
	taken := make([]time.Time, len(snaps))
	for i, s := range snaps {
		taken[i] = s.Taken
	}
	if blind := blindSpots(places, taken, bySnap); len(blind) > 0 {
		b := blind[0]
		why := fmt.Sprintf("%s unreadable", strings.Join(b.Unreadable, ", "))
		if len(b.Active) > 0 {
			why += " while " + strings.Join(b.Active, ", ") + " ran the pod"
		}
		return verdict.Judgement{
			Verdict: verdict.InsufficientData,
			Reason: fmt.Sprintf("no two copies seen, but in %d of %d snapshots a second copy could have hidden (first at %s: %s); %s",
				len(blind), len(snaps), Stamp(b.Taken), why, GapSummary(gaps)),
			Sources: places,
			At:      b.Taken,
		}
	}
	moved, exercise := podMoved(obs, in)
	return verdict.Judgement{
		Verdict:   verdict.Preserved,
		Reason:    fmt.Sprintf("no moment with the stateful pod running on two nodes in %d snapshots of %d runtimes (%s)", len(snaps), len(places), runningSummary(byPlace)),
		Sources:   places,
		Exercised: &moved,
		Exercise:  exercise,
	}
}

// podMoved says whether the pod moved within the input (single-copy's
// exercise rule), and how, or where it stayed.
func podMoved(obs []Observation[evidence.RuntimePodValue], in Input) (bool, string) {
	var nodes, uids []string
	subjects := map[string]bool{}
	for _, o := range obs {
		for _, c := range o.Value.Containers {
			if c.State != "CONTAINER_RUNNING" {
				continue
			}
			if n := HostOf(o.Source); !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
			if c.PodUID != "" && !slices.Contains(uids, c.PodUID) {
				uids = append(uids, c.PodUID)
			}
		}
		for _, sb := range o.Value.Sandboxes {
			if sb.Name != "" {
				subjects["pod/"+sb.Namespace+"/"+sb.Name] = true
			}
		}
	}
	switch {
	case len(nodes) > 1:
		return true, "the pod ran on " + strings.Join(nodes, ", then ")
	case len(uids) > 1:
		return true, "the pod ran as a new incarnation: uid " + strings.Join(uids, ", then uid ")
	}
	from, to := in.Span()
	for _, e := range in.Timeline {
		if (e.Kind == podCreatedEvent || e.Kind == podScheduledEvent) && subjects[e.Subject] && e.Within(from, to) {
			return true, fmt.Sprintf("%s %s at %s (%s): a second copy could have started", e.Subject, e.Kind, eventStamp(e), e.Detail)
		}
	}
	if len(nodes) == 0 {
		return false, "no runtime saw the pod running, and the API created no pod of its name within the input"
	}
	return false, fmt.Sprintf("the pod ran only on %s, as one incarnation, and the API created no pod of its name within the input", nodes[0])
}

// describeOverlap says which two holders were active when.
func describeOverlap(ov overlap, what string) string {
	a := fmt.Sprintf("%s %s on %s ran from %s to %s (seen by two reads)", what, short(ov.A.Holder), HostOf(evidence.Source(ov.A.Place)), Stamp(ov.A.From), Stamp(ov.A.To))
	var b string
	if ov.BSighting != nil {
		b = fmt.Sprintf("%s %s on %s was seen running by a read from %s to %s, inside that span", what, short(ov.B.Holder), HostOf(evidence.Source(ov.B.Place)), Stamp(ov.B.From), Stamp(ov.B.To))
	} else {
		b = fmt.Sprintf("%s %s on %s ran from %s to %s", what, short(ov.B.Holder), HostOf(evidence.Source(ov.B.Place)), Stamp(ov.B.From), Stamp(ov.B.To))
	}
	return fmt.Sprintf("%s; %s; both at %s", a, b, Stamp(ov.At))
}

// runningSummary says where the pod was seen running, for reasons.
func runningSummary(byPlace map[string][]placeRead) string {
	var parts []string
	for place, reads := range byPlace {
		n := 0
		for _, r := range reads {
			if len(r.Active) > 0 {
				n++
			}
		}
		parts = append(parts, fmt.Sprintf("%s ran it in %d of %d reads", place, n, len(reads)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func short(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}
