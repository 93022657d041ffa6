package readers

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"regexp"
	"strings"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/evidence/source/iptables"
)

// The reader of what kube-router v2.1.0's firewall (its network policy
// controller) applied on a node, from that node's `iptables-save -t
// filter` and `ipset save`.
//
// kube-router's chain names cannot be traced back to what they stand
// for: a pod's KUBE-POD-FW-<hash> and a policy's KUBE-NWPLCY-<hash> hash
// the namespace and name with the sync's version, a timestamp. The
// reader takes the pod and the policy from the comments kube-router
// writes on its rules instead:
//
//   - KUBE-ROUTER-FORWARD, -OUTPUT and -INPUT jump to a pod's chain with
//     "rule to jump traffic destined to POD name:<pod> namespace: <ns> to
//     chain <chain>" (or "from POD"), matching the pod's address;
//   - the pod's chain jumps to each policy's chain with "run through nw
//     policy <name>" (matching -d <pod> for an ingress policy, -s <pod>
//     for an egress one, nothing for one of both types), or to
//     KUBE-NWPLCY-DEFAULT ("run through default ingress|egress network
//     policy chain") for a direction no policy selects the pod in, and
//     ends by rejecting what no chain marked 0x10000;
//   - a policy's chain holds one MARK 0x10000 rule per allowed peer set
//     and port, each commented "... selected by policy name[:] <name>
//     namespace <ns>". A policy that allows nothing has an empty chain;
//     a NetworkPolicy selects pods of its own namespace only, so its
//     namespace is then the pod's.
//
// Which of a policy's rules are ingress and which egress is told by its
// target sets, whose names (unlike the chains') hash only the namespace,
// name and address family: KUBE-DST-<h> holds the pods the policy
// selects for ingress rules (their destination), KUBE-SRC-<h> the same
// pods for egress rules (their source), with h = kubeRouterSetHash. The
// reader computes h the way kube-router does; a rule whose source is
// KUBE-SRC-<h> is an egress rule, every other an ingress rule (its
// destination is KUBE-DST-<h>, or the pods of the selection that have a
// named port).

const (
	kubeRouterForward = "KUBE-ROUTER-FORWARD"
	kubeRouterDefault = "KUBE-NWPLCY-DEFAULT"
	// kubeRouterMark is the mark a policy chain sets on traffic it allows.
	kubeRouterMark = "0x10000/0x10000"
)

var (
	kubeRouterPodJump    = regexp.MustCompile(`^rule to jump traffic (?:destined to|from) POD name:(\S+) namespace: (\S+) to chain (KUBE-POD-FW-\S+)$`)
	kubeRouterPolicyJump = regexp.MustCompile(`^run through nw policy (\S+)$`)
	kubeRouterDefaultDir = regexp.MustCompile(`^run through default (ingress|egress) network policy chain$`)
	kubeRouterRuleOwner  = regexp.MustCompile(`selected by policy name:? (\S+) namespace (\S+)$`)
)

// kubeRouterSetHash is the part after KUBE-SRC- and KUBE-DST- of the
// target sets of the policy namespace/name for family ("IPv4", "IPv6"):
// the first 16 characters of the base32 of the SHA-256 of namespace +
// name + family (kube-router v2.1.0's policySourcePodIPSetName and
// policyDestinationPodIPSetName).
func kubeRouterSetHash(namespace, name, family string) string {
	sum := sha256.Sum256([]byte(namespace + name + family))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// PolicyRulesFromKubeRouter reads what kube-router's firewall applied on
// a node from its `iptables-save -t filter` (or ip6tables-save) and
// `ipset save` output: per pod of the node it firewalls, the policies
// applied in each direction and their peers and ports. A filter table
// without KUBE-ROUTER-FORWARD (or no output at all) is NothingProgrammed;
// a dump iptables-save or ipset does not write, a chain or set the rules
// name that the dumps do not hold, or rules that contradict each other is
// an error.
func PolicyRulesFromKubeRouter(iptablesSave, ipsetSave string) (dataplane.PolicyRulesValue, error) {
	v := dataplane.PolicyRulesValue{Agent: "kube-router", Decided: dataplane.DecidedInKernel, Targets: []dataplane.PolicyTarget{}}
	d, sets, empty, err := parsePolicyDumps(iptablesSave, ipsetSave)
	if err != nil {
		return dataplane.PolicyRulesValue{}, err
	}
	if empty {
		v.NothingProgrammed = true
		return v, nil
	}
	if !d.Declares("filter", kubeRouterForward) {
		v.NothingProgrammed = true
		return v, nil
	}
	defaultAllows := false
	for _, r := range d.Chain("filter", kubeRouterDefault) {
		if r.Arg("--set-xmark") == kubeRouterMark && len(r.All("--match-set")) == 0 && r.Proto == "" {
			defaultAllows = true
		}
	}

	type pod struct{ ip, ns, name string }
	pods := map[string]*pod{} // by chain
	var order []string
	for _, top := range []string{kubeRouterForward, "KUBE-ROUTER-OUTPUT", "KUBE-ROUTER-INPUT"} {
		for _, r := range d.Chain("filter", top) {
			if !strings.HasPrefix(r.Jump, "KUBE-POD-FW-") {
				continue
			}
			m := kubeRouterPodJump.FindStringSubmatch(r.Comment)
			if m == nil {
				return dataplane.PolicyRulesValue{}, fmt.Errorf("%s jumps to %s with comment %q, not kube-router's", top, r.Jump, r.Comment)
			}
			if m[3] != r.Jump {
				return dataplane.PolicyRulesValue{}, fmt.Errorf("%s jumps to %s under a comment naming %s", top, r.Jump, m[3])
			}
			if !d.Declares("filter", r.Jump) {
				return dataplane.PolicyRulesValue{}, fmt.Errorf("%s jumps to %s, which the dump does not declare (cut short?)", top, r.Jump)
			}
			ip := iptables.HostOf(r.Dest)
			if ip == "" {
				ip = iptables.HostOf(r.Arg("-s", "--source"))
			}
			if ip == "" {
				return dataplane.PolicyRulesValue{}, fmt.Errorf("%s jumps to %s matching no pod address", top, r.Jump)
			}
			p := pods[r.Jump]
			if p == nil {
				p = &pod{ip: ip, ns: m[2], name: m[1]}
				pods[r.Jump] = p
				order = append(order, r.Jump)
			} else if p.ip != ip || p.ns != m[2] || p.name != m[1] {
				return dataplane.PolicyRulesValue{}, fmt.Errorf("chain %s is jumped to for %s/%s at %s and for %s/%s at %s", r.Jump, p.ns, p.name, p.ip, m[2], m[1], ip)
			}
		}
	}

	for _, chain := range order {
		p := pods[chain]
		t := dataplane.PolicyTarget{PodIP: p.ip, Pod: p.ns + "/" + p.name}
		family := "IPv4"
		if strings.Contains(p.ip, ":") {
			family = "IPv6"
		}
		var ingressDefault, egressDefault, rejects bool
		for _, r := range d.Chain("filter", chain) {
			src, dst := iptables.HostOf(r.Arg("-s", "--source")), iptables.HostOf(r.Dest)
			switch {
			case r.Jump == "REJECT" || r.Jump == "DROP":
				if o, ok := r.Opt("--mark"); ok && o.Neg && len(o.Args) == 1 && o.Args[0] == kubeRouterMark {
					rejects = true
				}
			case r.Jump == kubeRouterDefault:
				if m := kubeRouterDefaultDir.FindStringSubmatch(r.Comment); m == nil {
					return dataplane.PolicyRulesValue{}, fmt.Errorf("%s jumps to %s with comment %q, not kube-router's", chain, kubeRouterDefault, r.Comment)
				}
				switch {
				case dst == p.ip:
					ingressDefault = true
				case src == p.ip:
					egressDefault = true
				default:
					return dataplane.PolicyRulesValue{}, fmt.Errorf("%s jumps to %s matching neither to nor from %s", chain, kubeRouterDefault, p.ip)
				}
			case strings.HasPrefix(r.Jump, "KUBE-NWPLCY-"):
				m := kubeRouterPolicyJump.FindStringSubmatch(r.Comment)
				if m == nil {
					return dataplane.PolicyRulesValue{}, fmt.Errorf("%s jumps to %s with comment %q, not kube-router's", chain, r.Jump, r.Comment)
				}
				if !d.Declares("filter", r.Jump) {
					return dataplane.PolicyRulesValue{}, fmt.Errorf("%s jumps to %s, which the dump does not declare (cut short?)", chain, r.Jump)
				}
				ingress, egress, err := kubeRouterPolicy(d, sets, r.Jump, m[1], p.ns, family, p.ip)
				if err != nil {
					return dataplane.PolicyRulesValue{}, err
				}
				if dst == p.ip || (src == "" && dst == "") {
					t.Ingress.Policies = append(t.Ingress.Policies, ingress)
				}
				if src == p.ip || (src == "" && dst == "") {
					t.Egress.Policies = append(t.Egress.Policies, egress)
				}
			}
		}
		// Traffic no chain marked is rejected; the default chain marks
		// everything of the directions it is jumped to for.
		t.Ingress.Isolated = rejects && !(ingressDefault && defaultAllows)
		t.Egress.Isolated = rejects && !(egressDefault && defaultAllows)
		v.Targets = append(v.Targets, t)
	}
	dataplane.SortPolicyRules(&v)
	return v, nil
}

// kubeRouterPolicy reads one policy chain as applied to the pod at podIP:
// its ingress rules and its egress rules (each only those whose target
// set holds the pod).
func kubeRouterPolicy(d iptables.Dump, sets ipSets, chain, name, podNamespace, family, podIP string) (ingress, egress dataplane.AppliedPolicy, err error) {
	namespace := podNamespace
	rules := d.Chain("filter", chain)
	for _, r := range rules {
		if m := kubeRouterRuleOwner.FindStringSubmatch(r.Comment); m != nil {
			if m[1] != name {
				return ingress, egress, fmt.Errorf("%s is run through as policy %s but its rules name policy %s", chain, name, m[1])
			}
			namespace = m[2]
		}
	}
	ingress = dataplane.AppliedPolicy{Name: namespace + "/" + name, Kind: "NetworkPolicy", Allow: []dataplane.PolicyAllow{}}
	egress = ingress
	egress.Allow = []dataplane.PolicyAllow{}
	setPrefix := ""
	if family == "IPv6" {
		setPrefix = "inet6:"
	}
	h := kubeRouterSetHash(namespace, name, family)
	egressTargets := setPrefix + "KUBE-SRC-" + h
	for _, r := range rules {
		if r.Jump != "MARK" || r.Arg("--set-xmark") != kubeRouterMark {
			continue
		}
		var srcSet, dstSet string
		for _, o := range r.All("--match-set") {
			if len(o.Args) != 2 || o.Neg {
				return ingress, egress, fmt.Errorf("%s: a set match kube-router does not write: %v", chain, o.Args)
			}
			switch o.Args[1] {
			case "src":
				srcSet = o.Args[0]
			case "dst":
				dstSet = o.Args[0]
			default:
				return ingress, egress, fmt.Errorf("%s: set %s matched on %q, which kube-router does not write", chain, o.Args[0], o.Args[1])
			}
		}
		targets, peers := dstSet, srcSet
		if srcSet == egressTargets {
			targets, peers = srcSet, dstSet
		}
		if targets == "" {
			return ingress, egress, fmt.Errorf("%s: a rule that matches no set of the policy's pods", chain)
		}
		ts := sets[targets]
		if ts == nil {
			return ingress, egress, fmt.Errorf("%s matches set %s, which ipset save does not hold (dumps taken across a sync?)", chain, targets)
		}
		if !ts.contains(podIP) {
			continue
		}
		a := dataplane.PolicyAllow{Peers: []string{}}
		if peers == "" {
			a.AnyPeer = true
		} else {
			ps := sets[peers]
			if ps == nil {
				return ingress, egress, fmt.Errorf("%s matches set %s, which ipset save does not hold (dumps taken across a sync?)", chain, peers)
			}
			for _, m := range ps.members {
				if m.nomatch {
					a.Except = append(a.Except, m.elem)
				} else {
					a.Peers = append(a.Peers, m.elem)
				}
			}
		}
		if r.Proto != "" {
			port := r.Proto
			if r.DPort != "" {
				port += "/" + r.DPort
			}
			a.Ports = []string{port}
		}
		if targets == egressTargets {
			egress.Allow = append(egress.Allow, a)
		} else {
			ingress.Allow = append(ingress.Allow, a)
		}
	}
	return ingress, egress, nil
}
