package readers

import (
	"strings"
	"testing"
)

func calico(t *testing.T) (string, string) {
	t.Helper()
	return agentsTestdata(t, "calico-iptables-save.txt"), agentsTestdata(t, "calico-ipset-save.txt")
}

// The policies of capture-objects.yaml in Felix's layout
// (testdata/agents/README.md): what kube-router applies, per interface,
// with 0.0.0.0/0 matching any peer (iptables writes no match for it).
const calicoWant = `calico decided=kernel
cali05028177f8e ingress isolated[NetworkPolicy faultline/allow-block allow{10.0.0.0/8 except 10.244.0.0/16 on tcp/9000:9100}; NetworkPolicy faultline/allow-client allow{10.244.1.11,10.244.2.11 on tcp/8080}; NetworkPolicy faultline/allow-peers-named allow{10.244.2.20 on tcp/8080}; NetworkPolicy faultline/deny-ingress allow{}] egress open[]
cali8b4d50029a9 ingress isolated[NetworkPolicy faultline/client-both allow{any on any port}] egress isolated[NetworkPolicy faultline/client-both allow{any on any port}; NetworkPolicy faultline/client-egress allow{10.244.1.10 on tcp/8080, any on udp/53}]
calia4f78972937 ingress open[] egress open[]`

func TestPolicyRulesFromCalico(t *testing.T) {
	v, err := PolicyRulesFromCalico(calico(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := v.String(); got != calicoWant {
		t.Errorf("rules\n got %s\nwant %s", got, calicoWant)
	}
	for pod, iface := range map[string]string{"target-0": "cali05028177f8e", "client-0": "cali8b4d50029a9", "plain-0": "calia4f78972937"} {
		if got := CalicoInterfaceName("faultline", pod); got != iface {
			t.Errorf("interface of %s = %s, want %s", pod, got, iface)
		}
	}
}

// A rule a Kubernetes NetworkPolicy never has (a Calico policy's deny) is
// counted, not read as an allow.
func TestPolicyRulesFromCalicoCountsWhatItDoesNotRead(t *testing.T) {
	ipt, sets := calico(t)
	const chain = "cali-pi-_0TIigZG8stegXUmdg6H" // allow-client's
	deny := "-A " + chain + ` -m comment --comment "cali:denydenydenydeny" -s 10.244.9.0/24 -j DROP` + "\nCOMMIT"
	v, err := PolicyRulesFromCalico(strings.Replace(ipt, "COMMIT", deny, 1), sets)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.String(), "NetworkPolicy faultline/allow-client allow{10.244.1.11,10.244.2.11 on tcp/8080} +1 unread") {
		t.Errorf("a deny rule was not counted:\n%s", v)
	}
}

func TestPolicyRulesFromCalicoProgrammedNothing(t *testing.T) {
	for name, in := range map[string]string{"no output": "", "a node without it": agentsTestdata(t, "kube-router-none-iptables-save.txt")} {
		v, err := PolicyRulesFromCalico(in, "")
		if err != nil || !v.NothingProgrammed || len(v.Targets) != 0 || v.Agent != "calico" {
			t.Errorf("%s: %s, %v", name, v, err)
		}
	}
}

func TestPolicyRulesFromCalicoRejectsBadDumps(t *testing.T) {
	ipt, sets := calico(t)
	for name, c := range map[string]struct{ ipt, Sets, want string }{
		"a set the rules match is gone": {ipt, strings.Join(strings.Split(sets, "\n")[3:], "\n"), "which ipset save does not hold"},
		"a policy without its name": {strings.Replace(ipt, ` -m comment --comment "Policy faultline/knp.default.deny-ingress ingress"`, "", 1), sets,
			"policy chain cali-pi-_-4kS0tRRI558FsKe_hy has no comment naming its policy"},
		"a policy chain the dump does not declare": {strings.Replace(ipt, ":cali-pi-_0TIigZG8stegXUmdg6H - [0:0]\n", "", 1), sets, "which the dump does not declare"},
		"iptables-save cut short":                  {ipt[:len(ipt)-len("COMMIT\n# Completed on Thu Dec  3 07:51:28 2026\n")], sets, "no COMMIT"},
	} {
		if v, err := PolicyRulesFromCalico(c.ipt, c.Sets); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want an error with %q), value %s", name, err, c.want, v)
		}
	}
}

func TestCalicoPolicyName(t *testing.T) {
	for _, c := range []struct{ Kind, name, wantKind, wantName string }{
		{"Policy", "faultline/knp.default.allow-client", "NetworkPolicy", "faultline/allow-client"},
		{"KubernetesNetworkPolicy", "faultline/allow-client", "NetworkPolicy", "faultline/allow-client"},
		{"Policy", "faultline/default.own", "projectcalico.org/NetworkPolicy", "faultline/default.own"},
		{"Policy", "default.global", "projectcalico.org/GlobalNetworkPolicy", "default.global"},
		{"GlobalNetworkPolicy", "global", "projectcalico.org/GlobalNetworkPolicy", "global"},
	} {
		if k, n := calicoPolicyName(c.Kind, c.name); k != c.wantKind || n != c.wantName {
			t.Errorf("%s %s = %s %s", c.Kind, c.name, k, n)
		}
	}
}
