package readers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func np(name string, sel map[string]string, types []networkingv1.PolicyType, ingress []networkingv1.NetworkPolicyIngressRule, egress []networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
		Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}, PolicyTypes: types, Ingress: ingress, Egress: egress},
	}
}

func TestPolicyAllowsFollowsTheAPIsSemantics(t *testing.T) {
	target := PolicyPod{Namespace: "a", Name: "target", Labels: map[string]string{"role": "target"}, IP: "10.240.4.9", Ports: map[string]int32{"http": 8080}}
	client := PolicyPod{Namespace: "a", Name: "client", Labels: map[string]string{"role": "client"}, IP: "10.240.5.3"}
	other := PolicyPod{Namespace: "b", Name: "other", Labels: map[string]string{"role": "client"}, IP: "10.240.6.7"}
	ns := map[string]map[string]string{"a": {"kubernetes.io/metadata.name": "a"}, "b": {"kubernetes.io/metadata.name": "b", "team": "x"}}
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	fromClients := []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	named := intstr.FromString("http")
	other9 := intstr.FromInt32(9090)

	for _, c := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		src      PolicyPod
		port     int32
		proto    corev1.Protocol
		allowed  bool
		isolated int
	}{
		{"no policy: allowed", nil, client, 8080, tcp, true, 0},
		{"deny-all ingress for the target", []networkingv1.NetworkPolicy{np("deny", map[string]string{"role": "target"}, ingress, nil, nil)}, client, 8080, tcp, false, 1},
		{"deny-all selecting every pod (empty selector)", []networkingv1.NetworkPolicy{np("deny", nil, ingress, nil, nil)}, client, 8080, tcp, false, 1},
		{"a policy selecting another pod isolates nothing here", []networkingv1.NetworkPolicy{np("deny", map[string]string{"role": "else"}, ingress, nil, nil)}, client, 8080, tcp, true, 0},
		{"allow from clients in the namespace", []networkingv1.NetworkPolicy{np("deny", map[string]string{"role": "target"}, ingress, nil, nil), np("allow", map[string]string{"role": "target"}, ingress, fromClients, nil)}, client, 8080, tcp, true, 2},
		{"a podSelector alone admits only the policy's namespace", []networkingv1.NetworkPolicy{np("allow", map[string]string{"role": "target"}, ingress, fromClients, nil)}, other, 8080, tcp, false, 1},
		{"a namespaceSelector admits the other namespace", []networkingv1.NetworkPolicy{np("allow", map[string]string{"role": "target"}, ingress, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}}}}}, nil)}, other, 8080, tcp, true, 1},
		{"a named port resolves on the target", []networkingv1.NetworkPolicy{np("allow", map[string]string{"role": "target"}, ingress, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &named}}}}, nil)}, client, 8080, tcp, true, 1},
		{"another port is not admitted", []networkingv1.NetworkPolicy{np("allow", map[string]string{"role": "target"}, ingress, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &other9}}}}, nil)}, client, 8080, tcp, false, 1},
		{"the port's protocol must match", []networkingv1.NetworkPolicy{np("allow", map[string]string{"role": "target"}, ingress, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp}}}}, nil)}, client, 8080, tcp, false, 1},
		{"ipBlock with an exception", []networkingv1.NetworkPolicy{np("allow", map[string]string{"role": "target"}, ingress, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.240.0.0/16", Except: []string{"10.240.5.0/24"}}}}}}, nil)}, client, 8080, tcp, false, 1},
		{"default-deny egress for the client", []networkingv1.NetworkPolicy{np("egress", map[string]string{"role": "client"}, egress, nil, nil)}, client, 8080, tcp, false, 1},
		{"policyTypes empty with egress rules isolates egress too", []networkingv1.NetworkPolicy{np("both", map[string]string{"role": "client"}, nil, nil, []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.0.2.0/24"}}}}})}, client, 8080, tcp, false, 1},
	} {
		d, err := PolicyAllows(c.policies, ns, c.src, target, c.port, c.proto)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d.Allowed != c.allowed || len(d.Isolating) != c.isolated {
			t.Errorf("%s: %+v, want allowed %v with %d isolating", c.name, d, c.allowed, c.isolated)
		}
		if !d.Allowed && d.Why == "" {
			t.Errorf("%s: a refusal without a reason", c.name)
		}
	}
	bad := []networkingv1.NetworkPolicy{np("bad", map[string]string{"role": "target"}, ingress, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "not-a-cidr"}}}}}, nil)}
	if _, err := PolicyAllows(bad, ns, client, target, 8080, tcp); err == nil {
		t.Error("a policy with a bad CIDR evaluated")
	}
}

// The denying policies are named with their direction: an egress deny of
// the client beside an ingress policy of the target that admits it.
func TestPolicyAllowsNamesTheDenyingPoliciesByDirection(t *testing.T) {
	target := PolicyPod{Namespace: "a", Name: "target", Labels: map[string]string{"role": "target"}, IP: "10.240.4.9"}
	client := PolicyPod{Namespace: "a", Name: "client", Labels: map[string]string{"role": "client"}, IP: "10.240.5.3"}
	ns := map[string]map[string]string{"a": {"kubernetes.io/metadata.name": "a"}}
	fromClients := []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}
	policies := []networkingv1.NetworkPolicy{
		np("allow-target-ingress", map[string]string{"role": "target"}, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, fromClients, nil),
		np("deny-client-egress", map[string]string{"role": "client"}, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, nil, nil),
	}
	d, err := PolicyAllows(policies, ns, client, target, 8080, corev1.ProtocolTCP)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || len(d.Isolating) != 2 || len(d.IngressDenying) != 0 || len(d.EgressDenying) != 1 || d.EgressDenying[0] != "a/deny-client-egress" {
		t.Errorf("%+v: want denied by a/deny-client-egress for egress only, both isolating", d)
	}
}
