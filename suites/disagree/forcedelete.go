package disagree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/lab"
)

// KindCutForceDelete is the kind of the single-copy positive control's fault.
const KindCutForceDelete = "cut-then-force-delete"

// forceDeleteParams are the fault's parameters; Cut is the partition's own
// kind and parameters, so that a heal in another process removes exactly
// the rules this one added.
type forceDeleteParams struct {
	Cut struct {
		Kind   string          `json:"kind"`
		Params json.RawMessage `json:"params"`
	} `json:"cut"`
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	// TaintWait bounds the wait for the node controller to taint the cut
	// node unreachable.
	TaintWait time.Duration `json:"taintWait"`
}

// CutThenForceDelete cuts node off from the control plane, waits until the
// node controller has tainted it unreachable (so nothing is scheduled back
// onto it), and then force-deletes the pod namespace/name, which runs there,
// through the virtual address, as an operator "unsticking" a pod would: the
// StatefulSet controller no longer waits for the kubelet's confirmation
// and starts the pod elsewhere while the cut node, which never hears of the
// deletion, keeps the first copy running. Kubernetes documents that a
// forced deletion gives up the at-most-one guarantee, so single-copy must
// be judged VIOLATED. note receives the forced deletion for the timeline
// (graceful-deletion reads it); it may be nil in a process that only heals.
func CutThenForceDelete(node, namespace, pod string, taintWait time.Duration, note func(evidence.Event)) fault.Fault {
	cut := faults.HostFromControlPlane(node)
	f := &cutForceDelete{cut: cut, note: note}
	f.p.Cut.Kind, f.p.Cut.Params = cut.Kind(), cut.Params()
	f.p.Node, f.p.Namespace, f.p.Pod, f.p.TaintWait = node, namespace, pod, taintWait
	return f
}

type cutForceDelete struct {
	p    forceDeleteParams
	cut  fault.Fault
	note func(evidence.Event)
}

func (f *cutForceDelete) Kind() string       { return KindCutForceDelete }
func (f *cutForceDelete) Class() fault.Class { return f.cut.Class() }
func (f *cutForceDelete) Params() json.RawMessage {
	b, err := json.Marshal(f.p)
	if err != nil {
		panic(fmt.Sprintf("%s params: %v", KindCutForceDelete, err))
	}
	return b
}

// Inject refuses, before cutting anything, when the pod does not run on
// the node: the control would then prove nothing.
func (f *cutForceDelete) Inject(ctx context.Context, l lab.Lab) error {
	path, err := l.Kubeconfig("")
	if err != nil {
		return fmt.Errorf("force delete: admin kubeconfig: %w", err)
	}
	cs, _, err := source.ClientFromKubeconfig(path, 5*time.Second)
	if err != nil {
		return fmt.Errorf("force delete: %w", err)
	}
	before, err := cs.CoreV1().Pods(f.p.Namespace).Get(ctx, f.p.Pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("force delete: reading pod %s/%s before the cut: %w", f.p.Namespace, f.p.Pod, err)
	}
	if before.Spec.NodeName != f.p.Node {
		return fmt.Errorf("force delete: pod %s/%s runs on %q, not on %s, so cutting %s off would not leave a copy behind", f.p.Namespace, f.p.Pod, before.Spec.NodeName, f.p.Node, f.p.Node)
	}
	if err := f.cut.Inject(ctx, l); err != nil {
		return err
	}
	tainted := func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, f.p.Node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoSchedule {
				return true, nil
			}
		}
		return false, nil
	}
	if err := lab.WaitFor(ctx, "the unreachable taint on "+f.p.Node, f.p.TaintWait, time.Second, tainted); err != nil {
		return fmt.Errorf("force delete: %w", err)
	}
	p, err := cs.CoreV1().Pods(f.p.Namespace).Get(ctx, f.p.Pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("force delete: reading pod %s/%s: %w", f.p.Namespace, f.p.Pod, err)
	}
	if p.UID != before.UID {
		return fmt.Errorf("force delete: pod %s/%s was replaced (uid %s, was %s) before it was force-deleted", f.p.Namespace, f.p.Pod, p.UID, before.UID)
	}
	zero := int64(0)
	// The UID precondition keeps the deletion to the copy on the cut node.
	err = cs.CoreV1().Pods(f.p.Namespace).Delete(ctx, f.p.Pod, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	at := time.Now().UTC()
	if err != nil {
		return fmt.Errorf("force delete: deleting pod %s/%s (uid %s): %w", f.p.Namespace, f.p.Pod, p.UID, err)
	}
	if f.note != nil {
		f.note(invariant.ForceDeletion(at, f.p.Namespace, f.p.Pod, string(p.UID)))
	}
	return nil
}

func (f *cutForceDelete) Heal(ctx context.Context, l lab.Lab) error { return f.cut.Heal(ctx, l) }

func (f *cutForceDelete) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return f.cut.Probe(ctx, l)
}

func decodeCutForceDelete(raw json.RawMessage) (fault.Fault, error) {
	var p forceDeleteParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Node == "" || p.Namespace == "" || p.Pod == "" {
		return nil, errors.New("node, namespace and pod are all needed")
	}
	cut, err := fault.Decode(p.Cut.Kind, p.Cut.Params)
	if err != nil {
		return nil, fmt.Errorf("the cut: %w", err)
	}
	return &cutForceDelete{p: p, cut: cut}, nil
}

func init() { fault.Register(KindCutForceDelete, decodeCutForceDelete) }
