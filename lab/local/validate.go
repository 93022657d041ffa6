package local

import (
	"fmt"
	"net/netip"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/timers"
)

// Kind is the lab file's kind this backend serves.
const Kind = "local"

// defaults sets the timer profile a local lab runs its components with
// when the file names none (Kubernetes' own defaults), and names the
// policy agent its workers run.
func defaults(c *lab.Config) {
	if c.Kubernetes.TimerProfile == "" {
		c.Kubernetes.TimerProfile = timers.KubernetesDefaults
	}
	if c.Kubernetes.PolicyAgent == "" {
		c.Kubernetes.PolicyAgent = lab.PolicyAgentKubeRouter
	}
}

// profileTimers are the timers of the profile the local lab runs its
// components with.
func profileTimers(c *lab.Config) (lab.Timers, error) {
	p, err := timers.Get(c.Kubernetes.TimerProfile)
	if err != nil {
		return lab.Timers{}, fmt.Errorf("lab %s: %w", c.Name, err)
	}
	return p.Timers(), nil
}

// Timers are those of the profile the lab runs with: the running lab's,
// where one is recorded, else the file's.
func (l *Lab) Timers() (lab.Timers, error) { return profileTimers(l.cfg) }

// validate is what a local lab file needs beyond what every lab file does:
// the lab builds the cluster, so it needs the whole address plan, an etcd
// and a virtual address before several API servers, and it names network
// interfaces after its hosts.
func validate(c *lab.Config) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Kubernetes.RuntimeEndpoint != "" {
		bad("kubernetes.runtimeEndpoint", "is not for a local lab: each node runs its own containerd, at a socket of the lab's choosing")
	}
	if len(c.Kubernetes.AgentKubeconfigs) > 0 {
		bad("kubernetes.agentKubeconfigs", "is not for a local lab: it writes its agents' kubeconfigs itself")
	}
	if c.Etcd != nil {
		bad("etcd", "is not for a local lab: it runs its own etcd and gives its client itself")
	}
	if c.Kubelet != nil {
		bad("kubelet", "is not for a local lab: it gives its kubelets' client itself")
	}
	if c.Storage != nil {
		bad("storage", "is not for a local lab: it builds its own storage on the host with the storage role")
	}
	if a := c.Kubernetes.PolicyAgent; a != "" && a != lab.PolicyAgentKubeRouter {
		bad("kubernetes.policyAgent", "%q is not for a local lab: its workers run kube-router", a)
	}
	mgmt, mgmtErr := netip.ParsePrefix(c.Network.Management)
	mgmt = mgmt.Masked()
	for _, f := range []struct{ name, val string }{{"network.pods", c.Network.Pods}, {"network.services", c.Network.Services}} {
		if f.val == "" {
			bad(f.name, "is required for a local lab")
		}
	}
	if a, err := netip.ParseAddr(c.Network.VirtualIP); err == nil && mgmtErr == nil && !mgmt.Contains(a) {
		bad("network.virtualIP", "%s is outside network.management %s", a, mgmt)
	}
	roles := map[lab.Role]int{}
	for i, h := range c.Hosts {
		f := fmt.Sprintf("hosts[%d]", i)
		if h.KubeletRootDir != "" {
			bad(f+".kubeletRootDir", "is not for a local lab: it chooses each node's kubelet root")
		}
		if len(h.Name) > 11 {
			bad(f+".name", "%q is longer than 11 characters (local hosts name network interfaces)", h.Name)
		}
		for _, r := range h.Roles {
			roles[r]++
		}
		if h.Address == "" {
			continue
		}
		if a, err := netip.ParseAddr(h.Address); err != nil {
			bad(f+".address", "%q is not an IP address", h.Address)
		} else if mgmtErr == nil && !mgmt.Contains(a) {
			bad(f+".address", "%s is outside network.management %s", a, mgmt)
		}
	}
	if roles[lab.RoleEtcd] == 0 && len(c.Hosts) > 0 {
		bad("hosts", "no host has the etcd role")
	}
	if roles[lab.RoleControlPlane] > 1 && c.Network.VirtualIP == "" {
		bad("network.virtualIP", "is required when there is more than one control-plane host")
	}
	return errs
}
