package watch

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/evidence"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func node(ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker1"},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "R"}}},
	}
}

func kinds(events []evidence.Event) string {
	var k []string
	for _, e := range events {
		k = append(k, e.Kind+" "+e.Detail)
	}
	return strings.Join(k, "; ")
}

func TestTrackerNode(t *testing.T) {
	tr := newTracker("apiserver/cp1", evidence.DefaultSubjects)
	unreachable := corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0}}
	if ev := tr.observeNode(t0, node(corev1.ConditionTrue)); len(ev) != 0 {
		t.Errorf("first sight stamped %s", kinds(ev))
	}
	if ev := tr.observeNode(t0, node(corev1.ConditionTrue)); len(ev) != 0 {
		t.Errorf("no change stamped %s", kinds(ev))
	}
	ev := tr.observeNode(t0.Add(time.Second), node(corev1.ConditionUnknown, unreachable))
	if len(ev) != 2 || ev[0].Kind != KindReadyUnknown || ev[1].Kind != KindTaintAdded ||
		!strings.HasPrefix(ev[1].Detail, "node.kubernetes.io/unreachable:NoExecute, timeAdded 2026-11-29T12:00:00Z") ||
		ev[0].Subject != "node/worker1" || ev[0].Source != "apiserver/cp1" || !ev[0].At.Equal(t0.Add(time.Second)) {
		t.Errorf("Unknown + taint: %+v", ev)
	}
	ev = tr.observeNode(t0.Add(2*time.Second), node(corev1.ConditionTrue))
	if kinds(ev) != KindReadyTrue+" Unknown → True (R), lastTransitionTime 0001-01-01T00:00:00Z; "+KindTaintRemoved+" node.kubernetes.io/unreachable:NoExecute" {
		t.Errorf("back to Ready: %s", kinds(ev))
	}
}

func lease(renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "worker1", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("worker1"), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: renew}},
	}
}

func TestTrackerLeaseStopsAndResumes(t *testing.T) {
	tr := newTracker("apiserver/cp1", evidence.DefaultSubjects)
	tr.observeLease(t0, lease(t0))
	tr.observeLease(t0.Add(10*time.Second), lease(t0.Add(10*time.Second)))
	// The interval is 40s × 0.25 = 10s; two missed renewals make a stop.
	if ev := tr.checkLeases(t0.Add(29 * time.Second)); len(ev) != 0 {
		t.Errorf("stamped a stop 19s after a renewal: %s", kinds(ev))
	}
	ev := tr.checkLeases(t0.Add(31 * time.Second))
	if len(ev) != 1 || ev[0].Kind != KindLeaseStopped || ev[0].Subject != "lease/kube-node-lease/worker1" || !ev[0].At.Equal(t0.Add(31*time.Second)) {
		t.Fatalf("stop: %+v", ev)
	}
	if ev := tr.checkLeases(t0.Add(60 * time.Second)); len(ev) != 0 {
		t.Errorf("a stop stamped twice: %s", kinds(ev))
	}
	if ev := tr.observeLease(t0.Add(61*time.Second), lease(t0.Add(10*time.Second))); len(ev) != 0 {
		t.Errorf("the same renewal read again resumed: %s", kinds(ev))
	}
	ev = tr.observeLease(t0.Add(71*time.Second), lease(t0.Add(70*time.Second)))
	if len(ev) != 1 || ev[0].Kind != KindLeaseResumed || !ev[0].At.Equal(t0.Add(71*time.Second)) ||
		!ev[0].ClusterAt.Equal(t0.Add(70*time.Second)) || ev[0].ClusterField != "spec.renewTime" || ev[0].ClusterPrecision != evidence.Microseconds {
		t.Errorf("resume (seen at 71s, renewTime 70s): %+v", ev)
	}
}

func pod(uid string, nodeName string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stateful-0", Namespace: "faultline", UID: types.UID(uid), CreationTimestamp: metav1.Time{Time: t0}},
		Spec:       corev1.PodSpec{NodeName: nodeName},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Minute)}
	}
	return p
}

func TestTrackerPodReplacement(t *testing.T) {
	tr := newTracker("apiserver/cp1", evidence.DefaultSubjects)
	if ev := tr.observePod(t0, pod("a", "worker1", corev1.PodRunning, false)); len(ev) != 0 {
		t.Errorf("a pod listed before the start stamped %s", kinds(ev))
	}
	tr.markStarted()
	if ev := tr.observePod(t0, pod("a", "worker1", corev1.PodRunning, true)); len(ev) != 1 || ev[0].Kind != KindPodDeletion {
		t.Errorf("deletion: %s", kinds(ev))
	}
	if ev := tr.podAbsent(t0, "faultline", "stateful-0"); len(ev) != 1 || ev[0].Kind != KindPodDeleted || ev[0].Detail != "uid a" {
		t.Errorf("deleted: %s", kinds(ev))
	}
	if ev := tr.podGone(t0, "faultline", "stateful-0", "a"); len(ev) != 0 {
		t.Errorf("deleted twice: %s", kinds(ev))
	}
	ev := tr.observePod(t0, pod("b", "", corev1.PodPending, false))
	if len(ev) != 1 || ev[0].Kind != KindPodCreated || !strings.Contains(ev[0].Detail, "uid b, replaces uid a") {
		t.Errorf("replacement: %s", kinds(ev))
	}
	ev = tr.observePod(t0, pod("b", "worker2", corev1.PodPending, false))
	if kinds(ev) != KindPodScheduled+" uid b on worker2" {
		t.Errorf("scheduled: %s", kinds(ev))
	}
	ev = tr.observePod(t0, pod("b", "worker2", corev1.PodRunning, false))
	if kinds(ev) != KindPodRunning+" uid b on worker2" {
		t.Errorf("running: %s", kinds(ev))
	}
}

func TestTrackerEndpointsAndLeader(t *testing.T) {
	tr := newTracker("apiserver/cp1", evidence.DefaultSubjects)
	slice := func(ready bool) []discoveryv1.EndpointSlice {
		return []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}}}}
	}
	tr.observeEndpoints(t0, slice(true))
	tr.markStarted()
	if ev := tr.observeEndpoints(t0, slice(true)); len(ev) != 0 {
		t.Errorf("no change stamped %s", kinds(ev))
	}
	if ev := tr.observeEndpoints(t0, slice(false)); kinds(ev) != KindEndpoints+" ready [] notReady [10.244.1.5]" {
		t.Errorf("endpoints: %s", kinds(ev))
	}
	leader := func(holder string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder)}}
	}
	tr.observeLeader(t0, leader("cp1_x"))
	if ev := tr.observeLeader(t0, leader("cp1_x")); len(ev) != 0 {
		t.Errorf("same holder stamped %s", kinds(ev))
	}
	if ev := tr.observeLeader(t0, leader("cp2_y")); kinds(ev) != KindLeaderChanged+" cp1_x → cp2_y" || ev[0].Subject != "lease/kube-system/kube-controller-manager" {
		t.Errorf("leader: %+v", ev)
	}
}

// clusterOf says an event's cluster time, field and precision.
func clusterOf(e evidence.Event) string {
	if e.ClusterAt.IsZero() {
		return e.Kind + " none"
	}
	return e.Kind + " " + e.ClusterAt.Format(time.RFC3339Nano) + " " + e.ClusterField + " " + string(e.ClusterPrecision)
}

// Each event carries, beside the time it was seen, the time the object
// says the change happened, truncated to what the API stores.
func TestTrackerStampsClusterTimes(t *testing.T) {
	tr := newTracker("apiserver/cp1", evidence.DefaultSubjects)
	seen := t0.Add(time.Hour)
	tr.observeNode(seen, node(corev1.ConditionTrue, corev1.Taint{Key: "gone", Effect: corev1.TaintEffectNoSchedule}))
	n := node(corev1.ConditionUnknown,
		corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: t0.Add(3*time.Second + 400*time.Millisecond)}},
		corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule})
	n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(2 * time.Second))
	var got []string
	for _, e := range tr.observeNode(seen, n) {
		if !e.At.Equal(seen) || e.Replayed {
			t.Errorf("seen time of %s: %v (replayed %v)", e.Kind, e.At, e.Replayed)
		}
		got = append(got, clusterOf(e))
	}
	want := []string{
		"ready-unknown 2026-11-29T12:00:02Z status.conditions[Ready].lastTransitionTime second",
		"taint-added 2026-11-29T12:00:03Z spec.taints[node.kubernetes.io/unreachable:NoExecute].timeAdded second",
		"taint-added none",
		"taint-removed none",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("node events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	tr.markStarted()
	p := pod("a", "", corev1.PodPending, false)
	p.CreationTimestamp = metav1.NewTime(t0.Add(700 * time.Millisecond))
	if ev := tr.observePod(seen, p); len(ev) != 1 || clusterOf(ev[0]) != "pod-created 2026-11-29T12:00:00Z metadata.creationTimestamp second" {
		t.Errorf("created: %+v", ev)
	}
	p = pod("a", "worker2", corev1.PodRunning, true)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(5 * time.Second))}}
	p.DeletionGracePeriodSeconds = ptr.To[int64](30) // deletionTimestamp t0+1m: requested at t0+30s
	got = nil
	for _, e := range tr.observePod(seen, p) {
		got = append(got, clusterOf(e))
	}
	want = []string{
		"pod-scheduled 2026-11-29T12:00:05Z status.conditions[PodScheduled].lastTransitionTime second",
		"pod-running none",
		"pod-deletion-set 2026-11-29T12:00:30Z metadata.deletionTimestamp-metadata.deletionGracePeriodSeconds second",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pod events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if ev := tr.podGone(seen, "faultline", "stateful-0", "a"); len(ev) != 1 || clusterOf(ev[0]) != "pod-deleted none" {
		t.Errorf("deleted: %+v", ev)
	}

	leader := func(holder string, acquired time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-scheduler", Namespace: "kube-system"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), AcquireTime: &metav1.MicroTime{Time: acquired}}}
	}
	tr.observeLeader(seen, leader("cp1_x", t0))
	ev := tr.observeLeader(seen, leader("cp2_y", t0.Add(1234567891*time.Nanosecond)))
	if len(ev) != 1 || clusterOf(ev[0]) != "leader-changed 2026-11-29T12:00:01.234567Z spec.acquireTime microsecond" {
		t.Errorf("leader: %+v", ev)
	}
}
