//go:build bins

package watch

// Runs the watcher against a real etcd and kube-apiserver on loopback (the
// binaries `make bins` builds): go test -tags bins ./framework/evidence/watch/

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/internal/realcluster"
	"github.com/faultline/faultline/framework/evidence/source"
)

// waitFor polls the watcher's timeline until an event of kind from src
// about subject appears.
func waitFor(t *testing.T, w *Watcher, src evidence.Source, subject, kind string) evidence.Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range w.Timeline() {
			if e.Source == src && e.Subject == subject && e.Kind == kind {
				return e
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no %s %s from %s in 20s; timeline:\n%s", kind, subject, src, dump(w.Timeline()))
	return evidence.Event{}
}

func dump(tl evidence.Timeline) string {
	s := ""
	for _, e := range tl {
		s += e.At.Format("15:04:05.000") + " " + string(e.Source) + " " + e.Subject + " " + e.Kind + " " + e.Detail
		if !e.ClusterAt.IsZero() {
			s += " [cluster " + e.ClusterAt.Format("15:04:05.000000") + " " + e.ClusterField + "]"
		}
		s += "\n"
	}
	return s
}

func TestWatcherOnARealAPIServer(t *testing.T) {
	rc := realcluster.Start(t)
	s := evidence.DefaultSubjects
	rc.Seed(t, s)
	ctx := context.Background()
	cs := rc.Client
	watched := source.Client{Source: "apiserver/watched", Client: cs}
	polled := source.Client{Source: "apiserver/polled", Client: rc.SecondClient(t)}

	leaderLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("cp1_a")}}
	if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, leaderLease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Renew worker1's lease as a kubelet would, with a 1s lease (a 250ms
	// renew interval), until told to stop.
	renew := func() {
		l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, s.Node, metav1.GetOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		l.Spec.LeaseDurationSeconds = ptr.To[int32](1)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
	}
	stopRenewing := make(chan struct{})
	renewing := make(chan struct{})
	go func() {
		defer close(renewing)
		for {
			renew()
			select {
			case <-stopRenewing:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	w, err := New(watched, []source.Client{polled}, Options{Subjects: s, PollEvery: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	time.Sleep(time.Second)
	if tl := w.Timeline(); len(tl) != 0 {
		t.Errorf("events before anything changed:\n%s", dump(tl))
	}

	// The kubelet stops: renewals stop, then the node goes Unknown and is
	// tainted, as the node lifecycle controller would do it.
	close(stopRenewing)
	<-renewing
	stopped := waitFor(t, w, watched.Source, "lease/kube-node-lease/worker1", KindLeaseStopped)
	waitFor(t, w, polled.Source, "lease/kube-node-lease/worker1", KindLeaseStopped)
	n, err := cs.CoreV1().Nodes().Get(ctx, s.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
	if n, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, watched.Source, "node/worker1", KindReadyTrue)
	// A poller sees only states that last longer than its period.
	waitFor(t, w, polled.Source, "node/worker1", KindReadyTrue)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}}
	if n, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	unknown := waitFor(t, w, watched.Source, "node/worker1", KindReadyUnknown)
	waitFor(t, w, polled.Source, "node/worker1", KindReadyUnknown)
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: time.Now()}})
	if _, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	taint := waitFor(t, w, watched.Source, "node/worker1", KindTaintAdded)
	if !(stopped.At.Before(unknown.At) && unknown.At.Before(taint.At)) {
		t.Errorf("order: stopped %s, unknown %s, taint %s", stopped.At, unknown.At, taint.At)
	}
	if taint.ClusterField != "spec.taints[node.kubernetes.io/not-ready:NoExecute].timeAdded" || taint.ClusterAt.IsZero() || taint.ClusterAt.After(taint.At) {
		t.Errorf("taint's cluster time: %+v", taint)
	}
	renew()
	resumed := waitFor(t, w, watched.Source, "lease/kube-node-lease/worker1", KindLeaseResumed)
	if resumed.ClusterField != "spec.renewTime" || resumed.ClusterPrecision != evidence.Microseconds || resumed.ClusterAt.After(resumed.At) {
		t.Errorf("renewal's cluster time: %+v", resumed)
	}

	// The pod is deleted and replaced.
	asked := time.Now()
	if err := cs.CoreV1().Pods(s.PodNamespace).Delete(ctx, s.PodName, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)}); err != nil {
		t.Fatal(err)
	}
	deletion := waitFor(t, w, watched.Source, "pod/faultline/stateful-0", KindPodDeletion)
	// deletionTimestamp is 30 s ahead; the request was made now, to the second.
	if d := deletion.ClusterAt.Sub(asked); d < -time.Second || d > time.Second || deletion.ClusterPrecision != evidence.Seconds {
		t.Errorf("deletion requested at %s by the cluster, asked at %s: %+v", deletion.ClusterAt, asked, deletion)
	}
	waitFor(t, w, polled.Source, "pod/faultline/stateful-0", KindPodDeletion)
	if err := cs.CoreV1().Pods(s.PodNamespace).Delete(ctx, s.PodName, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, watched.Source, "pod/faultline/stateful-0", KindPodDeleted)
	waitFor(t, w, polled.Source, "pod/faultline/stateful-0", KindPodDeleted)
	p, err := cs.CoreV1().Pods(s.PodNamespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.PodName},
		Spec:       corev1.PodSpec{NodeName: "worker2", Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := waitFor(t, w, watched.Source, "pod/faultline/stateful-0", KindPodCreated)
	waitFor(t, w, watched.Source, "pod/faultline/stateful-0", KindPodScheduled)
	waitFor(t, w, polled.Source, "pod/faultline/stateful-0", KindPodCreated)
	p.Status.Phase = corev1.PodRunning
	if _, err := cs.CoreV1().Pods(s.PodNamespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, watched.Source, "pod/faultline/stateful-0", KindPodRunning)
	if want := "replaces uid"; !strings.Contains(created.Detail, want) {
		t.Errorf("replacement detail %q lacks %q", created.Detail, want)
	}
	if !created.ClusterAt.Equal(p.CreationTimestamp.UTC()) || created.ClusterField != "metadata.creationTimestamp" {
		t.Errorf("created at %s, the event says %+v", p.CreationTimestamp, created)
	}

	// The endpoints change and the leader moves.
	slice, err := cs.DiscoveryV1().EndpointSlices(s.ServiceNamespace).Get(ctx, s.ServiceName+"-abcde", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slice.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"10.244.2.8"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}
	if _, err := cs.DiscoveryV1().EndpointSlices(s.ServiceNamespace).Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ep := waitFor(t, w, watched.Source, "service/faultline/stateful", KindEndpoints)
	if ep.Detail != "ready [10.244.2.8] notReady []" {
		t.Errorf("endpoints detail %q", ep.Detail)
	}
	waitFor(t, w, polled.Source, "service/faultline/stateful", KindEndpoints)
	ll, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ll.Spec.HolderIdentity = ptr.To("cp2_b")
	if _, err := cs.CoordinationV1().Leases("kube-system").Update(ctx, ll, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	lc := waitFor(t, w, watched.Source, "lease/kube-system/kube-controller-manager", KindLeaderChanged)
	if lc.Detail != "cp1_a → cp2_b" {
		t.Errorf("leader detail %q", lc.Detail)
	}
	waitFor(t, w, polled.Source, "lease/kube-system/kube-controller-manager", KindLeaderChanged)

	for _, e := range w.Timeline() {
		if e.Replayed {
			t.Errorf("nothing was relisted, yet %s %s is marked replayed", e.Subject, e.Kind)
		}
	}

	// Drain hands out each event once.
	first := w.Drain()
	if len(first) == 0 || len(w.Drain()) != 0 {
		t.Errorf("drain: %d then more", len(first))
	}
	t.Logf("timeline:\n%s", dump(w.Timeline()))
}
