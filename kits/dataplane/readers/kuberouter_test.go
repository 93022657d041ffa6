package readers

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/kits/dataplane"
)

func kubeRouter(t *testing.T, state string) (string, string) {
	t.Helper()
	return agentsTestdata(t, "kube-router"+state+"-iptables-save.txt"), agentsTestdata(t, "kube-router"+state+"-ipset-save.txt")
}

// What the policies of capture-objects.yaml allow, as kube-router v2.1.0
// applied them on worker1 (testdata/agents/README.md).
const kubeRouterWant = `kube-router decided=kernel
10.244.1.10 (faultline/target-0) ingress isolated[NetworkPolicy faultline/allow-block allow{10.0.0.0/8 except 10.244.0.0/16 on tcp/9000:9100}; NetworkPolicy faultline/allow-client allow{10.244.1.11,10.244.2.11 on tcp/8080}; NetworkPolicy faultline/allow-peers-named allow{10.244.2.20 on tcp/8080}; NetworkPolicy faultline/deny-ingress allow{}] egress open[]
10.244.1.11 (faultline/client-0) ingress isolated[NetworkPolicy faultline/client-both allow{any on any port}] egress isolated[NetworkPolicy faultline/client-both allow{0.0.0.0/1,128.0.0.0/1 on any port}; NetworkPolicy faultline/client-egress allow{10.244.1.10 on tcp/8080, any on udp/53}]
10.244.1.12 (faultline/plain-0) ingress open[] egress open[]`

func TestPolicyRulesFromKubeRouter(t *testing.T) {
	v, err := PolicyRulesFromKubeRouter(kubeRouter(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := v.String(); got != kubeRouterWant {
		t.Errorf("rules\n got %s\nwant %s", got, kubeRouterWant)
	}
	target, ok := v.Target("10.244.1.10")
	if !ok || !slices.Equal(target.Ingress.Names(), []string{"faultline/allow-block", "faultline/allow-client", "faultline/allow-peers-named", "faultline/deny-ingress"}) {
		t.Errorf("target-0 = %+v, %t", target, ok)
	}
	if _, ok := v.Target("10.244.2.20"); ok {
		t.Error("a pod of another node is a target")
	}

	// The same rules through JSON (as an answer carries them) say the
	// same thing.
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back dataplane.PolicyRulesValue
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(v) {
		t.Errorf("JSON round trip: %v\n%s", err, back)
	}
}

func TestPolicyRulesFromKubeRouterAfterDeletion(t *testing.T) {
	v, err := PolicyRulesFromKubeRouter(kubeRouter(t, "-deleted"))
	if err != nil {
		t.Fatal(err)
	}
	// kube-router renamed every chain on the sync after the deletion (the
	// names hash the sync's time); what they say changed only for
	// allow-client.
	want := strings.Replace(kubeRouterWant, "NetworkPolicy faultline/allow-client allow{10.244.1.11,10.244.2.11 on tcp/8080}; ", "", 1)
	if got := v.String(); got != want {
		t.Errorf("rules after deleting allow-client\n got %s\nwant %s", got, want)
	}
}

func TestPolicyRulesFromKubeRouterIgnoresOrder(t *testing.T) {
	ipt, sets := kubeRouter(t, "")
	want, err := PolicyRulesFromKubeRouter(ipt, sets)
	if err != nil {
		t.Fatal(err)
	}
	// The set members and the top-level jumps listed the other way round.
	reversed := func(s, prefix string) string {
		lines := strings.Split(s, "\n")
		var idx []int
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				idx = append(idx, i)
			}
		}
		for i, j := 0, len(idx)-1; i < j; i, j = i+1, j-1 {
			lines[idx[i]], lines[idx[j]] = lines[idx[j]], lines[idx[i]]
		}
		return strings.Join(lines, "\n")
	}
	got, err := PolicyRulesFromKubeRouter(reversed(ipt, "-A KUBE-ROUTER-FORWARD "), reversed(sets, "add KUBE-SRC-OU4ZYIZ27EMRKNGO "))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(want) {
		t.Errorf("reordered dumps\n got %s\nwant %s", got, want)
	}
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if string(a) != string(b) {
		t.Errorf("reordered dumps encode differently:\n%s\n%s", a, b)
	}
}

func TestPolicyRulesFromKubeRouterProgrammedNothing(t *testing.T) {
	for name, in := range map[string][2]string{
		"no output":             {"", ""},
		"a node without it":     {agentsTestdata(t, "kube-router-none-iptables-save.txt"), agentsTestdata(t, "kube-router-none-ipset-save.txt")},
		"iptables-save comment": {"# Warning: iptables-legacy tables present\n", ""},
	} {
		v, err := PolicyRulesFromKubeRouter(in[0], in[1])
		if err != nil || !v.NothingProgrammed || len(v.Targets) != 0 || v.Agent != "kube-router" {
			t.Errorf("%s: %s, %v", name, v, err)
		}
	}
	// Its chains but no pod to firewall: programmed, no target.
	none := agentsTestdata(t, "kube-router-none-iptables-save.txt")
	v, err := PolicyRulesFromKubeRouter(strings.Replace(none, ":KUBE-FIREWALL", ":KUBE-ROUTER-FORWARD - [0:0]\n:KUBE-FIREWALL", 1), "")
	if err != nil || v.NothingProgrammed || len(v.Targets) != 0 {
		t.Errorf("chains without pods: %s, %v", v, err)
	}
}

func TestPolicyRulesFromKubeRouterRejectsBadDumps(t *testing.T) {
	ipt, sets := kubeRouter(t, "")
	dropLines := func(s, contains string) string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.Contains(l, contains) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	for name, c := range map[string]struct {
		ipt, Sets, want string
	}{
		"iptables-save cut short": {ipt[:len(ipt)/2], sets, "no COMMIT"},
		"a set the rules match is gone": {ipt, dropLines(sets, "KUBE-SRC-OU4ZYIZ27EMRKNGO"),
			"KUBE-SRC-OU4ZYIZ27EMRKNGO, which ipset save does not hold"},
		"an entry before its set":           {ipt, "add KUBE-DST-X 10.0.0.1 timeout 0\n" + sets, "not created before it"},
		"an error instead of ipset save":    {ipt, "ipset v7.17: Kernel error received: Operation not permitted\n", "not a line ipset save writes"},
		"an error instead of iptables-save": {"iptables-save: command not found\n", sets, "not a line iptables-save writes"},
		"a pod chain the dump does not declare": {dropLines(ipt, ":KUBE-POD-FW-LKTJONEHGMD2OFWM"), sets,
			"KUBE-POD-FW-LKTJONEHGMD2OFWM, which the dump does not declare"},
		"a pod chain jumped to for two pods": {strings.Replace(ipt, "-s 10.244.1.12/32 -m comment --comment \"rule to jump traffic from POD name:plain-0", "-s 10.244.1.99/32 -m comment --comment \"rule to jump traffic from POD name:plain-0", 1), sets,
			"is jumped to for faultline/plain-0 at 10.244.1.12 and for faultline/plain-0 at 10.244.1.99"},
		"a policy chain whose rules name another policy": {strings.ReplaceAll(ipt, "policy name allow-client namespace", "policy name allow-other namespace"), sets,
			"is run through as policy allow-client but its rules name policy allow-other"},
		"a jump without kube-router's comment": {strings.Replace(ipt, "rule to jump traffic destined to POD name:target-0", "jump to target", 1), sets, "not kube-router's"},
	} {
		v, err := PolicyRulesFromKubeRouter(c.ipt, c.Sets)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want an error with %q), value %s", name, err, c.want, v)
		}
	}
}

// The target sets' names are computed as kube-router computes them: the
// real capture's client-both policy owns KUBE-SRC- and KUBE-DST-
// VO2V4E5RGQ7CBNOF.
func TestKubeRouterSetHash(t *testing.T) {
	if got := kubeRouterSetHash("faultline", "client-both", "IPv4"); got != "VO2V4E5RGQ7CBNOF" {
		t.Errorf("hash = %s", got)
	}
	if kubeRouterSetHash("faultline", "client-both", "IPv6") == kubeRouterSetHash("faultline", "client-both", "IPv4") {
		t.Error("the family is not hashed")
	}
}
