package faults

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/lab"
)

// Pinning an agent run as a pod. Its configuration is the cluster's, the
// same for every node: kubeadm's kube-proxy reads the control-plane
// endpoint from its ConfigMap, an agent with the in-cluster configuration
// dials the kubernetes Service, and a DaemonSet's pod template, hence its
// environment, is every node's. What is the node's own is its network
// namespace, which a pod with the host's network shares: the fault puts
// in the node's nat table, first in OUTPUT, a chain FAULTLINE-<tag> that
// DNATs new connections to the lab's API address and to the kubernetes
// Service to the one server, then closes the agents' own connections
// (found through their pods' cgroups) so they dial again, through it.
//
// What that does not do as a kubeconfig would: the rules are the node's,
// so any new connection from the node to those addresses while they hold
// is pinned too (the kubelet keeps the connections it has and makes new
// ones only when one breaks); heal closes, on the server, every
// connection from the node, so none stays pinned. The server's serving
// certificate must be valid for the addresses dialled (kubeadm's holds the
// control-plane endpoint and the kubernetes Service's address).

// pinEndpoints are the addresses (ip-or-name:port) an agent in a pod
// dials for the API: the lab's usual address, and the kubernetes
// Service's where it has one.
func pinEndpoints(ctx context.Context, l lab.Lab) ([]string, error) {
	path, err := l.Kubeconfig("")
	if err != nil {
		return nil, fmt.Errorf("getting the lab's kubeconfig: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("the lab's kubeconfig names server %q, not a URL", cfg.Host)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	out := []string{net.JoinHostPort(u.Hostname(), port)}
	svc, err := kubernetesServiceAddress(ctx, l)
	if err != nil {
		return nil, err
	}
	if svc != "" {
		out = append(out, svc)
	}
	return out, nil
}

// pinNatScript installs the chain DNATing each endpoint to the server,
// jumped to first from OUTPUT, refusing a chain of the tag that exists.
func pinNatScript(chain string, endpoints []string, server string) string {
	cmds := []string{
		fmt.Sprintf("! iptables -w -t nat -n -L %[1]s >/dev/null 2>&1 || { echo 'the chain %[1]s exists already' >&2; exit 1; }", chain),
		"iptables -w -t nat -N " + chain,
	}
	for _, e := range endpoints {
		host, port, _ := net.SplitHostPort(e)
		cmds = append(cmds, fmt.Sprintf("iptables -w -t nat -A %s -p tcp -d %s --dport %s -j DNAT --to-destination %s", chain, shellQuote(host), port, server))
	}
	cmds = append(cmds, "iptables -w -t nat -I OUTPUT 1 -j "+chain)
	return script(cmds)
}

// ssFilter is an ss filter selecting connections to any of endpoints.
func ssFilter(endpoints []string) string {
	var parts []string
	for _, e := range endpoints {
		parts = append(parts, "dst "+e)
	}
	return "( " + strings.Join(parts, " or ") + " )"
}

// ssPidPattern is a process of ss -p's users field.
var ssPidPattern = regexp.MustCompile(`pid=(\d+),`)

// agentLocalEndpoints reads `ss -Htnp` lines and returns the local
// addresses and ports of the connections a process of pids holds. The
// address matters as much as the port: an agent that dials the kubernetes
// Service from the host's network leaves from the address the node routes
// the service range by (its pod network's, on the local lab), not from
// its own address.
func agentLocalEndpoints(ssOut string, pids []int) []netip.AddrPort {
	var out []netip.AddrPort
	for _, line := range strings.Split(ssOut, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mine := false
		for _, m := range ssPidPattern.FindAllStringSubmatch(line, -1) {
			if pid, err := strconv.Atoi(m[1]); err == nil && slices.Contains(pids, pid) {
				mine = true
			}
		}
		if !mine {
			continue
		}
		// Recv-Q Send-Q Local:Port Peer:Port users:(...)
		if ap, ok := ssEndpoint(f[2]); ok && !slices.Contains(out, ap) {
			out = append(out, ap)
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return out
}

// ssEndpoint reads an address:port column of ss, an IPv4 address mapped
// into IPv6 read as the IPv4 address.
func ssEndpoint(col string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(col)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// portsOf are the ports of endpoints, each once, in order.
func portsOf(endpoints []netip.AddrPort) []int {
	var out []int
	for _, e := range endpoints {
		if p := int(e.Port()); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	sort.Ints(out)
	return out
}

// hostAddresses reads `ip -o addr show` and returns the host's addresses
// other than loopback and link-local ones: every address a connection from
// the host can leave from.
func hostAddresses(ipOut string) []string {
	var out []string
	for _, line := range strings.Split(ipOut, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || (f[2] != "inet" && f[2] != "inet6") {
			continue
		}
		pfx, err := netip.ParsePrefix(f[3])
		if err != nil {
			continue
		}
		a := pfx.Addr()
		if a.IsLoopback() || a.IsLinkLocalUnicast() || slices.Contains(out, a.String()) {
			continue
		}
		out = append(out, a.String())
	}
	return out
}

// parsePids reads the pids cgroup.procs files list, one a line.
func parsePids(out string) []int {
	var pids []int
	for _, f := range strings.Fields(out) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// agentConnections are the local addresses and ports of the connections
// the agent's pod holds to the endpoints, on its node.
func agentConnections(ctx context.Context, h lab.Host, uid string, endpoints []string) ([]netip.AddrPort, error) {
	cg, err := findPodCgroup(ctx, h, uid)
	if err != nil {
		return nil, err
	}
	procs, err := run(ctx, h, "find "+shellQuote(cg.Dir)+" -name cgroup.procs -exec cat {} +")
	if err != nil {
		return nil, err
	}
	pids := parsePids(procs)
	if len(pids) == 0 {
		return nil, fmt.Errorf("the pod's cgroup %s holds no process", cg.Dir)
	}
	out, err := run(ctx, h, "ss -Htnp state established "+shellQuote(ssFilter(endpoints)))
	if err != nil {
		return nil, err
	}
	return agentLocalEndpoints(out, pids), nil
}

// closeLocalPorts closes the node's established connections from the
// local ports to the endpoints (ss -K), checked closed.
func closeLocalPorts(ctx context.Context, h lab.Host, ports []int, endpoints []string) error {
	if len(ports) == 0 {
		return nil
	}
	var sports []string
	for _, p := range ports {
		sports = append(sports, fmt.Sprintf("sport = :%d", p))
	}
	_, err := run(ctx, h, closeConnectionsScript("( "+strings.Join(sports, " or ")+" ) and "+ssFilter(endpoints)))
	return err
}

func (f *pinAgents) injectPods(ctx context.Context, l lab.Lab, t pinTargets) error {
	endpoints, err := pinEndpoints(ctx, l)
	if err != nil {
		return err
	}
	var pods []agentPod
	for _, r := range t.pods {
		_, p, err := runningAgentPod(ctx, l, r)
		if err != nil {
			return err
		}
		pods = append(pods, p)
	}
	server := net.JoinHostPort(t.server.Address(), strconv.Itoa(apiServerPort(l)))
	if _, err := run(ctx, t.node, pinNatScript(chainName(f.p.Tag), endpoints, server)); err != nil {
		return fmt.Errorf("the node's rules: %w", err)
	}
	crashpoint.Reach("pin-agents/inject/pod-chain")
	// The connections the agents hold were made before the rules: closed,
	// they are made again, through them.
	for i, r := range t.pods {
		conns, err := agentConnections(ctx, t.node, pods[i].UID, endpoints)
		if err != nil {
			return fmt.Errorf("%s's connections: %w", r.Agent, err)
		}
		if err := closeLocalPorts(ctx, t.node, portsOf(conns), endpoints); err != nil {
			return fmt.Errorf("closing %s's connections: %w", r.Agent, err)
		}
	}
	return nil
}

// healPods removes the node's chain, then closes on the server every
// connection from any of the node's addresses to its API port, so nothing
// made through the chain stays pinned; the agents dial their usual
// addresses again. Any address: an agent that dialled the kubernetes
// Service left from the address the node routes the service range by,
// which need not be the node's own. It
// closes them whether or not it found the chain: a heal cut short after
// removing the chain left connections made through it (their DNAT holds
// in conntrack), and only the next heal's close ends them.
func (f *pinAgents) healPods(ctx context.Context, t pinTargets) error {
	if err := checkTag(f.p.Tag); err != nil {
		return err
	}
	if _, err := healRun(ctx, t.node, removeNatChainScript(chainName(f.p.Tag))); err != nil {
		return err
	}
	crashpoint.Reach("pin-agents/heal/pod-chain-removed")
	ipOut, err := run(ctx, t.node, "ip -o addr show")
	if err != nil {
		return fmt.Errorf("listing %s's addresses: %w", t.node.Name(), err)
	}
	addrs := hostAddresses(ipOut)
	if !slices.Contains(addrs, t.node.Address()) {
		addrs = append([]string{t.node.Address()}, addrs...)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(t.url, "https://"))
	if _, err := run(ctx, t.server, closeConnectionsScript(fmt.Sprintf("( sport = :%s ) and %s", port, ssFilter(addrs)))); err != nil {
		return fmt.Errorf("closing %s's connections to %s: %w", t.node.Name(), t.server.Name(), err)
	}
	return nil
}

// probePods sees the node's chain in OUTPUT, and for every agent a
// connection it holds to the endpoints that the server holds (the local
// address and port seen on both ends: the chain rewrites only the
// destination).
func (f *pinAgents) probePods(ctx context.Context, l lab.Lab, t pinTargets) (bool, string, error) {
	endpoints, err := pinEndpoints(ctx, l)
	if err != nil {
		return false, "", err
	}
	chain := chainName(f.p.Tag)
	res, err := t.node.Run(ctx, "iptables -w -t nat -S OUTPUT 1; iptables -w -t nat -S "+chain)
	if err != nil {
		return false, "", err
	}
	server := net.JoinHostPort(t.server.Address(), strconv.Itoa(apiServerPort(l)))
	rules := strings.Contains(res.Stdout, "-A OUTPUT -j "+chain) && strings.Count(res.Stdout, "--to-destination "+server) == len(endpoints)
	_, port, _ := net.SplitHostPort(server)
	served, err := run(ctx, t.server, fmt.Sprintf("ss -Htn state established '( sport = :%s )'", port))
	if err != nil {
		return false, "", err
	}
	peers := servedPeers(served)
	observed := rules
	details := []string{fmt.Sprintf("chain %s DNATs %v to %s, first in OUTPUT: %v", chain, endpoints, server, rules)}
	cs, err := kubeClient(l)
	if err != nil {
		return false, "", err
	}
	for _, r := range t.pods {
		p, err := findAgentPod(ctx, cs, r)
		if err != nil {
			return false, "", err
		}
		conns, err := agentConnections(ctx, t.node, p.UID, endpoints)
		if err != nil {
			return false, "", fmt.Errorf("%s's connections: %w", r.Agent, err)
		}
		connected := false
		for _, c := range conns {
			connected = connected || slices.Contains(peers, c)
		}
		observed = observed && connected
		details = append(details, fmt.Sprintf("%s (pod %s): connections from %v, one of them at %s: %v", r.Agent, p.Name, conns, t.server.Name(), connected))
	}
	return observed, strings.Join(details, "; "), nil
}

// servedPeers reads `ss -Htn` lines of a server and returns the peer
// address and port of each connection it holds.
func servedPeers(ssOut string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, line := range strings.Split(ssOut, "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			if ap, ok := ssEndpoint(f[3]); ok {
				out = append(out, ap)
			}
		}
	}
	return out
}
