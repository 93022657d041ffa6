// Package addressing turns a local lab's network section into the
// addresses of its bridges, hosts and pods.
package addressing

import (
	"fmt"
	"net/netip"

	"github.com/faultline/faultline/lab"
)

// Plan is a lab's network section as addresses: the root
// namespace's address on the management bridge, and for each kubelet host
// its pod transport address and pod subnet.
//
// The pod CIDR's first /24 is the transport network (node k has .k on it);
// node k's pods get the k-th /24 after it. Keeping the transport inside the
// pod CIDR means the lab uses no address it was not given.
type Plan struct {
	Management  netip.Prefix
	RootAddress netip.Prefix // the root namespace's address on the management bridge
	Pods        netip.Prefix
	Transport   netip.Prefix
	Services    netip.Prefix
	Nodes       map[string]Node // by host name, kubelet hosts only
	NodeOrder   []string
}

// Node is the addresses of one kubelet host.
type Node struct {
	Index     int
	Transport netip.Prefix // the node's address on the pod transport network, with its length
	PodSubnet netip.Prefix
}

// RunsKubelet says whether a host is a Kubernetes node: workers and
// control-plane hosts are (the latter tainted), etcd-only hosts are not.
func RunsKubelet(h lab.HostConfig) bool {
	for _, r := range h.Roles {
		if r == lab.RoleWorker || r == lab.RoleControlPlane {
			return true
		}
	}
	return false
}

// New plans a lab's addresses, or says why its network section cannot
// hold the lab.
func New(c *lab.Config) (*Plan, error) {
	mgmt, err := netip.ParsePrefix(c.Network.Management)
	if err != nil {
		return nil, fmt.Errorf("network.management: %w", err)
	}
	mgmt = mgmt.Masked()
	pods, err := netip.ParsePrefix(c.Network.Pods)
	if err != nil {
		return nil, fmt.Errorf("network.pods: %w", err)
	}
	pods = pods.Masked()
	svc, err := netip.ParsePrefix(c.Network.Services)
	if err != nil {
		return nil, fmt.Errorf("network.services: %w", err)
	}
	if !mgmt.Addr().Is4() || !pods.Addr().Is4() {
		return nil, fmt.Errorf("the local lab needs IPv4 networks")
	}
	if mgmt.Bits() > 29 {
		return nil, fmt.Errorf("network.management %s is too small", mgmt)
	}
	if pods.Bits() > 22 {
		return nil, fmt.Errorf("network.pods %s: the local lab needs at least a /22 (a /24 for transport, one per node)", pods)
	}
	if mgmt.Overlaps(pods) || mgmt.Overlaps(svc) || pods.Overlaps(svc) {
		return nil, fmt.Errorf("network.management %s, network.pods %s and network.services %s must not overlap", mgmt, pods, svc)
	}

	used := map[netip.Addr]bool{}
	for _, h := range c.Hosts {
		a, err := netip.ParseAddr(h.Address)
		if err != nil {
			return nil, fmt.Errorf("host %s: address: %w", h.Name, err)
		}
		used[a] = true
	}
	if c.Network.VirtualIP != "" {
		a, err := netip.ParseAddr(c.Network.VirtualIP)
		if err != nil {
			return nil, fmt.Errorf("network.virtualIP: %w", err)
		}
		used[a] = true
	}
	// The root namespace takes the first free address of the management
	// network: tests and the CLI reach hosts from there.
	var root netip.Addr
	for a := mgmt.Addr().Next(); mgmt.Contains(a); a = a.Next() {
		if !used[a] {
			root = a
			break
		}
	}
	if !root.IsValid() {
		return nil, fmt.Errorf("network.management %s has no free address for the machine itself", mgmt)
	}

	p := &Plan{
		Management:  mgmt,
		RootAddress: netip.PrefixFrom(root, mgmt.Bits()),
		Pods:        pods,
		Transport:   netip.PrefixFrom(pods.Addr(), 24),
		Services:    svc.Masked(),
		Nodes:       map[string]Node{},
	}
	maxNodes := 1<<(24-pods.Bits()) - 1
	if maxNodes > 250 {
		maxNodes = 250
	}
	k := 0
	for _, h := range c.Hosts {
		if !RunsKubelet(h) {
			continue
		}
		k++
		if k > maxNodes {
			return nil, fmt.Errorf("network.pods %s has room for %d nodes, the lab has more", pods, maxNodes)
		}
		base := pods.Addr().As4()
		t := base
		t[3] = byte(k)
		sub := base
		// Adding k to the third octet carries into the second for CIDRs
		// wider than /16; the size check above keeps k small enough.
		n := (uint32(sub[1])<<8 | uint32(sub[2])) + uint32(k)
		sub[1], sub[2], sub[3] = byte(n>>8), byte(n), 0
		p.Nodes[h.Name] = Node{
			Index:     k,
			Transport: netip.PrefixFrom(netip.AddrFrom4(t), 24),
			PodSubnet: netip.PrefixFrom(netip.AddrFrom4(sub), 24),
		}
		p.NodeOrder = append(p.NodeOrder, h.Name)
	}
	return p, nil
}

// ServiceIP returns the n-th address of the service CIDR (the kubernetes
// service takes the first, cluster DNS would take the tenth).
func (p *Plan) ServiceIP(n int) netip.Addr {
	a := p.Services.Addr()
	for i := 0; i < n; i++ {
		a = a.Next()
	}
	return a
}
