package dataplane

import (
	"fmt"
	"slices"
	"strings"
)

// What a node's agents applied, as read from the node's kernel tables
// (the readers in package readers). Like the core's values
// (framework/evidence) they answer the questions of this kit. Every list is sorted by the reader, so two
// reads of the same rules encode to the same JSON and the same String.

// Where a policy agent's decisions are taken (PolicyRulesValue.Decided).
const (
	// DecidedInKernel: the rules read are what accepts or drops a
	// connection (kube-router, Calico).
	DecidedInKernel = "kernel"
	// DecidedInUserspace: the kernel only hands the targets' new
	// connections to the agent's process, which judges them against the
	// policies it holds in memory (kube-network-policies); the rules read
	// say which pods are handed over, not what is allowed.
	DecidedInUserspace = "userspace"
)

// PolicyRulesValue is the NetworkPolicy rules one agent applied on one
// node: per workload it firewalls, the policies applied in each direction
// and what each lets through.
type PolicyRulesValue struct {
	// Agent is the agent whose rules were read: "kube-router", "calico",
	// "kube-network-policies".
	Agent string `json:"agent"`
	// NothingProgrammed is true when the agent's chains or table are not
	// there at all (it never ran on the node, or cleaned up): a definite
	// reading, unlike an unreadable dump. Then Targets is empty.
	NothingProgrammed bool `json:"nothingProgrammed,omitempty"`
	// Decided is DecidedInKernel or DecidedInUserspace.
	Decided string `json:"decided"`
	// Queue is how the kernel hands connections to the agent, for an
	// agent that decides in userspace.
	Queue *PolicyQueue `json:"queue,omitempty"`
	// Targets are the firewalled workloads, sorted by PodIP, then
	// Interface.
	Targets []PolicyTarget `json:"targets"`
}

// PolicyQueue is an nfqueue hand-over to a userspace agent.
type PolicyQueue struct {
	// Num is the queue number.
	Num int `json:"num"`
	// FailOpen is true when packets pass while no process listens on the
	// queue (the "bypass" flag).
	FailOpen bool `json:"failOpen"`
	// All is true when every packet is queued, not only those of the
	// targets (kube-network-policies with admin network policies).
	All bool `json:"all,omitempty"`
}

// PolicyTarget is one workload the agent firewalls.
type PolicyTarget struct {
	// PodIP is the workload's address where the rules match on it
	// (kube-router, kube-network-policies).
	PodIP string `json:"podIP,omitempty"`
	// Interface is the host side of the workload's interface where the
	// rules match on it instead (Calico's cali… veth).
	Interface string `json:"interface,omitempty"`
	// Pod is "namespace/name" where the rules name the pod (kube-router's
	// rule comments).
	Pod string `json:"pod,omitempty"`
	// Ingress and Egress are what applies to traffic to and from the
	// workload. Both are zero for an agent that decides in userspace.
	Ingress PolicyDirection `json:"ingress"`
	Egress  PolicyDirection `json:"egress"`
}

// PolicyDirection is what the agent applies to one direction of a
// workload's traffic.
type PolicyDirection struct {
	// Isolated is true when traffic that no policy below allows is dropped
	// or rejected: NetworkPolicy's isolation ("default deny applied").
	// False means the direction is open, whatever Policies holds.
	Isolated bool `json:"isolated"`
	// Policies are the policies applied, sorted by Name then Kind.
	Policies []AppliedPolicy `json:"policies"`
}

// AppliedPolicy is one policy as applied to one workload in one direction.
type AppliedPolicy struct {
	// Name is the policy's "namespace/name".
	Name string `json:"name"`
	// Kind is "NetworkPolicy" for a Kubernetes NetworkPolicy, else the
	// agent's own kind (Calico's "GlobalNetworkPolicy", …).
	Kind string `json:"kind"`
	// Allow is what the policy lets through for this workload, sorted and
	// without duplicates; empty when it allows nothing.
	Allow []PolicyAllow `json:"allow"`
	// Unread counts the policy's rules the reader does not interpret (the
	// deny, pass and log rules of an agent's own policy kinds; a Kubernetes
	// NetworkPolicy has none): non-zero means Allow is not all the policy
	// does.
	Unread int `json:"unread,omitempty"`
}

// PolicyAllow is one allowing rule: traffic between the workload and a
// peer on a port.
type PolicyAllow struct {
	// AnyPeer is true when the rule matches every peer address.
	AnyPeer bool `json:"anyPeer,omitempty"`
	// Peers are the peer addresses and CIDRs ("10.244.2.5",
	// "10.0.0.0/24"), sorted; empty without AnyPeer means no peer at all
	// (a selector that matches no pod).
	Peers []string `json:"peers"`
	// Except are CIDRs taken out of Peers (an ipBlock's except), sorted.
	Except []string `json:"except,omitempty"`
	// Ports are "tcp/80", "tcp/8000:8080" or "tcp" (every port of the
	// protocol), sorted; empty means every protocol and port.
	Ports []string `json:"ports,omitempty"`
}

// Target is the target with the given pod address.
func (v PolicyRulesValue) Target(podIP string) (PolicyTarget, bool) {
	for _, t := range v.Targets {
		if t.PodIP == podIP {
			return t, true
		}
	}
	return PolicyTarget{}, false
}

// Names lists the applied policies' names.
func (d PolicyDirection) Names() []string {
	out := make([]string, 0, len(d.Policies))
	for _, p := range d.Policies {
		out = append(out, p.Name)
	}
	return out
}

// Equal reports whether two values say the same thing.
func (v PolicyRulesValue) Equal(o PolicyRulesValue) bool { return v.String() == o.String() }

// String renders the value on one line per target, deterministically.
func (v PolicyRulesValue) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s decided=%s", v.Agent, v.Decided)
	if v.NothingProgrammed {
		b.WriteString(" nothing programmed")
	}
	if q := v.Queue; q != nil {
		fmt.Fprintf(&b, " queue=%d failOpen=%t all=%t", q.Num, q.FailOpen, q.All)
	}
	for _, t := range v.Targets {
		b.WriteString("\n")
		if v.Decided == DecidedInUserspace {
			// The kernel holds no policy of these targets.
			b.WriteString(strings.Join(strings.Fields(t.PodIP+" "+t.Interface), " ") + " handed over")
			continue
		}
		b.WriteString(t.String())
	}
	return b.String()
}

// String renders one target.
func (t PolicyTarget) String() string {
	var id []string
	for _, s := range []string{t.PodIP, t.Interface} {
		if s != "" {
			id = append(id, s)
		}
	}
	if t.Pod != "" {
		id = append(id, "("+t.Pod+")")
	}
	return strings.Join(id, " ") + " ingress " + t.Ingress.String() + " egress " + t.Egress.String()
}

// String renders one direction.
func (d PolicyDirection) String() string {
	parts := make([]string, 0, len(d.Policies))
	for _, p := range d.Policies {
		parts = append(parts, p.String())
	}
	state := "open"
	if d.Isolated {
		state = "isolated"
	}
	return state + "[" + strings.Join(parts, "; ") + "]"
}

// String renders one policy.
func (p AppliedPolicy) String() string {
	allows := make([]string, 0, len(p.Allow))
	for _, a := range p.Allow {
		allows = append(allows, a.String())
	}
	s := p.Kind + " " + p.Name + " allow{" + strings.Join(allows, ", ") + "}"
	if p.Unread > 0 {
		s += fmt.Sprintf(" +%d unread", p.Unread)
	}
	return s
}

// String renders one allowing rule.
func (a PolicyAllow) String() string {
	peers := "none"
	switch {
	case a.AnyPeer:
		peers = "any"
	case len(a.Peers) > 0:
		peers = strings.Join(a.Peers, ",")
	}
	if len(a.Except) > 0 {
		peers += " except " + strings.Join(a.Except, ",")
	}
	ports := "any port"
	if len(a.Ports) > 0 {
		ports = strings.Join(a.Ports, ",")
	}
	return peers + " on " + ports
}

// SortPolicyRules puts every list of v in the order the type documents and
// drops duplicate allowing rules, so that equal rules encode equally
// whatever order a dump listed them in.
func SortPolicyRules(v *PolicyRulesValue) {
	if v.Targets == nil {
		v.Targets = []PolicyTarget{}
	}
	for i := range v.Targets {
		for _, d := range []*PolicyDirection{&v.Targets[i].Ingress, &v.Targets[i].Egress} {
			if d.Policies == nil {
				d.Policies = []AppliedPolicy{}
			}
			for j := range d.Policies {
				p := &d.Policies[j]
				for k := range p.Allow {
					a := &p.Allow[k]
					if a.Peers == nil {
						a.Peers = []string{}
					}
					slices.Sort(a.Peers)
					a.Peers = slices.Compact(a.Peers)
					slices.Sort(a.Except)
					a.Except = slices.Compact(a.Except)
					slices.Sort(a.Ports)
					a.Ports = slices.Compact(a.Ports)
				}
				if p.Allow == nil {
					p.Allow = []PolicyAllow{}
				}
				slices.SortFunc(p.Allow, func(x, y PolicyAllow) int { return strings.Compare(x.String(), y.String()) })
				p.Allow = slices.CompactFunc(p.Allow, func(x, y PolicyAllow) bool { return x.String() == y.String() })
			}
			slices.SortFunc(d.Policies, func(x, y AppliedPolicy) int {
				if c := strings.Compare(x.Name, y.Name); c != 0 {
					return c
				}
				return strings.Compare(x.Kind, y.Kind)
			})
		}
	}
	slices.SortFunc(v.Targets, func(x, y PolicyTarget) int {
		if c := strings.Compare(x.PodIP, y.PodIP); c != 0 {
			return c
		}
		return strings.Compare(x.Interface, y.Interface)
	})
}
