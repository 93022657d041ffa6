package controls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/lab"
)

// KindCutThenForceDelete is the kind of CutThenForceDelete faults.
const KindCutThenForceDelete = "cut-then-force-delete"

// Pod names the pod a control force-deletes and where it runs.
type Pod struct {
	// Node is the host the pod runs on, the one the cut leaves behind.
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Name      string `json:"pod"`
	// Observer is the control-plane host whose API server is asked; ""
	// asks the lab's default address (the virtual one where there is one).
	Observer string `json:"observer,omitempty"`
	// TaintWait bounds the wait for the node controller to taint the cut
	// node unreachable.
	TaintWait time.Duration `json:"taintWait"`
}

type forceDeleteParams struct {
	Cut cutParams `json:"cut"`
	Pod
}

// CutThenForceDelete injects cut (which must leave pod.Node unreachable for
// the control plane), waits until the node controller has tainted that
// node unreachable (so nothing is scheduled back onto it), and then
// force-deletes the pod, which runs there, as an operator "unsticking" a
// pod would: a StatefulSet controller no longer waits for the kubelet's
// confirmation and starts the pod elsewhere while the cut node, which never
// hears of the deletion, keeps the first copy running. Kubernetes documents
// that a forced deletion gives up the at-most-one guarantee, so single-copy
// must be judged VIOLATED. note receives the forced deletion for the
// timeline (graceful-deletion reads it); it may be nil in a process that
// only heals.
func CutThenForceDelete(cut fault.Fault, pod Pod, note func(evidence.Event)) fault.Fault {
	return &cutForceDelete{p: forceDeleteParams{Cut: cutOf(cut), Pod: pod}, cut: cut, note: note}
}

type cutForceDelete struct {
	p    forceDeleteParams
	cut  fault.Fault
	note func(evidence.Event)
}

func (f *cutForceDelete) Kind() string            { return KindCutThenForceDelete }
func (f *cutForceDelete) Class() fault.Class      { return f.cut.Class() }
func (f *cutForceDelete) Params() json.RawMessage { return mustJSON(KindCutThenForceDelete, f.p) }

// Inject refuses, before cutting anything, when the pod does not run on
// the node: the control would then prove nothing.
func (f *cutForceDelete) Inject(ctx context.Context, l lab.Lab) error {
	p := f.p.Pod
	cs, err := client(l, p.Observer)
	if err != nil {
		return fmt.Errorf("force delete: %w", err)
	}
	before, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("force delete: reading pod %s/%s before the cut: %w", p.Namespace, p.Name, err)
	}
	if before.Spec.NodeName != p.Node {
		return fmt.Errorf("force delete: pod %s/%s runs on %q, not on %s, so cutting %s off would not leave a copy behind", p.Namespace, p.Name, before.Spec.NodeName, p.Node, p.Node)
	}
	if err := f.cut.Inject(ctx, l); err != nil {
		return err
	}
	crashpoint.Reach("cut-then-force-delete/inject/cut")
	tainted := func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, p.Node, metav1.GetOptions{})
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
	if err := lab.WaitFor(ctx, "the unreachable taint on "+p.Node, p.TaintWait, time.Second, tainted); err != nil {
		return fmt.Errorf("force delete: %w", err)
	}
	now, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("force delete: reading pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if now.UID != before.UID {
		return fmt.Errorf("force delete: pod %s/%s was replaced (uid %s, was %s) before it was force-deleted", p.Namespace, p.Name, now.UID, before.UID)
	}
	zero := int64(0)
	// The UID precondition keeps the deletion to the copy on the cut node.
	err = cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &now.UID}})
	at := time.Now().UTC()
	if err != nil {
		return fmt.Errorf("force delete: deleting pod %s/%s (uid %s): %w", p.Namespace, p.Name, now.UID, err)
	}
	if f.note != nil {
		f.note(invariant.ForceDeletion(at, p.Namespace, p.Name, string(now.UID)))
	}
	return nil
}

func (f *cutForceDelete) Heal(ctx context.Context, l lab.Lab) error {
	return f.cut.Heal(cutContext(ctx, f.cut), l)
}

func (f *cutForceDelete) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return f.cut.Probe(ctx, l)
}

func decodeCutForceDelete(raw json.RawMessage) (fault.Fault, error) {
	var p forceDeleteParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Node == "" || p.Namespace == "" || p.Name == "" {
		return nil, errors.New("node, namespace and pod are all needed")
	}
	cut, err := p.Cut.decode()
	if err != nil {
		return nil, err
	}
	return &cutForceDelete{p: p, cut: cut}, nil
}

func init() { fault.Register(KindCutThenForceDelete, decodeCutForceDelete) }
