package readers

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/evidence/source/iptables"
)

// The reader of what Calico's Felix (iptables data plane) applied on a
// node, from `iptables-save -t filter` and `ipset save`, for the SSH labs
// that run Calico. Felix's layout (felix/rules in projectcalico/calico):
//
//   - cali-to-wl-dispatch sends traffic to a workload ("-o <iface> -g
//     cali-tw-<iface>", ingress), cali-from-wl-dispatch traffic from it
//     ("-i <iface> -g cali-fw-<iface>", egress); the interface is the
//     pod's host-side veth, cali + 11 hex digits (CalicoInterfaceName);
//   - the endpoint chain clears the accept mark, jumps to each policy's
//     chain (cali-pi-… for ingress, cali-po-…; or to a policy group chain
//     cali-gi-/cali-go- that jumps to several), returns once a policy
//     set the accept mark, and drops what no policy accepted ("Drop if no
//     policies passed packet", "End of tier default. Drop …" in newer
//     releases) before the profiles (cali-pri-/cali-pro-, the namespace's
//     and service account's, which allow everything);
//   - a policy chain's first rule carries the policy's name in a comment,
//     "Policy <ns>/knp.default.<name> ingress" for a Kubernetes
//     NetworkPolicy (newer releases: "KubernetesNetworkPolicy <ns>/<name>
//     ingress"), and each allowing rule sets the accept mark, matching the
//     peers through an ipset (cali40s:…, members the peers' addresses), a
//     CIDR, or, for several CIDRs or an except, a block of rules on a
//     scratch mark before it.
//
// Policy chain names are hashes of the policy's name and cannot be traced
// back to it; the reader takes every policy from its comment.

var calicoPolicyComment = regexp.MustCompile(`^(\S+) (\S+) (ingress|egress)$`)

// CalicoInterfaceName is the host-side interface Calico's CNI plugin
// gives a pod: "cali" and the first 11 hex digits of the SHA-1 of
// "<namespace>.<pod>". It maps a PolicyTarget's Interface to its pod.
func CalicoInterfaceName(namespace, pod string) string {
	sum := sha1.Sum([]byte(namespace + "." + pod))
	return "cali" + hex.EncodeToString(sum[:])[:11]
}

// PolicyRulesFromCalico reads what Felix applied from a node's
// `iptables-save -t filter` and `ipset save` output: per workload
// interface, the policies applied in each direction and what they allow.
// A filter table without any cali- chain (or no output at all) is
// NothingProgrammed; a dump iptables-save or ipset does not write, a
// chain or set the rules name that the dumps do not hold, or a policy
// chain without the comment that names its policy is an error. Rules of
// a policy other than its allowing ones (deny, pass, log: Calico's own
// policy kinds) are counted in its Unread.
func PolicyRulesFromCalico(iptablesSave, ipsetSave string) (dataplane.PolicyRulesValue, error) {
	v := dataplane.PolicyRulesValue{Agent: "calico", Decided: dataplane.DecidedInKernel, Targets: []dataplane.PolicyTarget{}}
	d, sets, empty, err := parsePolicyDumps(iptablesSave, ipsetSave)
	if err != nil {
		return dataplane.PolicyRulesValue{}, err
	}
	if empty {
		v.NothingProgrammed = true
		return v, nil
	}
	filter := d.Tables["filter"]
	calico := false
	if filter != nil {
		for c := range filter.Chains {
			if strings.HasPrefix(c, "cali-") {
				calico = true
			}
		}
	}
	if !calico {
		v.NothingProgrammed = true
		return v, nil
	}

	// Interfaces from the dispatch rules; a chain whose name is not hashed
	// also names its interface.
	iface := map[string]string{}
	for _, r := range filter.Rules {
		switch {
		case strings.HasPrefix(r.Jump, "cali-tw-"):
			if o := r.Arg("-o", "--out-interface"); o != "" {
				iface[r.Jump] = o
			}
		case strings.HasPrefix(r.Jump, "cali-fw-"):
			if i := r.Arg("-i", "--in-interface"); i != "" {
				iface[r.Jump] = i
			}
		}
	}
	targets := map[string]*dataplane.PolicyTarget{}
	var order []string
	for c := range filter.Chains {
		var ingress bool
		var rest string
		switch {
		case strings.HasPrefix(c, "cali-tw-"):
			ingress, rest = true, strings.TrimPrefix(c, "cali-tw-")
		case strings.HasPrefix(c, "cali-fw-"):
			rest = strings.TrimPrefix(c, "cali-fw-")
		default:
			continue
		}
		name := iface[c]
		if name == "" {
			if strings.HasPrefix(rest, "_") {
				return dataplane.PolicyRulesValue{}, fmt.Errorf("endpoint chain %s: no dispatch rule names its interface", c)
			}
			name = rest
		}
		t := targets[name]
		if t == nil {
			t = &dataplane.PolicyTarget{Interface: name}
			targets[name] = t
			order = append(order, name)
		}
		dir, err := calicoEndpoint(d, sets, c, ingress)
		if err != nil {
			return dataplane.PolicyRulesValue{}, err
		}
		if ingress {
			t.Ingress = dir
		} else {
			t.Egress = dir
		}
	}
	for _, name := range order {
		v.Targets = append(v.Targets, *targets[name])
	}
	dataplane.SortPolicyRules(&v)
	return v, nil
}

// calicoEndpoint reads one endpoint chain: the policies it runs, and
// whether what none of them accepts is dropped.
func calicoEndpoint(d iptables.Dump, sets ipSets, chain string, ingress bool) (dataplane.PolicyDirection, error) {
	dir := dataplane.PolicyDirection{Policies: []dataplane.AppliedPolicy{}}
	rules := d.Chain("filter", chain)
	accept := uint64(0x10000)
	for _, r := range rules {
		if r.Jump == "RETURN" && r.HasComment("Return if policy accepted") {
			if o, ok := r.Opt("--mark"); ok && len(o.Args) == 1 {
				if val, _, ok := parseMark(o.Args[0]); ok && val != 0 {
					accept = val
				}
			}
		}
	}
	policyPrefix, groupPrefix := "cali-po-", "cali-go-"
	if ingress {
		policyPrefix, groupPrefix = "cali-pi-", "cali-gi-"
	}
	inPolicies, inProfiles := false, false
	addPolicy := func(pc string) error {
		if !d.Declares("filter", pc) {
			return fmt.Errorf("%s jumps to %s, which the dump does not declare (cut short?)", chain, pc)
		}
		p, err := calicoPolicy(d, sets, pc, ingress, accept)
		if err != nil {
			return err
		}
		dir.Policies = append(dir.Policies, p)
		return nil
	}
	for i, r := range rules {
		switch {
		case strings.HasPrefix(r.Jump, policyPrefix):
			inPolicies = true
			if err := addPolicy(r.Jump); err != nil {
				return dir, err
			}
		case strings.HasPrefix(r.Jump, groupPrefix):
			inPolicies = true
			if !d.Declares("filter", r.Jump) {
				return dir, fmt.Errorf("%s jumps to %s, which the dump does not declare (cut short?)", chain, r.Jump)
			}
			for _, gr := range d.Chain("filter", r.Jump) {
				if strings.HasPrefix(gr.Jump, policyPrefix) {
					if err := addPolicy(gr.Jump); err != nil {
						return dir, err
					}
				}
			}
		case strings.HasPrefix(r.Jump, "cali-pri-") || strings.HasPrefix(r.Jump, "cali-pro-"):
			inProfiles = true
		case r.Jump == "DROP" || r.Jump == "REJECT":
			// Policies isolate the direction when the chain drops what they
			// did not accept; an admin-down endpoint drops everything
			// first.
			if (inPolicies && !inProfiles) || (i == 0 && r.HasComment("Endpoint admin disabled")) {
				dir.Isolated = true
			}
		}
	}
	return dir, nil
}

// calicoBlock is the match block Felix renders before a rule whose
// CIDRs or ports do not fit in one iptables rule.
type calicoBlock struct {
	peers, except, ports []string
	anyPeer              bool
}

// calicoPolicy reads one policy chain.
func calicoPolicy(d iptables.Dump, sets ipSets, chain string, ingress bool, accept uint64) (dataplane.AppliedPolicy, error) {
	rules := d.Chain("filter", chain)
	p := dataplane.AppliedPolicy{Allow: []dataplane.PolicyAllow{}}
	for _, r := range rules {
		for _, c := range r.Comments {
			m := calicoPolicyComment.FindStringSubmatch(c)
			if m == nil || m[1] == "Profile" {
				continue
			}
			p.Kind, p.Name = calicoPolicyName(m[1], m[2])
			break
		}
		if p.Name != "" {
			break
		}
	}
	if p.Name == "" {
		return p, fmt.Errorf("policy chain %s has no comment naming its policy", chain)
	}
	peerSide, ownSide := "src", "dst"
	if !ingress {
		peerSide, ownSide = "dst", "src"
	}
	var block *calicoBlock
	for _, r := range rules {
		switch r.Jump {
		case "", "RETURN":
			continue
		case "MARK":
		default:
			p.Unread++
			continue
		}
		val, mask, ok := parseMark(r.Arg("--set-xmark"))
		if !ok {
			p.Unread++
			continue
		}
		peers, except, ports, anyPeer, err := calicoMatches(sets, r, chain, peerSide, ownSide)
		if err != nil {
			return p, err
		}
		_, blockGated := r.Opt("--mark")
		hasMatch := !anyPeer || len(except) > 0 || len(ports) > 0
		switch {
		case val == accept && mask == accept:
			a := dataplane.PolicyAllow{AnyPeer: anyPeer, Peers: peers, Except: except, Ports: ports}
			if blockGated && block != nil {
				if !block.anyPeer || len(block.peers) > 0 {
					a.AnyPeer = false
					a.Peers = append(a.Peers, block.peers...)
				}
				a.Except = append(a.Except, block.except...)
				a.Ports = append(a.Ports, block.ports...)
			}
			p.Allow = append(p.Allow, a)
			block = nil
		case mask&accept != 0:
			// Sets the accept bit otherwise: not an allow Felix writes.
			p.Unread++
		case !hasMatch && !blockGated:
			// The rule that opens a block: the scratch bits reset.
			block = &calicoBlock{anyPeer: true}
		case block == nil:
			p.Unread++
		case val == mask && val != 0:
			// A positive member: its CIDR, set or ports pass the block.
			if len(peers) > 0 {
				block.anyPeer = false
				block.peers = append(block.peers, peers...)
			}
			block.ports = append(block.ports, ports...)
		case val == 0 && hasMatch && !blockGated:
			// A negated member: its CIDR clears the block.
			block.except = append(block.except, peers...)
		default:
			// The rule that ands a block's scratch bit into the result.
		}
	}
	return p, nil
}

// calicoPolicyName turns a policy comment's kind and name into an
// AppliedPolicy's Kind and Name: Kubernetes NetworkPolicies are
// "knp.default.<name>" in their namespace under the older comment and
// KubernetesNetworkPolicy under the newer; Calico's own kinds keep their
// names as Felix writes them.
func calicoPolicyName(kind, name string) (string, string) {
	ns, n, namespaced := strings.Cut(name, "/")
	switch {
	case kind == "KubernetesNetworkPolicy":
		return "NetworkPolicy", name
	case kind == "Policy" && namespaced && strings.HasPrefix(n, "knp.default."):
		return "NetworkPolicy", ns + "/" + strings.TrimPrefix(n, "knp.default.")
	case kind == "Policy" && namespaced:
		return "projectcalico.org/NetworkPolicy", name
	case kind == "Policy":
		return "projectcalico.org/GlobalNetworkPolicy", name
	}
	return "projectcalico.org/" + kind, name
}

// calicoMatches reads a rule's peer and port matches.
func calicoMatches(sets ipSets, r iptables.Rule, chain, peerSide, ownSide string) (peers, except, ports []string, anyPeer bool, err error) {
	anyPeer = true
	peerFlag, peerLong := "-s", "--source"
	if peerSide == "dst" {
		peerFlag, peerLong = "-d", "--destination"
	}
	for _, o := range r.Opts {
		switch {
		case o.Name == peerFlag || o.Name == peerLong:
			if o.Neg {
				except = append(except, o.Args...)
			} else {
				anyPeer = false
				peers = append(peers, o.Args...)
			}
		case o.Name == "--match-set":
			if len(o.Args) != 2 {
				return nil, nil, nil, false, fmt.Errorf("%s: a set match Felix does not write: %v", chain, o.Args)
			}
			s := sets[o.Args[0]]
			if s == nil {
				return nil, nil, nil, false, fmt.Errorf("%s matches set %s, which ipset save does not hold (dumps taken across a sync?)", chain, o.Args[0])
			}
			side, _, _ := strings.Cut(o.Args[1], ",")
			ipPort := strings.Contains(o.Args[1], ",")
			switch {
			case side == peerSide:
				for _, m := range s.members {
					host, port, hasPort := strings.Cut(m.elem, ",")
					switch {
					case o.Neg || m.nomatch:
						except = append(except, host)
					default:
						anyPeer = false
						peers = append(peers, host)
					}
					if ipPort && hasPort {
						ports = append(ports, strings.Replace(port, ":", "/", 1))
					}
				}
			case side == ownSide && ipPort:
				// A named port: the workload's own address and port.
				for _, m := range s.members {
					if _, port, ok := strings.Cut(m.elem, ","); ok {
						ports = append(ports, strings.Replace(port, ":", "/", 1))
					}
				}
			}
		}
	}
	proto := r.Proto
	if dports := r.Arg("--dports", "--destination-ports"); dports != "" {
		for _, p := range strings.Split(dports, ",") {
			ports = append(ports, proto+"/"+p)
		}
	} else if r.DPort != "" {
		ports = append(ports, proto+"/"+r.DPort)
	} else if proto != "" && len(ports) == 0 {
		ports = append(ports, proto)
	}
	return peers, except, ports, anyPeer, nil
}

// parseMark reads "0x10000/0x10000" (value/mask; a bare value has an
// all-ones mask).
func parseMark(s string) (val, mask uint64, ok bool) {
	if s == "" {
		return 0, 0, false
	}
	vs, ms, hasMask := strings.Cut(s, "/")
	val, err := strconv.ParseUint(vs, 0, 32)
	if err != nil {
		return 0, 0, false
	}
	mask = 0xffffffff
	if hasMask {
		if mask, err = strconv.ParseUint(ms, 0, 32); err != nil {
			return 0, 0, false
		}
	}
	return val, mask, true
}
