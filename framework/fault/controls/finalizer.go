package controls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindFinalizerThenDelete is the kind of FinalizerThenDelete faults.
const KindFinalizerThenDelete = "finalizer-then-delete"

// HoldFinalizer is the finalizer FinalizerThenDelete puts on its pod.
const HoldFinalizer = "faultline.dev/control-hold"

// PodRef names a pod.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"pod"`
}

// FinalizerThenDelete puts a finalizer no controller removes on pod and
// deletes it gracefully, as a controller that died with its finalizer in
// place would leave it: the kubelet stops the pod's containers, but the
// object stays Terminating, and a StatefulSet does not start its
// replacement while it exists. Every component is healthy and the pod
// never comes back: convergence must be judged VIOLATED (the pod is
// Terminating).
//
// The finalizer outlives Heal (which does nothing): it is the breakage
// convergence is judged on after heal. Release removes it, once the
// verdicts are in; the deletion then completes.
func FinalizerThenDelete(pod PodRef) fault.Lingering { return &finalizerDelete{p: pod} }

type finalizerDelete struct{ p PodRef }

func (f *finalizerDelete) Kind() string            { return KindFinalizerThenDelete }
func (f *finalizerDelete) Class() fault.Class      { return ClassOperatorAction }
func (f *finalizerDelete) Params() json.RawMessage { return mustJSON(KindFinalizerThenDelete, f.p) }

func (f *finalizerDelete) Inject(ctx context.Context, l lab.Lab) error {
	p := f.p
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("finalizer: %w", err)
	}
	pods := cs.CoreV1().Pods(p.Namespace)
	before, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("finalizer: reading pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if before.DeletionTimestamp != nil {
		return fmt.Errorf("finalizer: pod %s/%s is already being deleted", p.Namespace, p.Name)
	}
	// A strategic merge patch adds to the finalizers (their patch strategy
	// is merge) without replacing any other's; the uid makes it a
	// precondition, so only the pod read above gets it.
	add := fmt.Sprintf(`{"metadata":{"uid":%q,"finalizers":[%q]}}`, before.UID, HoldFinalizer)
	if _, err := pods.Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(add), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("finalizer: adding %s to pod %s/%s: %w", HoldFinalizer, p.Namespace, p.Name, err)
	}
	crashpoint.Reach("finalizer-then-delete/inject/finalizer")
	err = pods.Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &before.UID}})
	if err != nil {
		// The finalizer alone would hold nothing; take it off again.
		return errors.Join(fmt.Errorf("finalizer: deleting pod %s/%s: %w", p.Namespace, p.Name, err), f.Release(ctx, l))
	}
	return nil
}

// Heal does nothing: the held pod is what convergence is judged on after
// heal, and Release lets it go.
func (f *finalizerDelete) Heal(context.Context, lab.Lab) error { return nil }

// Release takes the finalizer off the pod; a pod without it, or gone, is
// released.
func (f *finalizerDelete) Release(ctx context.Context, l lab.Lab) error {
	p := f.p
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("finalizer: %w", err)
	}
	pods := cs.CoreV1().Pods(p.Namespace)
	pod, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalizer: reading pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	if !slices.Contains(pod.Finalizers, HoldFinalizer) {
		return nil
	}
	fault.Found(ctx, "pod %s/%s holding finalizer %s", p.Namespace, p.Name, HoldFinalizer)
	remove := fmt.Sprintf(`{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, HoldFinalizer)
	_, err = pods.Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(remove), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalizer: removing %s from pod %s/%s: %w", HoldFinalizer, p.Namespace, p.Name, err)
	}
	fault.Removed(ctx, "finalizer %s of pod %s/%s", HoldFinalizer, p.Namespace, p.Name)
	return nil
}

// Probe sees the fault when the pod is being deleted and still holds the
// finalizer.
func (f *finalizerDelete) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	p := f.p
	cs, err := client(l, "")
	if err != nil {
		return fault.Effect{}, err
	}
	pod, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fault.Effect{Detail: fmt.Sprintf("no pod %s/%s", p.Namespace, p.Name)}, nil
	}
	if err != nil {
		return fault.Effect{}, fmt.Errorf("reading pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	held := slices.Contains(pod.Finalizers, HoldFinalizer)
	if pod.DeletionTimestamp == nil {
		return fault.Effect{Detail: fmt.Sprintf("pod %s/%s is not being deleted (finalizer %s: %v)", p.Namespace, p.Name, HoldFinalizer, held)}, nil
	}
	return fault.Effect{Observed: held, Detail: fmt.Sprintf("pod %s/%s deleted at %s, phase %s, finalizer %s: %v",
		p.Namespace, p.Name, pod.DeletionTimestamp.UTC().Format("15:04:05"), pod.Status.Phase, HoldFinalizer, held)}, nil
}

func decodeFinalizerDelete(raw json.RawMessage) (fault.Fault, error) {
	var p PodRef
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Namespace == "" || p.Name == "" {
		return nil, errors.New("namespace and pod are both needed")
	}
	return &finalizerDelete{p: p}, nil
}

func init() { fault.Register(KindFinalizerThenDelete, decodeFinalizerDelete) }
