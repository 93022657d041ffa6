package controls

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindCutThenDeleteNode is the kind of CutThenDeleteNode faults.
const KindCutThenDeleteNode = "cut-then-delete-node"

type deleteNodeParams struct {
	Cut  cutParams `json:"cut"`
	Node string    `json:"node"`
}

// CutThenDeleteNode injects cut (which must cut node off from the control
// plane) and deletes node's
// Node object through the lab's default address, as an operator removing a dead
// machine from the cluster would. The pod garbage collector then deletes
// every pod bound to a node that no longer exists, at once and without
// waiting for any kubelet (after its fixed 40 s quarantine, checked every
// 20 s), while the cut-off kubelet, which never hears of it, keeps their
// containers running: the pods leave the API before their containers
// stop, and no one force-deleted them through the API, so
// graceful-deletion must be judged VIOLATED.
//
// Heal removes the cut and restarts the node's kubelet: a kubelet
// registers its Node object only when it starts.
func CutThenDeleteNode(cut fault.Fault, node string) fault.Fault {
	return &cutDeleteNode{p: deleteNodeParams{Cut: cutOf(cut), Node: node}, cut: cut}
}

type cutDeleteNode struct {
	p   deleteNodeParams
	cut fault.Fault
}

func (f *cutDeleteNode) Kind() string            { return KindCutThenDeleteNode }
func (f *cutDeleteNode) Class() fault.Class      { return f.cut.Class() }
func (f *cutDeleteNode) Params() json.RawMessage { return mustJSON(KindCutThenDeleteNode, f.p) }

func (f *cutDeleteNode) Inject(ctx context.Context, l lab.Lab) error {
	if _, err := l.Host(f.p.Node); err != nil {
		return fmt.Errorf("delete node: %w", err)
	}
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("delete node: %w", err)
	}
	if err := f.cut.Inject(ctx, l); err != nil {
		return err
	}
	crashpoint.Reach("cut-then-delete-node/inject/cut")
	if err := cs.CoreV1().Nodes().Delete(ctx, f.p.Node, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete node: deleting Node %s: %w", f.p.Node, err)
	}
	return nil
}

// Heal removes the cut, then restarts the kubelet unless its Node object
// is already back.
func (f *cutDeleteNode) Heal(ctx context.Context, l lab.Lab) error {
	if err := f.cut.Heal(cutContext(ctx, f.cut), l); err != nil {
		return err
	}
	crashpoint.Reach("cut-then-delete-node/heal/uncut")
	cs, err := client(l, "")
	if err != nil {
		return fmt.Errorf("healing the deleted node: %w", err)
	}
	_, err = cs.CoreV1().Nodes().Get(ctx, f.p.Node, metav1.GetOptions{})
	switch {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("healing the deleted node: reading Node %s: %w", f.p.Node, err)
	}
	fault.Found(ctx, "Node %s deleted", f.p.Node)
	h, err := l.Host(f.p.Node)
	if err != nil {
		return fmt.Errorf("healing the deleted node: %w", err)
	}
	if err := h.StopService(ctx, lab.ServiceKubelet); err != nil {
		return fmt.Errorf("healing the deleted node: stopping the kubelet of %s: %w", f.p.Node, err)
	}
	crashpoint.Reach("cut-then-delete-node/heal/kubelet-stopped")
	if err := h.StartService(ctx, lab.ServiceKubelet); err != nil {
		return fmt.Errorf("healing the deleted node: starting the kubelet of %s: %w", f.p.Node, err)
	}
	err = lab.WaitFor(ctx, "Node "+f.p.Node+" registered again", 2*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Nodes().Get(ctx, f.p.Node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return err
	}
	fault.Removed(ctx, "Node %s's deletion: its kubelet restarted and registered it again", f.p.Node)
	return nil
}

func (f *cutDeleteNode) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	return f.cut.Probe(ctx, l)
}

func decodeCutDeleteNode(raw json.RawMessage) (fault.Fault, error) {
	var p deleteNodeParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if p.Node == "" {
		return nil, errors.New("no node named")
	}
	cut, err := p.Cut.decode()
	if err != nil {
		return nil, err
	}
	return &cutDeleteNode{p: p, cut: cut}, nil
}

func init() { fault.Register(KindCutThenDeleteNode, decodeCutDeleteNode) }
