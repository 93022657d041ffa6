package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/lab"
)

// KindRackCutForceDelete is the kind of the racks drill's positive control.
const KindRackCutForceDelete = "drill-rack-cut-force-delete"

// forceDeleteParams say which rack is cut off and which pod is then
// force-deleted (grace period zero) through the API servers the rack can
// no longer reach.
type forceDeleteParams struct {
	Rack     string `json:"rack"`
	Node     string `json:"node"`
	Pod      string `json:"pod"`
	Observer string `json:"observer"`
}

// RackCutForceDelete cuts rack off from the rest, waits until the
// unreachable taint is on node, and then force-deletes pod as an operator
// "unsticking" it would: the StatefulSet controller no longer waits for the
// kubelet's confirmation and may start the pod elsewhere while the old copy
// still runs. observer is the control-plane host whose API server is asked.
// note receives the forced deletion for the timeline.
func RackCutForceDelete(rack, node, pod, observer string, note func(evidence.Event)) fault.Fault {
	return &rackCutForceDelete{p: forceDeleteParams{Rack: rack, Node: node, Pod: pod, Observer: observer}, cut: faults.RackFromRest(rack), note: note}
}

type rackCutForceDelete struct {
	p    forceDeleteParams
	cut  fault.Fault
	note func(evidence.Event)
}

func (f *rackCutForceDelete) Kind() string       { return KindRackCutForceDelete }
func (f *rackCutForceDelete) Class() fault.Class { return f.cut.Class() }
func (f *rackCutForceDelete) Params() json.RawMessage {
	b, _ := json.Marshal(f.p)
	return b
}

func (f *rackCutForceDelete) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.cut.Inject(ctx, l); err != nil {
		return err
	}
	path, err := l.Kubeconfig(f.p.Observer)
	if err != nil {
		return fmt.Errorf("force delete: %w", err)
	}
	cs, _, err := source.ClientFromKubeconfig(path, 5*time.Second)
	if err != nil {
		return fmt.Errorf("force delete: %w", err)
	}
	tainted := func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, f.p.Node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeUnreachable {
				return true, nil
			}
		}
		return false, nil
	}
	if err := lab.WaitFor(ctx, "the unreachable taint on "+f.p.Node, 10*time.Minute, time.Second, tainted); err != nil {
		return fmt.Errorf("force delete: %w", err)
	}
	p, err := cs.CoreV1().Pods(Namespace).Get(ctx, f.p.Pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("force delete: reading pod %s/%s: %w", Namespace, f.p.Pod, err)
	}
	zero := int64(0)
	if err := cs.CoreV1().Pods(Namespace).Delete(ctx, f.p.Pod, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		return fmt.Errorf("force delete: deleting pod %s/%s: %w", Namespace, f.p.Pod, err)
	}
	if f.note != nil {
		f.note(evidence.Event{At: time.Now().UTC(), Source: "faultline", Subject: "pod/" + Namespace + "/" + f.p.Pod, Kind: KindPodForceDeleted,
			Detail: fmt.Sprintf("uid %s on %s, grace period 0, through %s's API server", p.UID, p.Spec.NodeName, f.p.Observer)})
	}
	return nil
}

func (f *rackCutForceDelete) Heal(ctx context.Context, l lab.Lab) error { return f.cut.Heal(ctx, l) }

func (f *rackCutForceDelete) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return f.cut.Probe(ctx, l)
}

func init() {
	fault.Register(KindRackCutForceDelete, func(raw json.RawMessage) (fault.Fault, error) {
		var p forceDeleteParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		if p.Rack == "" {
			return nil, fmt.Errorf("no rack named")
		}
		return &rackCutForceDelete{p: p, cut: faults.RackFromRest(p.Rack)}, nil
	})
}
