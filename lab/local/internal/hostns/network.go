// Package hostns builds and removes what makes a local lab's hosts hosts:
// each one's network namespace, its links to the lab's bridges, its
// routes and namespace sysctls, and its UTS namespace; and the bridges
// and iptables rules of the lab in the root namespace.
package hostns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/faultline/faultline/lab/local/internal/addressing"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/mounts"
)

// Network builds and removes the lab's links, bridges and namespaces.
type Network struct {
	Lab  string
	Plan *addressing.Plan
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// CheckFree refuses to build when an address of the lab's management
// network is already on a link of the machine: two bridges with one subnet
// would make routing from the machine ambiguous. It is asked only when the
// state dir holds no lab, so the lab's own bridge existing means a copy of
// the lab from another state dir is up (or one was not brought down), and
// building over it would replace the hosts' keys and certificates under
// its feet.
func (n *Network) CheckFree() error {
	links, err := listLinks()
	if err != nil {
		return fmt.Errorf("listing links: %w", err)
	}
	mine := layout.ManagementBridgeName(n.Lab)
	for _, l := range links {
		if l.Attrs().Name == mine {
			return fmt.Errorf("the bridge %s of lab %s already exists, though this state dir holds no lab: a copy of lab %s from another state dir is up, or one was not brought down; bring it down with its own lab file first", mine, n.Lab, n.Lab)
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP.To4())
			if !ok {
				continue
			}
			if n.Plan.Management.Contains(ip) || n.Plan.Pods.Contains(ip) {
				return fmt.Errorf("network %s of lab %s is already in use on link %s (%s): is another lab with this address plan up?", n.Plan.Management, n.Lab, l.Attrs().Name, a.IPNet)
			}
		}
	}
	return nil
}

// listLinks lists the root namespace's links, again when a concurrent
// change (other labs on the machine) interrupted the kernel's dump.
func listLinks() ([]netlink.Link, error) {
	var err error
	for try := 0; try < 10; try++ {
		var links []netlink.Link
		links, err = netlink.LinkList()
		if err == nil {
			return links, nil
		}
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, err
}

// ensureBridge creates a bridge with the lab's alias if it is not there.
func (n *Network) ensureBridge(name, what string, addr netip.Prefix) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			return fmt.Errorf("looking up bridge %s: %w", name, err)
		}
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("creating bridge %s: %w", name, err)
		}
		if l, err = netlink.LinkByName(name); err != nil {
			return fmt.Errorf("looking up bridge %s: %w", name, err)
		}
	}
	if err := netlink.LinkSetAlias(l, layout.LinkAlias(n.Lab, what)); err != nil {
		return fmt.Errorf("naming bridge %s: %w", name, err)
	}
	if addr.IsValid() {
		if err := netlink.AddrReplace(l, &netlink.Addr{IPNet: prefixToIPNet(addr)}); err != nil {
			return fmt.Errorf("addressing bridge %s: %w", name, err)
		}
	}
	if err := netlink.LinkSetUp(l); err != nil {
		return fmt.Errorf("bringing up bridge %s: %w", name, err)
	}
	return nil
}

// CreateBridges makes the management bridge (the machine holds an address
// on it) and the pod transport bridge (no address: the machine does not
// route pod traffic), and lets bridged lab traffic through the root
// namespace's FORWARD chain whatever its policy.
func (n *Network) CreateBridges(ctx context.Context) error {
	if err := n.ensureBridge(layout.ManagementBridgeName(n.Lab), "management", n.Plan.RootAddress); err != nil {
		return err
	}
	if len(n.Plan.Nodes) > 0 {
		if err := n.ensureBridge(layout.PodBridgeName(n.Lab), "pods", netip.Prefix{}); err != nil {
			return err
		}
	}
	for _, br := range []string{layout.ManagementBridgeName(n.Lab), layout.PodBridgeName(n.Lab)} {
		rule := []string{"FORWARD", "-i", br, "-o", br, "-m", "comment", "--comment", layout.IptablesComment(n.Lab), "-j", "ACCEPT"}
		if exec.CommandContext(ctx, "iptables", append([]string{"-w", "-C"}, rule...)...).Run() == nil {
			continue
		}
		if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w", "-I"}, rule...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("allowing bridged traffic on %s: %v: %s", br, err, out)
		}
	}
	return nil
}

// withNetns runs f on a thread that has entered the named namespace; the
// thread is thrown away afterwards if it cannot be returned.
func withNetns(name string, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("getting current network namespace: %w", err)
	}
	defer orig.Close()
	target, err := netns.GetFromPath(layout.NetnsPath(name))
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", name, err)
	}
	defer target.Close()
	if err := netns.Set(target); err != nil {
		return fmt.Errorf("entering network namespace %s: %w", name, err)
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: Go then ends it rather than reuse it
		// in the wrong namespace.
		runtime.LockOSThread()
		return fmt.Errorf("returning from network namespace %s: %w", name, err)
	}
	return ferr
}

// isNamespace says whether path is a namespace bind mount (nsfs).
func isNamespace(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}

// ensureNetnsDir makes layout.NetnsDir a shared mount point of its own, as
// iproute2 does before its first `ip netns add`. Done first, iproute2 run
// later by anyone finds it so and does not mount over it, which would hide
// the lab's namespace mounts beneath a fresh directory.
func ensureNetnsDir() error {
	if err := os.MkdirAll(layout.NetnsDir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("", layout.NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, ""); err == nil {
		return nil
	}
	if err := unix.Mount(layout.NetnsDir, layout.NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mounting %s: %w", layout.NetnsDir, err)
	}
	if err := unix.Mount("", layout.NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("sharing %s: %w", layout.NetnsDir, err)
	}
	return nil
}

// createNamespace makes a named namespace, leaving the caller's thread in
// its own namespace.
func createNamespace(name string) error {
	if err := ensureNetnsDir(); err != nil {
		return err
	}
	if isNamespace(layout.NetnsPath(name)) {
		return nil
	}
	// A plain file left by an interrupted teardown is not a namespace.
	if err := os.Remove(layout.NetnsPath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("creating network namespace %s: %w", name, err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("getting current network namespace: %w", err)
	}
	defer orig.Close()
	h, err := netns.NewNamed(name)
	if err != nil {
		_ = netns.Set(orig)
		return fmt.Errorf("creating network namespace %s: %w", name, err)
	}
	h.Close()
	if err := netns.Set(orig); err != nil {
		runtime.LockOSThread()
		return fmt.Errorf("returning from network namespace %s: %w", name, err)
	}
	return nil
}

// Host is what one host gets: its namespace, a management link and,
// for kubelet hosts, a pod transport link.
type Host struct {
	Name    string
	Address netip.Prefix     // with the management network's length
	Node    *addressing.Node // nil for hosts that run no kubelet
	// PodsReach, for a host off the pod network that pods connect to (the
	// storage host), maps each node to its management address: the host
	// answers a pod through the pod's node, as a server outside a cluster
	// with routes to its pod subnets does.
	PodsReach map[string]netip.Addr
}

// CreateHost builds a host's namespace and links. It is idempotent so that
// `up` can be run again over a half-built lab.
func (n *Network) CreateHost(h Host) error {
	ns := layout.NetnsName(n.Lab, h.Name)
	if err := createNamespace(ns); err != nil {
		return err
	}
	nsh, err := netns.GetFromPath(layout.NetnsPath(ns))
	if err != nil {
		return fmt.Errorf("opening network namespace %s: %w", ns, err)
	}
	defer nsh.Close()
	inside, err := netlink.NewHandleAt(nsh)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", ns, err)
	}
	defer inside.Close()

	lo, err := inside.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("%s: loopback: %w", ns, err)
	}
	if err := inside.LinkSetUp(lo); err != nil {
		return fmt.Errorf("%s: loopback up: %w", ns, err)
	}
	if err := n.addVeth(nsh, inside, layout.ManagementVethName(n.Lab, h.Name), layout.HostManagementIf, layout.ManagementBridgeName(n.Lab), "host "+h.Name+" management", h.Address); err != nil {
		return err
	}
	if h.Node != nil {
		if err := n.addVeth(nsh, inside, layout.PodVethName(n.Lab, h.Name), layout.HostPodIf, layout.PodBridgeName(n.Lab), "host "+h.Name+" pods", h.Node.Transport); err != nil {
			return err
		}
		if err := n.addPodRoutes(inside, h.Name); err != nil {
			return err
		}
		if err := n.addServiceRoute(inside, h.Name); err != nil {
			return err
		}
	}
	if err := n.addRoutesToPods(inside, h); err != nil {
		return err
	}
	return n.setHostSysctls(ns, h.Node != nil)
}

func (n *Network) addVeth(nsh netns.NsHandle, inside *netlink.Handle, rootName, nsName, bridge, what string, addr netip.Prefix) error {
	if old, err := netlink.LinkByName(rootName); err == nil {
		// A root end left from an earlier namespace has no peer in
		// this one: start over.
		if _, perr := inside.LinkByName(nsName); perr != nil {
			if err := netlink.LinkDel(old); err != nil {
				return fmt.Errorf("deleting stale link %s: %w", rootName, err)
			}
		}
	}
	if _, err := netlink.LinkByName(rootName); err != nil {
		// Fixed MAC addresses: a host whose namespace is made anew
		// (power on, reset) keeps them, so no neighbour on the bridge
		// holds a stale entry for its address.
		v := &netlink.Veth{
			LinkAttrs:        netlink.LinkAttrs{Name: rootName, HardwareAddr: stableMAC(n.Lab, rootName, "root")},
			PeerName:         nsName,
			PeerHardwareAddr: stableMAC(n.Lab, rootName, "host"),
			PeerNamespace:    netlink.NsFd(int(nsh)),
		}
		if err := netlink.LinkAdd(v); err != nil {
			return fmt.Errorf("creating link %s for %s: %w", rootName, what, err)
		}
	}
	root, err := netlink.LinkByName(rootName)
	if err != nil {
		return fmt.Errorf("looking up link %s: %w", rootName, err)
	}
	br, err := netlink.LinkByName(bridge)
	if err != nil {
		return fmt.Errorf("looking up bridge %s: %w", bridge, err)
	}
	if err := netlink.LinkSetAlias(root, layout.LinkAlias(n.Lab, what)); err != nil {
		return fmt.Errorf("naming link %s: %w", rootName, err)
	}
	if err := netlink.LinkSetMaster(root, br); err != nil {
		return fmt.Errorf("attaching %s to %s: %w", rootName, bridge, err)
	}
	if err := netlink.LinkSetUp(root); err != nil {
		return fmt.Errorf("bringing up %s: %w", rootName, err)
	}
	peer, err := inside.LinkByName(nsName)
	if err != nil {
		return fmt.Errorf("looking up %s of %s: %w", nsName, what, err)
	}
	if err := inside.AddrReplace(peer, &netlink.Addr{IPNet: prefixToIPNet(addr)}); err != nil {
		return fmt.Errorf("addressing %s of %s: %w", nsName, what, err)
	}
	if err := inside.LinkSetUp(peer); err != nil {
		return fmt.Errorf("bringing up %s of %s: %w", nsName, what, err)
	}
	return nil
}

// addPodRoutes sends each other node's pod subnet to that node's transport
// address: flat routing, as the CNI bridge plugin leaves it to the network.
func (n *Network) addPodRoutes(inside *netlink.Handle, host string) error {
	link, err := inside.LinkByName(layout.HostPodIf)
	if err != nil {
		return fmt.Errorf("host %s: %w", host, err)
	}
	for _, other := range n.Plan.NodeOrder {
		if other == host {
			continue
		}
		o := n.Plan.Nodes[other]
		r := &netlink.Route{
			LinkIndex: link.Attrs().Index,
			Dst:       prefixToIPNet(o.PodSubnet),
			Gw:        o.Transport.Addr().AsSlice(),
		}
		if err := inside.RouteReplace(r); err != nil {
			return fmt.Errorf("host %s: route to %s's pods %s: %w", host, other, o.PodSubnet, err)
		}
	}
	return nil
}

// addServiceRoute gives a node a route to the cluster's service range, as
// a real node's default route does. A process in the node's own network
// namespace that dials a service address (a host-network pod reading the
// in-cluster configuration, as kube-router does when the lab runs it as a
// DaemonSet pod) needs one for the kernel to choose an interface before
// kube-proxy's OUTPUT rules rewrite the address to a pod's; without it
// the dial fails at once with "network is unreachable". Traffic to a
// service address no rule rewrites goes out pod0 and is never answered,
// as on a node whose default route leads nowhere for it.
func (n *Network) addServiceRoute(inside *netlink.Handle, host string) error {
	link, err := inside.LinkByName(layout.HostPodIf)
	if err != nil {
		return fmt.Errorf("host %s: %w", host, err)
	}
	r := serviceRoute(n.Plan, link.Attrs().Index)
	if err := inside.RouteReplace(r); err != nil {
		return fmt.Errorf("host %s: route to the service range %s: %w", host, n.Plan.Services, err)
	}
	return nil
}

// serviceRoute is the route addServiceRoute adds: the service range on
// the pod interface, on the link (no gateway).
func serviceRoute(p *addressing.Plan, podLink int) *netlink.Route {
	return &netlink.Route{LinkIndex: podLink, Dst: prefixToIPNet(p.Services), Scope: netlink.SCOPE_LINK}
}

// addRoutesToPods routes each node's pod subnet through the node's
// management address, for a host with PodsReach.
func (n *Network) addRoutesToPods(inside *netlink.Handle, h Host) error {
	if len(h.PodsReach) == 0 {
		return nil
	}
	link, err := inside.LinkByName(layout.HostManagementIf)
	if err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	for _, node := range n.Plan.NodeOrder {
		gw, ok := h.PodsReach[node]
		if !ok {
			return fmt.Errorf("host %s: no management address for node %s", h.Name, node)
		}
		sub := n.Plan.Nodes[node].PodSubnet
		r := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: prefixToIPNet(sub), Gw: gw.AsSlice()}
		if err := inside.RouteReplace(r); err != nil {
			return fmt.Errorf("host %s: route to %s's pods %s: %w", h.Name, node, sub, err)
		}
	}
	return nil
}

// setHostSysctls sets the namespace's own sysctls: nodes forward between
// their pods and the transport network, see bridged pod traffic in
// iptables (kube-proxy needs that) and do not drop the asymmetric replies
// that flat routing produces.
func (n *Network) setHostSysctls(ns string, node bool) error {
	vals := map[string]string{
		"net/ipv4/conf/all/rp_filter":     "0",
		"net/ipv4/conf/default/rp_filter": "0",
	}
	if node {
		vals["net/ipv4/ip_forward"] = "1"
		vals["net/bridge/bridge-nf-call-iptables"] = "1"
		vals["net/ipv4/conf/all/route_localnet"] = "1"
	}
	return withNetns(ns, func() error {
		for k, v := range vals {
			p := filepath.Join("/proc/sys", k)
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) && strings.HasPrefix(k, "net/bridge/") {
				// Without per-namespace br_netfilter the machine's
				// setting applies; nothing to set here.
				continue
			}
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
				return fmt.Errorf("sysctl %s=%s in %s: %w", k, v, ns, err)
			}
		}
		return nil
	})
}

// SetHostLinks takes a host's links up or down from the root side, like
// pulling its cables: routes and addresses inside the host stay as they
// were, so bringing them up again restores the host's network as it was.
func (n *Network) SetHostLinks(host string, up bool, which ...string) error {
	for _, name := range which {
		l, err := netlink.LinkByName(name)
		if err != nil {
			var nf netlink.LinkNotFoundError
			if errors.As(err, &nf) {
				continue
			}
			return fmt.Errorf("host %s: looking up link %s: %w", host, name, err)
		}
		if up {
			err = netlink.LinkSetUp(l)
		} else {
			err = netlink.LinkSetDown(l)
		}
		if err != nil {
			return fmt.Errorf("host %s: setting link %s up=%v: %w", host, name, up, err)
		}
	}
	return nil
}

// HostLinks are the root-namespace ends of a host's links.
func (n *Network) HostLinks(host string) []string {
	out := []string{layout.ManagementVethName(n.Lab, host)}
	if _, ok := n.Plan.Nodes[host]; ok {
		out = append(out, layout.PodVethName(n.Lab, host))
	}
	return out
}

// LinkUp reports whether the root-side end of a link is administratively up.
func LinkUp(name string) (bool, error) {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return false, err
	}
	return l.Attrs().Flags&net.FlagUp != 0, nil
}

// stableMAC is a locally administered unicast MAC derived from names.
func stableMAC(parts ...string) net.HardwareAddr {
	h := layout.ShortHash(parts...) + layout.ShortHash(append(parts, "mac")...)
	b := make(net.HardwareAddr, 6)
	for i := range b {
		fmt.Sscanf(h[2*i:2*i+2], "%02x", &b[i])
	}
	b[0] = (b[0] | 0x02) &^ 0x01
	return b
}

// RemoveHost deletes a host's namespace and links. Its processes must be
// gone: a namespace lives on while any process is in it.
func (n *Network) RemoveHost(host string) error {
	ns := layout.NetnsName(n.Lab, host)
	if err := mounts.UnmountAll(layout.NetnsPath(ns)); err != nil {
		return err
	}
	if err := os.Remove(layout.NetnsPath(ns)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("deleting network namespace %s: %w", ns, err)
	}
	for _, name := range n.HostLinks(host) {
		l, err := netlink.LinkByName(name)
		if err != nil {
			continue
		}
		if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("deleting link %s: %w", name, err)
		}
	}
	return nil
}
