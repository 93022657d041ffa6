// Package realcluster runs a real etcd and a real kube-apiserver on
// loopback for tests (internal/kubetest) and seeds the subjects faultline
// asks about. Tests skip when the binaries are not built.
package realcluster

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/internal/kubetest"
)

// requestTimeout bounds each request of the clients made here.
const requestTimeout = 1500 * time.Millisecond

// Cluster is a control plane of one etcd member and one kube-apiserver.
type Cluster struct {
	*kubetest.ControlPlane
}

// Start starts one etcd and one kube-apiserver (token auth, AlwaysAllow,
// protobuf storage as by default) on loopback, its clients' requests
// bounded by requestTimeout.
func Start(t testing.TB) *Cluster {
	return &Cluster{kubetest.StartControlPlane(t, kubetest.Options{RequestTimeout: requestTimeout})}
}

// seed creates the subjects: worker1 Ready with a taint, its Lease, the
// stateful pod running on worker1, and the test service's EndpointSlice
// with one ready and one not-ready address.
func (rc *Cluster) Seed(t testing.TB, s evidence.Subjects) {
	ctx := context.Background()
	cs := rc.Client
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.PodNamespace}}, metav1.CreateOptions{})
	must("namespace", err)
	hb := metav1.NewTime(time.Now().Add(-3 * time.Second).Truncate(time.Second))
	added := metav1.NewTime(time.Now().Add(-2 * time.Second).Truncate(time.Second))
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.Node},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added},
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule},
		}},
	}, metav1.CreateOptions{})
	must("node", err)
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		LastHeartbeatTime: hb, LastTransitionTime: added,
	}}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	must("node status", err)
	// kube-node-lease is made by the API server itself; wait for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: s.Node},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(s.Node), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)},
			},
		}, metav1.CreateOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	must("lease", err)
	pod, err := cs.CoreV1().Pods(s.PodNamespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.PodName, Labels: map[string]string{"app": "stateful"}},
		Spec: corev1.PodSpec{
			NodeName:   s.Node,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
	}, metav1.CreateOptions{})
	must("pod", err)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = "10.244.1.5"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	_, err = cs.CoreV1().Pods(s.PodNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	must("pod status", err)
	_, err = cs.CoreV1().Services(s.ServiceNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.ServiceName},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	must("service", err)
	_, err = cs.DiscoveryV1().EndpointSlices(s.ServiceNamespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: s.ServiceName + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: s.ServiceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, NodeName: ptr.To(s.Node)},
			{Addresses: []string{"10.244.2.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}, metav1.CreateOptions{})
	must("endpointslice", err)
	// An EndpointSlice of another service in the same namespace, which the
	// etcd source must leave out.
	_, err = cs.DiscoveryV1().EndpointSlices(s.ServiceNamespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "other-xyz", Labels: map[string]string{discoveryv1.LabelServiceName: "other"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.3.3"}}},
	}, metav1.CreateOptions{})
	must("other endpointslice", err)
}

// SecondClient is another client of the same API server (its own
// connections), for a test that needs two sources.
func (rc *Cluster) SecondClient(t testing.TB) kubernetes.Interface {
	cfg := rest.CopyConfig(rc.Config)
	cfg.UserAgent = "faultline-second-client"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
