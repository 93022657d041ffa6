// Package source holds the readers faultline asks at every snapshot: each
// API server at its own address, the virtual address, etcd read directly,
// worker1's kubelet API, each worker's container runtime, kube-proxy's
// rules on worker1, cluster DNS and the in-cluster informer fixture.
package source

import (
	"sort"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/faultline/faultline/framework/evidence"
)

// The conversions below turn Kubernetes objects into question values; every
// source that reads objects (API servers, etcd, the kubelet, the informer
// fixture) goes through them so that their answers compare.

// NodeReadyOf returns node's Ready condition; a node without one reads as
// existing with an empty status.
func NodeReadyOf(node *corev1.Node) evidence.NodeReadyValue {
	if node == nil {
		return evidence.NodeReadyValue{}
	}
	v := evidence.NodeReadyValue{Exists: true, Name: node.Name}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			v.Status = string(c.Status)
			v.Reason = c.Reason
			v.LastHeartbeatTime = c.LastHeartbeatTime.UTC()
			v.LastTransitionTime = c.LastTransitionTime.UTC()
		}
	}
	return v
}

// TaintsOf returns node's taints in the node's order (never nil).
func TaintsOf(node *corev1.Node) []evidence.TaintValue {
	out := []evidence.TaintValue{}
	if node == nil {
		return out
	}
	for _, t := range node.Spec.Taints {
		tv := evidence.TaintValue{Key: t.Key, Value: t.Value, Effect: string(t.Effect)}
		if t.TimeAdded != nil {
			tv.TimeAdded = t.TimeAdded.UTC()
		}
		out = append(out, tv)
	}
	return out
}

// LeaseOf returns a Lease's holder and times.
func LeaseOf(l *coordinationv1.Lease) evidence.LeaseValue {
	if l == nil {
		return evidence.LeaseValue{}
	}
	v := evidence.LeaseValue{Exists: true}
	if l.Spec.HolderIdentity != nil {
		v.HolderIdentity = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		v.RenewTime = l.Spec.RenewTime.UTC()
	}
	if l.Spec.AcquireTime != nil {
		v.AcquireTime = l.Spec.AcquireTime.UTC()
	}
	if l.Spec.LeaseDurationSeconds != nil {
		v.LeaseDurationSeconds = *l.Spec.LeaseDurationSeconds
	}
	if l.Spec.LeaseTransitions != nil {
		v.LeaseTransitions = *l.Spec.LeaseTransitions
	}
	return v
}

// PodOf returns what a pod object says; nil is a pod that does not exist.
func PodOf(p *corev1.Pod) evidence.PodValue {
	if p == nil {
		return evidence.PodValue{}
	}
	v := evidence.PodValue{
		Exists:   true,
		UID:      string(p.UID),
		NodeName: p.Spec.NodeName,
		Phase:    string(p.Status.Phase),
		PodIP:    p.Status.PodIP,
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			v.Ready = c.Status == corev1.ConditionTrue
		}
	}
	if p.DeletionTimestamp != nil {
		t := p.DeletionTimestamp.UTC()
		v.DeletionTimestamp = &t
	}
	return v
}

// EndpointsOf merges a service's EndpointSlices into its ready and
// not-ready addresses. An endpoint without a Ready condition is ready, as
// the EndpointSlice API defines ("nil should be interpreted as true").
func EndpointsOf(slices []discoveryv1.EndpointSlice) evidence.EndpointsValue {
	v := evidence.EndpointsValue{Ready: []string{}, NotReady: []string{}, Slices: len(slices)}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			for _, a := range e.Addresses {
				if ready {
					v.Ready = append(v.Ready, a)
				} else {
					v.NotReady = append(v.NotReady, a)
				}
			}
		}
	}
	sort.Strings(v.Ready)
	sort.Strings(v.NotReady)
	return v
}

// answer is evidence.EncodedAnswer, short for this package's readers.
func answer(v any, readAt time.Time, rv string) evidence.Answer {
	return evidence.EncodedAnswer(v, readAt, rv)
}

func now() time.Time { return time.Now().UTC() }
