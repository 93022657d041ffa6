// Package watch records the timeline: it watches one API server with
// client-go informers, polls the others, and stamps the moments that
// matter (node Ready transitions, taints, lease renewals stopping and
// resuming, pod deletion and replacement, endpoint changes, leader
// changes), each with the source that saw it, the time it saw it, and,
// where the object records one, the time the cluster recorded the change
// (evidence.Event.ClusterAt). Events an informer's relisting delivers are
// marked replayed (see relists).
package watch

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
)

// Event kinds of the timeline.
const (
	KindReadyTrue     = "ready-true"
	KindReadyUnknown  = "ready-unknown"
	KindReadyFalse    = "ready-false"
	KindTaintAdded    = "taint-added"
	KindTaintRemoved  = "taint-removed"
	KindLeaseStopped  = "lease-renewals-stopped"
	KindLeaseResumed  = "lease-renewals-resumed"
	KindPodCreated    = "pod-created"
	KindPodScheduled  = "pod-scheduled"
	KindPodRunning    = "pod-running"
	KindPodDeletion   = "pod-deletion-set"
	KindPodDeleted    = "pod-deleted"
	KindEndpoints     = "endpoints-changed"
	KindLeaderChanged = "leader-changed"
)

// ReadyKind is the event kind of a Ready condition status.
func ReadyKind(status string) string {
	switch status {
	case string(corev1.ConditionTrue):
		return KindReadyTrue
	case string(corev1.ConditionFalse):
		return KindReadyFalse
	}
	return KindReadyUnknown
}

// kubeletRenewFraction is the fraction of the node lease duration after
// which the kubelet renews its lease (pkg/kubelet nodeLeaseRenewIntervalFraction).
const kubeletRenewFraction = 0.25

// missedRenewals is how many renew intervals without a renewal make
// "renewals stopped": more than one, so that a renewal a little late is
// not taken for a stop, and few enough that the stop is stamped well
// before the node lifecycle controller's grace period (five intervals and
// more) runs out.
const missedRenewals = 2

// tracker keeps what one source last said of each object and turns each
// new observation into the events that separate it from the last one. It
// emits nothing for the first observation of an object that existed before
// tracking began: that state is the baseline's, not a moment.
type tracker struct {
	source   evidence.Source
	subjects evidence.Subjects

	mu        sync.Mutex
	nodes     map[string]nodeState
	leases    map[string]*leaseState
	pods      map[string]podState // by UID
	podNames  map[string][]string // pod "ns/name" → UIDs seen, in order
	endpoints *evidence.EndpointsValue
	leaders   map[string]string // leader lease "ns/name" → holder
	started   bool
}

type nodeState struct {
	ready  string
	reason string
	taints []string
}

type leaseState struct {
	renew    time.Time
	interval time.Duration
	stopped  bool
}

type podState struct {
	key       string
	node      string
	running   bool
	deleting  bool
	createdAt time.Time
}

func newTracker(src evidence.Source, subjects evidence.Subjects) *tracker {
	return &tracker{
		source: src, subjects: subjects,
		nodes: map[string]nodeState{}, leases: map[string]*leaseState{},
		pods: map[string]podState{}, podNames: map[string][]string{}, leaders: map[string]string{},
	}
}

// markStarted ends the initial listing: objects seen from now on are new.
func (t *tracker) markStarted() {
	t.mu.Lock()
	t.started = true
	t.mu.Unlock()
}

func (t *tracker) event(at time.Time, subject, kind, detail string) evidence.Event {
	return evidence.Event{At: at.UTC(), Source: t.source, Subject: subject, Kind: kind, Detail: detail}
}

func taintKeys(n *corev1.Node) []string {
	var out []string
	for _, tv := range source.TaintsOf(n) {
		out = append(out, tv.Key+":"+tv.Effect)
	}
	sort.Strings(out)
	return out
}

// observeNode compares a node with what was last seen of it.
func (t *tracker) observeNode(at time.Time, n *corev1.Node) []evidence.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := source.NodeReadyOf(n)
	cur := nodeState{ready: r.Status, reason: r.Reason, taints: taintKeys(n)}
	prev, seen := t.nodes[n.Name]
	t.nodes[n.Name] = cur
	if !seen {
		return nil
	}
	subject := "node/" + n.Name
	var out []evidence.Event
	if cur.ready != prev.ready {
		out = append(out, t.event(at, subject, ReadyKind(cur.ready),
			fmt.Sprintf("%s → %s (%s), lastTransitionTime %s", orNone(prev.ready), orNone(cur.ready), cur.reason, r.LastTransitionTime.Format(time.RFC3339))).
			WithCluster(r.LastTransitionTime, fieldReadyTransition, evidence.Seconds))
	}
	for _, k := range cur.taints {
		if !slices.Contains(prev.taints, k) {
			added := taintAddedAt(n, k)
			detail := k
			if !added.IsZero() {
				detail += ", timeAdded " + added.Format(time.RFC3339)
			}
			out = append(out, t.event(at, subject, KindTaintAdded, detail).WithCluster(added, "spec.taints["+k+"].timeAdded", evidence.Seconds))
		}
	}
	for _, k := range prev.taints {
		if !slices.Contains(cur.taints, k) {
			out = append(out, t.event(at, subject, KindTaintRemoved, k))
		}
	}
	return out
}

// taintAddedAt is the timeAdded of the node's taint key:effect (zero when
// the taint has none: the API sets it only on NoExecute taints).
func taintAddedAt(n *corev1.Node, key string) time.Time {
	for _, tv := range source.TaintsOf(n) {
		if tv.Key+":"+tv.Effect == key {
			return tv.TimeAdded
		}
	}
	return time.Time{}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// observeLease records a node lease's renewal; a renewal after renewals
// had stopped is "resumed", its cluster time the renewal's renewTime.
func (t *tracker) observeLease(at time.Time, l *coordinationv1.Lease) []evidence.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := source.LeaseOf(l)
	key := l.Namespace + "/" + l.Name
	st := t.leases[key]
	if st == nil {
		st = &leaseState{}
		t.leases[key] = st
	}
	if v.LeaseDurationSeconds > 0 {
		st.interval = time.Duration(float64(time.Duration(v.LeaseDurationSeconds)*time.Second) * kubeletRenewFraction)
	}
	if v.RenewTime.IsZero() || !v.RenewTime.After(st.renew) {
		return nil
	}
	st.renew = v.RenewTime
	if !st.stopped {
		return nil
	}
	st.stopped = false
	return []evidence.Event{t.event(at, "lease/"+key, KindLeaseResumed,
		fmt.Sprintf("renewed at %s by %s (seen at %s)", v.RenewTime.Format(time.RFC3339Nano), v.HolderIdentity, at.UTC().Format(time.RFC3339Nano))).
		WithCluster(v.RenewTime, "spec.renewTime", evidence.Microseconds)}
}

// checkLeases stamps "renewals stopped" for every node lease not renewed
// for missedRenewals intervals by now.
func (t *tracker) checkLeases(now time.Time) []evidence.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []evidence.Event
	keys := make([]string, 0, len(t.leases))
	for k := range t.leases {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		st := t.leases[key]
		if st.stopped || st.renew.IsZero() || st.interval <= 0 {
			continue
		}
		if silent := now.Sub(st.renew); silent > missedRenewals*st.interval {
			st.stopped = true
			out = append(out, t.event(now, "lease/"+key, KindLeaseStopped,
				fmt.Sprintf("last renewTime %s, none for %s (renew interval %s)", st.renew.Format(time.RFC3339Nano), silent.Round(time.Millisecond), st.interval)))
		}
	}
	return out
}

// observeLeader records a leader-election lease's holder.
func (t *tracker) observeLeader(at time.Time, l *coordinationv1.Lease) []evidence.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := l.Namespace + "/" + l.Name
	v := source.LeaseOf(l)
	holder := v.HolderIdentity
	prev, seen := t.leaders[key]
	t.leaders[key] = holder
	if !seen || prev == holder {
		return nil
	}
	return []evidence.Event{t.event(at, "lease/"+key, KindLeaderChanged, fmt.Sprintf("%s → %s", orNone(prev), orNone(holder))).
		WithCluster(v.AcquireTime, "spec.acquireTime", evidence.Microseconds)}
}

// observePod compares a pod with what was last seen of it. A pod first
// seen after tracking began is "created" (a replacement when another pod of
// its name was seen before).
func (t *tracker) observePod(at time.Time, p *corev1.Pod) []evidence.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	v := source.PodOf(p)
	key := p.Namespace + "/" + p.Name
	subject := "pod/" + key
	cur := podState{key: key, node: v.NodeName, running: v.Phase == string(corev1.PodRunning), deleting: v.DeletionTimestamp != nil, createdAt: p.CreationTimestamp.UTC()}
	prev, seen := t.pods[v.UID]
	t.pods[v.UID] = cur
	var out []evidence.Event
	if !seen {
		earlier := t.podNames[key]
		t.podNames[key] = append(earlier, v.UID)
		if !t.started {
			return nil
		}
		detail := "uid " + v.UID
		if len(earlier) > 0 {
			detail += ", replaces uid " + earlier[len(earlier)-1]
		}
		out = append(out, t.event(at, subject, KindPodCreated, detail+", created "+cur.createdAt.Format(time.RFC3339)).
			WithCluster(cur.createdAt, "metadata.creationTimestamp", evidence.Seconds))
		prev = podState{}
	}
	if cur.node != "" && prev.node == "" {
		out = append(out, t.event(at, subject, KindPodScheduled, "uid "+v.UID+" on "+cur.node).
			WithCluster(podScheduledAt(p), fieldPodScheduled, evidence.Seconds))
	}
	if cur.running && !prev.running {
		out = append(out, t.event(at, subject, KindPodRunning, "uid "+v.UID+" on "+cur.node))
	}
	if cur.deleting && !prev.deleting {
		out = append(out, t.event(at, subject, KindPodDeletion, "uid "+v.UID+", deletionTimestamp "+v.DeletionTimestamp.Format(time.RFC3339)).
			WithCluster(deletionRequestedAt(p), fieldDeletionRequested, evidence.Seconds))
	}
	return out
}

// Where the cluster times of the events come from (evidence.Event.ClusterField).
const (
	fieldReadyTransition = "status.conditions[Ready].lastTransitionTime"
	fieldPodScheduled    = "status.conditions[PodScheduled].lastTransitionTime"
	// The API server sets deletionTimestamp to the time of the delete
	// request plus the grace period, and deletionGracePeriodSeconds to that
	// period: their difference is when the deletion was asked for.
	fieldDeletionRequested = "metadata.deletionTimestamp-metadata.deletionGracePeriodSeconds"
)

// podScheduledAt is when the pod's PodScheduled condition turned True
// (zero when it has not, or says no time).
func podScheduledAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.UTC()
		}
	}
	return time.Time{}
}

// deletionRequestedAt is when the pod's deletion was asked for: its
// deletionTimestamp less its deletionGracePeriodSeconds.
func deletionRequestedAt(p *corev1.Pod) time.Time {
	if p.DeletionTimestamp == nil {
		return time.Time{}
	}
	at := p.DeletionTimestamp.UTC()
	if g := p.DeletionGracePeriodSeconds; g != nil {
		at = at.Add(-time.Duration(*g) * time.Second)
	}
	return at
}

// podGone records that a pod is no longer there.
func (t *tracker) podGone(at time.Time, namespace, name, uid string) []evidence.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.pods[uid]; !seen {
		return nil
	}
	delete(t.pods, uid)
	return []evidence.Event{t.event(at, "pod/"+namespace+"/"+name, KindPodDeleted, "uid "+uid)}
}

// podAbsent records that a GET found no pod of that name: every pod of that
// name still tracked is gone.
func (t *tracker) podAbsent(at time.Time, namespace, name string) []evidence.Event {
	key := namespace + "/" + name
	t.mu.Lock()
	var uids []string
	for uid, st := range t.pods {
		if st.key == key {
			uids = append(uids, uid)
		}
	}
	t.mu.Unlock()
	sort.Strings(uids)
	var out []evidence.Event
	for _, uid := range uids {
		out = append(out, t.podGone(at, namespace, name, uid)...)
	}
	return out
}

// observeEndpoints compares the test service's merged endpoints with the
// last seen.
func (t *tracker) observeEndpoints(at time.Time, eps []discoveryv1.EndpointSlice) []evidence.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := source.EndpointsOf(eps)
	prev := t.endpoints
	t.endpoints = &cur
	if prev == nil || !t.started {
		return nil
	}
	if slices.Equal(prev.Ready, cur.Ready) && slices.Equal(prev.NotReady, cur.NotReady) {
		return nil
	}
	return []evidence.Event{t.event(at, "service/"+t.subjects.ServiceNamespace+"/"+t.subjects.ServiceName, KindEndpoints,
		fmt.Sprintf("ready [%s] notReady [%s]", strings.Join(cur.Ready, " "), strings.Join(cur.NotReady, " ")))}
}
