package e2eprovider

import (
	"context"
	"fmt"
	"net"
	"strings"

	"sigs.k8s.io/e2e-framework/support"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local"
)

// Power states a host reports (local.Host.Power), which ListNode gives
// as each node's State.
const (
	PowerOn     = "on"
	PowerOff    = "off"
	PowerAbsent = "absent"
)

// ListNode lists every host of the lab, etcd-only hosts included (each
// can be stopped and started): Name is the host's (and, for a host that
// runs a kubelet, its Node's) name, Role its roles joined by commas, IP
// its management address, State its power: on or off.
func (p *Provider) ListNode(ctx context.Context, args ...string) ([]support.Node, error) {
	l, err := p.created("ListNode")
	if err != nil {
		return nil, err
	}
	if len(args) > 0 {
		return nil, fmt.Errorf("local lab provider: ListNode: takes no arguments, got %q", args)
	}
	var out []support.Node
	for _, h := range l.Hosts() {
		roles := make([]string, 0, len(h.Roles()))
		for _, r := range h.Roles() {
			roles = append(roles, string(r))
		}
		out = append(out, support.Node{
			Name:    h.Name(),
			Role:    strings.Join(roles, ","),
			Cluster: p.name,
			State:   h.(*local.Host).Power(),
			IP:      net.ParseIP(h.Address()),
		})
	}
	return out, nil
}

// StopNode powers the host off: its links are cut and every process it
// has, its containers included, is killed at once, as pulling a VM's
// power does (lab.Host.PowerOff, what faultline's power-off fault does).
// Stopping a host that is off does nothing. The node's Kubernetes object
// stays: what the cluster does about it is the test's to observe.
//
// Unlike faultline's fault, this writes nothing to the lab's heal ledger:
// a test killed while a host is off leaves it off (`faultline lab status`
// shows it; `faultline lab reset` or Destroy ends it).
func (p *Provider) StopNode(ctx context.Context, node *support.Node, args ...string) error {
	h, power, err := p.nodeHost("StopNode", node, args)
	if err != nil {
		return err
	}
	if power == PowerOff {
		return nil
	}
	if err := h.PowerOff(ctx); err != nil {
		return fmt.Errorf("local lab provider: StopNode %s: %w", h.Name(), err)
	}
	return nil
}

// StartNode powers a host that is off on (lab.Host.PowerOn): its network
// as at boot and its services started in boot order. It returns once the
// host's runtime serves; that the node turns Ready again is the cluster's
// doing, for the test to wait for. Starting a host that is on does
// nothing: powering it on again would reboot it.
func (p *Provider) StartNode(ctx context.Context, node *support.Node, args ...string) error {
	h, power, err := p.nodeHost("StartNode", node, args)
	if err != nil {
		return err
	}
	if power == PowerOn {
		return nil
	}
	if err := h.PowerOn(ctx); err != nil {
		return fmt.Errorf("local lab provider: StartNode %s: %w", h.Name(), err)
	}
	return nil
}

// AddNode is refused: the lab's hosts are fixed by its lab file.
func (p *Provider) AddNode(ctx context.Context, node *support.Node, args ...string) error {
	return lab.Unsupported(local.Kind, "AddNode", "the lab's hosts are those its lab file declares; add the host to the lab file and bring the lab up again")
}

// RemoveNode is refused: the lab's hosts are fixed by its lab file. To
// take a node away for a while, StopNode it.
func (p *Provider) RemoveNode(ctx context.Context, node *support.Node, args ...string) error {
	return lab.Unsupported(local.Kind, "RemoveNode", "the lab's hosts are those its lab file declares; StopNode powers one off")
}

// nodeHost checks a node operation's input and returns the host and its
// power; a host of a lab that is not up is refused.
func (p *Provider) nodeHost(op string, node *support.Node, args []string) (*local.Host, string, error) {
	if node == nil || node.Name == "" {
		return nil, "", fmt.Errorf("local lab provider: %s: no node name given", op)
	}
	if len(args) > 0 {
		return nil, "", fmt.Errorf("local lab provider: %s %s: takes no arguments, got %q", op, node.Name, args)
	}
	l, err := p.created(op)
	if err != nil {
		return nil, "", err
	}
	if node.Cluster != "" && node.Cluster != p.name {
		return nil, "", fmt.Errorf("local lab provider: %s %s: the node is of cluster %q, this provider is cluster %q", op, node.Name, node.Cluster, p.name)
	}
	lh, err := l.Host(node.Name)
	if err != nil {
		return nil, "", fmt.Errorf("local lab provider: %s: %w", op, err)
	}
	h := lh.(*local.Host)
	power := h.Power()
	if power != PowerOn && power != PowerOff {
		return nil, "", fmt.Errorf("local lab provider: %s %s: the host is %s (is lab %s up?)", op, node.Name, power, l.Config().Name)
	}
	return h, power, nil
}
