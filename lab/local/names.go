package local

import (
	"crypto/sha256"
	"encoding/hex"
)

// Every name the lab gives to a kernel object derives from the lab and host
// names alone, so that `down` after a crash can find what an earlier process
// made without trusting any state it may not have written.

// interfaceAliasPrefix marks every link the lab creates in the root
// namespace; the alias names the lab, so a scan never touches another lab's
// or anyone else's links.
const interfaceAliasPrefix = "faultline:"

// shortHash is 8 hex digits: interface names are at most 15 bytes, so the lab
// and host names cannot be spelled out in them.
func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}

// netnsName is the host's network namespace under /run/netns.
func netnsName(lab, host string) string { return "fl-" + lab + "-" + host }

// cgroupName is the per-node cgroup root kubelet puts its pods under, in
// every cgroup v1 hierarchy.
func cgroupName(lab, host string) string { return "fl-" + lab + "-" + host }

// managementBridgeName is the lab's management bridge in the root namespace.
func managementBridgeName(lab string) string { return "flm" + shortHash(lab) }

// podBridgeName is the lab's pod transport bridge in the root namespace.
func podBridgeName(lab string) string { return "flp" + shortHash(lab) }

// managementVethName is the root-namespace end of a host's management link.
func managementVethName(lab, host string) string { return "fm" + shortHash(lab, host) }

// podVethName is the root-namespace end of a host's pod transport link.
func podVethName(lab, host string) string { return "fp" + shortHash(lab, host) }

// Inside a host's namespace the names are the host's own and need no hash.
const (
	hostManagementIf = "eth0"
	hostPodIf        = "pod0"
	hostCNIBridge    = "cni0"
)

// linkAlias is the alias set on every root-namespace link of a lab.
func linkAlias(lab, what string) string { return interfaceAliasPrefix + lab + ":" + what }

// iptablesComment tags the lab's root-namespace iptables rules.
func iptablesComment(lab string) string { return "faultline lab " + lab }
