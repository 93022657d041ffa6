// Package layout names everything a local lab makes on the machine: the
// kernel objects of its hosts (namespaces, cgroups, links, iptables
// rules) and the files of its state dir.
//
// Every kernel name derives from the lab and host names alone, so that
// `down` after a crash can find what an earlier process made without
// trusting any state it may not have written.
package layout

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
)

// InterfaceAliasPrefix marks every link the lab creates in the root
// namespace; the alias names the lab, so a scan never touches another lab's
// or anyone else's links.
const InterfaceAliasPrefix = "faultline:"

// ShortHash is 8 hex digits: interface names are at most 15 bytes, so the lab
// and host names cannot be spelled out in them.
func ShortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// NetnsDir is where named network namespaces live (the iproute2
// convention, so `ip netns` and nsenter see them too).
const NetnsDir = "/run/netns"

// NetnsPath is the file of a named network namespace.
func NetnsPath(name string) string { return filepath.Join(NetnsDir, name) }

// NetnsName is the host's network namespace under /run/netns.
func NetnsName(lab, host string) string { return "fl-" + lab + "-" + host }

// CgroupName is the per-node cgroup root kubelet puts its pods under, in
// every cgroup v1 hierarchy.
func CgroupName(lab, host string) string { return "fl-" + lab + "-" + host }

// ManagementBridgeName is the lab's management bridge in the root namespace.
func ManagementBridgeName(lab string) string { return "flm" + ShortHash(lab) }

// PodBridgeName is the lab's pod transport bridge in the root namespace.
func PodBridgeName(lab string) string { return "flp" + ShortHash(lab) }

// ManagementVethName is the root-namespace end of a host's management link.
func ManagementVethName(lab, host string) string { return "fm" + ShortHash(lab, host) }

// PodVethName is the root-namespace end of a host's pod transport link.
func PodVethName(lab, host string) string { return "fp" + ShortHash(lab, host) }

// Inside a host's namespace the names are the host's own and need no hash.
const (
	HostManagementIf = "eth0"
	HostPodIf        = "pod0"
	HostCNIBridge    = "cni0"
)

// LinkAlias is the alias set on every root-namespace link of a lab.
func LinkAlias(lab, what string) string { return InterfaceAliasPrefix + lab + ":" + what }

// IptablesComment tags the lab's root-namespace iptables rules.
func IptablesComment(lab string) string { return "faultline lab " + lab }

// KernelNames are the machine-wide names the lab's kernel objects take in
// the root namespace and the cgroup tree, each mapped to what it names:
// the hosts' network namespaces and cgroups, the two bridges, every
// host's two veths and the iptables comment. Two labs up at once must
// share none of them (a namespace, cgroup or comment of the other lab
// would be taken, killed or removed as one's own). A host with no pod
// link still has its pod veth's name reserved: the names are derived
// from the lab and host names alone, as down derives them.
//
// Bridges and veths are links: one name space, so their keys share the
// kind "link".
func KernelNames(lab string, hosts []string) map[string]string {
	names := map[string]string{}
	add := func(kind, name, what string) { names[kind+" "+name] = what }
	add("link", ManagementBridgeName(lab), "lab "+lab+"'s management bridge")
	add("link", PodBridgeName(lab), "lab "+lab+"'s pod bridge")
	add("iptables comment", IptablesComment(lab), "lab "+lab+"'s FORWARD rules")
	for _, h := range hosts {
		add("network namespace", NetnsName(lab, h), "host "+h+" of lab "+lab)
		add("cgroup", "/"+CgroupName(lab, h), "host "+h+" of lab "+lab)
		add("link", ManagementVethName(lab, h), "host "+h+" of lab "+lab+"'s management veth")
		add("link", PodVethName(lab, h), "host "+h+" of lab "+lab+"'s pod veth")
	}
	return names
}
