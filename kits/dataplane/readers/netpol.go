package readers

import (
	"fmt"
	"net"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// What the NetworkPolicy API says of one connection, from the objects an
// API server records: the expectation the policy agent's enforcement is
// judged against. Written by hand because no well-kept library exports the
// evaluation (the upstream conformance suite's truth table and the agents'
// own engines are internal to them); the semantics followed are those of
// the networking.k8s.io/v1 API reference:
//   - a pod is isolated for ingress (egress) when a policy in its
//     namespace selects it and its policyTypes include Ingress (Egress);
//     policyTypes left empty mean Ingress, plus Egress when the policy
//     has egress rules;
//   - a connection is allowed when the destination is not isolated for
//     ingress or some ingress rule of a policy selecting it admits the
//     source, and the source is not isolated for egress or some egress
//     rule of a policy selecting it admits the destination;
//   - a rule admits a peer when its ports (none: all) include the port
//     and its peers (none: all) include the peer; a peer entry with only
//     a podSelector means pods of the policy's namespace, with only a
//     namespaceSelector all pods of the selected namespaces, with both
//     the selected pods of the selected namespaces; an ipBlock matches
//     the address within its CIDR and outside its exceptions.

// PolicyPod is what the evaluation needs of a pod.
type PolicyPod struct {
	Namespace, Name string
	Labels          map[string]string
	IP              string
	// Ports are the pod's named container ports, by name.
	Ports map[string]int32
}

// PolicyPodOf takes what the evaluation needs from a pod object.
func PolicyPodOf(p *corev1.Pod) PolicyPod {
	pp := PolicyPod{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels, IP: p.Status.PodIP, Ports: map[string]int32{}}
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name != "" {
				pp.Ports[port.Name] = port.ContainerPort
			}
		}
	}
	return pp
}

// PolicyDecision is the API's answer for one connection.
type PolicyDecision struct {
	Allowed bool
	// Isolating names the policies that isolate the destination for
	// ingress or the source for egress ("namespace/name"), sorted; empty
	// when nothing isolates either, so everything is allowed.
	Isolating []string
	// Why says which side refused, when not allowed.
	Why string
	// IngressDenying names the policies isolating the destination for
	// ingress when none of them admits the connection, EgressDenying
	// those isolating the source for egress when none admits it; empty
	// when that direction allows.
	IngressDenying, EgressDenying []string
}

// PolicyAllows says whether policies (all of the cluster's, or at least
// those of the two pods' namespaces) allow a new TCP or UDP connection
// from src to port of dst; namespaceLabels are every namespace's labels.
func PolicyAllows(policies []networkingv1.NetworkPolicy, namespaceLabels map[string]map[string]string, src, dst PolicyPod, port int32, proto corev1.Protocol) (PolicyDecision, error) {
	var d PolicyDecision
	in, inIsolated, err := directionAllows(policies, namespaceLabels, dst, src, dst, port, proto, networkingv1.PolicyTypeIngress)
	if err != nil {
		return d, err
	}
	out, outIsolated, err := directionAllows(policies, namespaceLabels, src, dst, dst, port, proto, networkingv1.PolicyTypeEgress)
	if err != nil {
		return d, err
	}
	d.Isolating = append(slices.Clone(inIsolated), outIsolated...)
	sort.Strings(d.Isolating)
	d.Allowed = in && out
	if !in {
		d.IngressDenying = slices.Sorted(slices.Values(inIsolated))
	}
	if !out {
		d.EgressDenying = slices.Sorted(slices.Values(outIsolated))
	}
	switch {
	case !in:
		d.Why = fmt.Sprintf("%s/%s is isolated for ingress and no rule admits %s/%s on %d/%s", dst.Namespace, dst.Name, src.Namespace, src.Name, port, proto)
	case !out:
		d.Why = fmt.Sprintf("%s/%s is isolated for egress and no rule admits %s/%s on %d/%s", src.Namespace, src.Name, dst.Namespace, dst.Name, port, proto)
	}
	return d, nil
}

// directionAllows evaluates one direction: subject is the pod the
// policies select (the destination for ingress, the source for egress),
// peer the other end, and dst the destination whose named ports resolve.
func directionAllows(policies []networkingv1.NetworkPolicy, nsLabels map[string]map[string]string, subject, peer, dst PolicyPod, port int32, proto corev1.Protocol, dir networkingv1.PolicyType) (bool, []string, error) {
	var isolating []string
	allowed := false
	for i := range policies {
		np := &policies[i]
		if np.Namespace != subject.Namespace || !hasType(np, dir) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			return false, nil, fmt.Errorf("policy %s/%s: podSelector: %w", np.Namespace, np.Name, err)
		}
		if !sel.Matches(labels.Set(subject.Labels)) {
			continue
		}
		isolating = append(isolating, np.Namespace+"/"+np.Name)
		if allowed {
			continue
		}
		if dir == networkingv1.PolicyTypeIngress {
			for _, r := range np.Spec.Ingress {
				ok, err := ruleAdmits(np, r.Ports, r.From, nsLabels, peer, dst, port, proto)
				if err != nil {
					return false, nil, err
				}
				allowed = allowed || ok
			}
		} else {
			for _, r := range np.Spec.Egress {
				ok, err := ruleAdmits(np, r.Ports, r.To, nsLabels, peer, dst, port, proto)
				if err != nil {
					return false, nil, err
				}
				allowed = allowed || ok
			}
		}
	}
	if len(isolating) == 0 {
		return true, nil, nil
	}
	return allowed, isolating, nil
}

func hasType(np *networkingv1.NetworkPolicy, dir networkingv1.PolicyType) bool {
	if len(np.Spec.PolicyTypes) == 0 {
		return dir == networkingv1.PolicyTypeIngress || (dir == networkingv1.PolicyTypeEgress && len(np.Spec.Egress) > 0)
	}
	for _, t := range np.Spec.PolicyTypes {
		if t == dir {
			return true
		}
	}
	return false
}

func ruleAdmits(np *networkingv1.NetworkPolicy, ports []networkingv1.NetworkPolicyPort, peers []networkingv1.NetworkPolicyPeer, nsLabels map[string]map[string]string, peer, dst PolicyPod, port int32, proto corev1.Protocol) (bool, error) {
	if !portsAdmit(ports, dst, port, proto) {
		return false, nil
	}
	if len(peers) == 0 {
		return true, nil
	}
	for _, p := range peers {
		ok, err := peerMatches(np, p, nsLabels, peer)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func portsAdmit(ports []networkingv1.NetworkPolicyPort, dst PolicyPod, port int32, proto corev1.Protocol) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		pp := corev1.ProtocolTCP
		if p.Protocol != nil {
			pp = *p.Protocol
		}
		if pp != proto {
			continue
		}
		if p.Port == nil {
			return true
		}
		var first int32
		if p.Port.IntVal != 0 || p.Port.StrVal == "" {
			first = p.Port.IntVal
		} else {
			named, ok := dst.Ports[p.Port.StrVal]
			if !ok {
				continue
			}
			first = named
		}
		last := first
		if p.EndPort != nil && p.Port.StrVal == "" {
			last = *p.EndPort
		}
		if port >= first && port <= last {
			return true
		}
	}
	return false
}

func peerMatches(np *networkingv1.NetworkPolicy, p networkingv1.NetworkPolicyPeer, nsLabels map[string]map[string]string, peer PolicyPod) (bool, error) {
	if p.IPBlock != nil {
		_, cidr, err := net.ParseCIDR(p.IPBlock.CIDR)
		if err != nil {
			return false, fmt.Errorf("policy %s/%s: ipBlock %q: %w", np.Namespace, np.Name, p.IPBlock.CIDR, err)
		}
		ip := net.ParseIP(peer.IP)
		if ip == nil || !cidr.Contains(ip) {
			return false, nil
		}
		for _, e := range p.IPBlock.Except {
			_, ex, err := net.ParseCIDR(e)
			if err != nil {
				return false, fmt.Errorf("policy %s/%s: ipBlock except %q: %w", np.Namespace, np.Name, e, err)
			}
			if ex.Contains(ip) {
				return false, nil
			}
		}
		return true, nil
	}
	if p.NamespaceSelector == nil && p.PodSelector == nil {
		return false, nil
	}
	if p.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
		if err != nil {
			return false, fmt.Errorf("policy %s/%s: namespaceSelector: %w", np.Namespace, np.Name, err)
		}
		if !sel.Matches(labels.Set(nsLabels[peer.Namespace])) {
			return false, nil
		}
	} else if peer.Namespace != np.Namespace {
		return false, nil
	}
	if p.PodSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.PodSelector)
		if err != nil {
			return false, fmt.Errorf("policy %s/%s: podSelector: %w", np.Namespace, np.Name, err)
		}
		return sel.Matches(labels.Set(peer.Labels)), nil
	}
	return true, nil
}
