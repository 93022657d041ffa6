package invariant

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// GracefulDeletionName names the graceful-deletion invariant.
const GracefulDeletionName = "graceful-deletion"

// ForceDeletedEvent is the timeline event kind that records a pod being
// force-deleted (its Subject "pod/<namespace>/<name>", its Detail the
// pod's UID). graceful-deletion exempts such a pod; nothing else exempts
// one.
const ForceDeletedEvent = "pod-force-deleted"

// GracefulDeletion: a pod disappears from the API only after its
// containers have stopped, unless it was force-deleted.
//
// Reads: statefulpod/object from every API server (which incarnation of
// the pod, by UID, on which node) and statefulpod/running-here from every
// node's container runtime (which containers of which UID run there),
// and the timeline's pod-force-deleted events.
//
// Fires when an incarnation (a UID) had left the API (a read showed no pod,
// or a pod with another UID, after a read had shown it) and a runtime read
// begun after that read returned still saw a container of that UID
// running: the containers outlived the API object.
//
// Why: a graceful delete only sets deletionTimestamp; the kubelet stops
// the containers and only then removes the object. Until the object is
// gone, controllers do not replace the pod, which is what makes "at most
// one" hold; an object gone while its containers run lets a replacement
// start beside them.
//
// PRESERVED means every disappearance was followed by a readable read of
// the node's runtime that saw none of the pod's containers running; a
// container that stopped within one sampling interval after the object left
// cannot be told from one that stopped just before. INSUFFICIENT_DATA
// when a disappearance was followed by no readable read of the runtime of
// the node the pod was on.
//
// Exercised when an incarnation left the API and was not force-deleted:
// that is the deletion the guarantee is about. A run in which no
// incarnation left the API, or only force-deleted ones did, never
// challenged it, and its PRESERVED says so. VIOLATED is always exercised.
func GracefulDeletion() Invariant { return gracefulDeletion{} }

type gracefulDeletion struct{}

func (gracefulDeletion) Name() string         { return GracefulDeletionName }
func (gracefulDeletion) Phase() verdict.Phase { return verdict.Safety }
func (gracefulDeletion) Reads() []Reading {
	return []Reading{
		{Sources: ConsistentReaders, Question: evidence.PodObject},
		{Sources: "cri/*", Question: evidence.PodRunningHere},
	}
}

// incarnation is one UID of the pod as the API showed it.
type incarnation struct {
	uid      string
	node     string
	lastSeen Observation[evidence.PodValue]
	gone     *Observation[evidence.PodValue]
}

func (gracefulDeletion) Judge(in Input) verdict.Judgement {
	snaps := Ordered(in.Snapshots)
	pods, podGaps := Collect[evidence.PodValue](snaps, ConsistentReaders, evidence.PodObject)
	runtimes, rtGaps := Collect[evidence.RuntimePodValue](snaps, "cri/*", evidence.PodRunningHere)
	if len(pods) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no API server answered for the stateful pod: " + GapSummary(podGaps)}
	}
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].ReadAt.Before(pods[j].ReadAt) })
	incs := map[string]*incarnation{}
	var order []string
	for _, p := range pods {
		if p.Value.Exists && p.Value.UID != "" {
			inc, ok := incs[p.Value.UID]
			if !ok {
				inc = &incarnation{uid: p.Value.UID}
				incs[p.Value.UID] = inc
				order = append(order, p.Value.UID)
			}
			if p.Value.NodeName != "" {
				inc.node = p.Value.NodeName
			}
			if inc.gone == nil {
				inc.lastSeen = p
			}
		}
	}
	// Gone: a read begun after a read that showed the UID had returned,
	// showing no pod or a later incarnation (an earlier one showing up
	// again would be time travel, which is no-time-travel's to judge).
	rank := map[string]int{}
	for i, uid := range order {
		rank[uid] = i
	}
	for i, uid := range order {
		inc := incs[uid]
		for _, p := range pods {
			if !p.Taken.After(inc.lastSeen.ReadAt) {
				continue
			}
			if !p.Value.Exists || rank[p.Value.UID] > i {
				p := p
				inc.gone = &p
				break
			}
		}
	}
	forced := map[string]evidence.Event{}
	for _, e := range in.Timeline.OfKind(ForceDeletedEvent) {
		forced[e.Detail] = e
	}
	var exempt, checked []string
	var departures []string
	var unsure []string
	for _, uid := range order {
		inc := incs[uid]
		if inc.gone == nil {
			continue
		}
		if e, ok := forced[uid]; ok {
			exempt = append(exempt, fmt.Sprintf("%s (force-deleted at %s by %s)", uid, Stamp(e.At), e.Source))
			continue
		}
		sawNodeAfter := false
		for _, rt := range runtimes {
			if !rt.Taken.After(inc.gone.ReadAt) {
				continue
			}
			for _, c := range rt.Value.Containers {
				if c.PodUID == uid && c.State == "CONTAINER_RUNNING" {
					return verdict.Judgement{Verdict: verdict.Violated,
						Reason: fmt.Sprintf("pod %s left the API (%s showed %s at %s) while its container %s still ran on %s (read begun %s)",
							uid, inc.gone.Source, podState(inc.gone.Value), Stamp(inc.gone.ReadAt), short(c.ID), HostOf(rt.Source), Stamp(rt.Taken)),
						Sources: []string{string(inc.gone.Source), string(rt.Source)}, At: rt.Taken,
						Exercised: verdict.Exercised(), Exercise: departure(inc)}
				}
			}
			if HostOf(rt.Source) == inc.node {
				sawNodeAfter = true
			}
		}
		if sawNodeAfter {
			checked = append(checked, uid)
			departures = append(departures, departure(inc))
		} else {
			unsure = append(unsure, fmt.Sprintf("%s (on %q, gone by %s)", uid, inc.node, Stamp(inc.gone.ReadAt)))
		}
	}
	sources := uniqueSorted(append(SourcesOf(pods, podGaps), SourcesOf(runtimes, rtGaps)...))
	if len(unsure) > 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason:  fmt.Sprintf("no readable read of the node's runtime after pod %s left the API; %s", strings.Join(unsure, ", "), GapSummary(rtGaps)),
			Sources: sources}
	}
	reason := fmt.Sprintf("%d incarnation(s) of the pod seen; ", len(order))
	exercised, exercise := verdict.Exercised(), strings.Join(departures, "; ")
	switch {
	case len(checked) > 0:
		reason += fmt.Sprintf("none of the containers of %s ran after it left the API", strings.Join(checked, ", "))
	case len(exempt) > 0:
		reason += "none left the API but force-deleted ones"
		exercised, exercise = verdict.NotExercised(), "only force-deleted incarnations left the API, which the guarantee exempts"
	default:
		reason += "none left the API"
		exercised, exercise = verdict.NotExercised(), "none left the API: no deletion to be graceful"
	}
	if len(exempt) > 0 {
		reason += "; exempt: " + strings.Join(exempt, ", ")
	}
	return verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: sources, Exercised: exercised, Exercise: exercise}
}

// departure says when an incarnation left the API, for Exercise.
func departure(inc *incarnation) string {
	return fmt.Sprintf("pod %s left the API (%s showed %s at %s)", inc.uid, inc.gone.Source, podState(inc.gone.Value), Stamp(inc.gone.ReadAt))
}

func podState(v evidence.PodValue) string {
	if !v.Exists {
		return "no pod"
	}
	return "pod " + v.UID
}

// ForceDeletion is the timeline event that records a force delete of a
// pod, for whatever performs or sees one to add to the timeline.
func ForceDeletion(at time.Time, namespace, name, uid string) evidence.Event {
	return evidence.Event{At: at, Source: "faultline", Subject: "pod/" + namespace + "/" + name, Kind: ForceDeletedEvent, Detail: uid}
}
