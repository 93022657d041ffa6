package controls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindStopThenOutOfService is the kind of StopThenOutOfService faults.
const KindStopThenOutOfService = "stop-then-out-of-service"

// OutOfServiceValue is the taint's value: the one Kubernetes' non-graceful
// node shutdown documentation uses. The controllers read only the key.
const OutOfServiceValue = "nodeshutdown"

type outOfServiceParams struct {
	Stop cutParams `json:"stop"`
	Node string    `json:"node"`
	// NotReadyWait bounds the wait for the node controller to mark the
	// node not Ready: the pod garbage collector acts only on a node that
	// is both not Ready and tainted out-of-service.
	NotReadyWait time.Duration `json:"notReadyWait"`
}

// StopThenOutOfService injects stop (which must silence node's kubelet:
// its containers go on running), waits until the node controller has
// marked node not Ready, and taints it node.kubernetes.io/out-of-service
// (NoExecute), as an operator who believes the machine is shut down would.
// The taint manager then evicts the node's pods; the pod garbage collector
// force-deletes those still terminating on a not-Ready node with the taint
// (podgc's gcTerminating), and the attach/detach controller detaches their
// volumes without waiting for an unmount (the reconciler's
// hasOutOfServiceTaint) or for its 6-minute maxWaitForUnmountDuration. A
// replacement can then attach the volume elsewhere while the old copy,
// whose kubelet is only stopped, still has it mounted.
//
// Heal heals stop (starts the kubelet) and removes the taint, both even
// when one fails: Kubernetes' documentation has the operator remove the
// taint once the node is back.
func StopThenOutOfService(stop fault.Fault, node string, notReadyWait time.Duration) fault.Fault {
	return &outOfService{p: outOfServiceParams{Stop: cutOf(stop), Node: node, NotReadyWait: notReadyWait}, stop: stop}
}

type outOfService struct {
	p    outOfServiceParams
	stop fault.Fault
}

func (f *outOfService) Kind() string            { return KindStopThenOutOfService }
func (f *outOfService) Class() fault.Class      { return f.stop.Class() }
func (f *outOfService) Params() json.RawMessage { return mustJSON(KindStopThenOutOfService, f.p) }

// Inject refuses, before stopping anything, a node the lab or the API
// does not know.
func (f *outOfService) Inject(ctx context.Context, l lab.Lab) error {
	if _, err := l.Host(f.p.Node); err != nil {
		return fmt.Errorf("out-of-service: %w", err)
	}
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("out-of-service: %w", err)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, f.p.Node, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("out-of-service: reading Node %s before the stop: %w", f.p.Node, err)
	}
	if err := f.stop.Inject(ctx, l); err != nil {
		return err
	}
	crashpoint.Reach("stop-then-out-of-service/inject/stopped")
	notReady := func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, f.p.Node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !nodeReady(n), nil
	}
	if err := lab.WaitFor(ctx, "Node "+f.p.Node+" not Ready", f.p.NotReadyWait, time.Second, notReady); err != nil {
		return fmt.Errorf("out-of-service: %w", err)
	}
	return setOutOfService(ctx, cs, f.p.Node, true)
}

func (f *outOfService) Heal(ctx context.Context, l lab.Lab) error {
	errStop := f.stop.Heal(cutContext(ctx, f.stop), l)
	crashpoint.Reach("stop-then-out-of-service/heal/started")
	cs, err := client(l, "")
	if err != nil {
		return errors.Join(errStop, fmt.Errorf("healing out-of-service: %w", err))
	}
	return errors.Join(errStop, setOutOfService(ctx, cs, f.p.Node, false))
}

func (f *outOfService) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return f.stop.Probe(ctx, l)
}

// nodeReady is whether n's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setOutOfService adds (on) or removes the out-of-service taint of node,
// retrying on a conflict with the node controller's own taint updates.
// Adding a taint already there and removing one that is not are no-ops.
func setOutOfService(ctx context.Context, cs kubernetes.Interface, node string, on bool) error {
	verb := "removing"
	if on {
		verb = "adding"
	}
	var err error
	for range 5 {
		var n *corev1.Node
		n, err = cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			break
		}
		i := slices.IndexFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService })
		switch {
		case on && i >= 0, !on && i < 0:
			return nil
		case on:
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: OutOfServiceValue, Effect: corev1.TaintEffectNoExecute})
		default:
			fault.Found(ctx, "Node %s tainted %s", node, corev1.TaintNodeOutOfService)
			n.Spec.Taints = slices.Delete(n.Spec.Taints, i, i+1)
		}
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if err == nil && !on {
			fault.Removed(ctx, "Node %s's %s taint", node, corev1.TaintNodeOutOfService)
		}
		if err == nil || !apierrors.IsConflict(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("out-of-service: %s the taint on Node %s: %w", verb, node, err)
	}
	return nil
}

func decodeOutOfService(raw json.RawMessage) (fault.Fault, error) {
	var p outOfServiceParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Node == "" {
		return nil, errors.New("no node named")
	}
	stop, err := p.Stop.decode()
	if err != nil {
		return nil, err
	}
	return &outOfService{p: p, stop: stop}, nil
}

func init() { fault.Register(KindStopThenOutOfService, decodeOutOfService) }
