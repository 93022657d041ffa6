package readers

import (
	"strings"
	"testing"

	"github.com/faultline/faultline/kits/dataplane"
)

func TestPolicyRulesFromKubeNetworkPolicies(t *testing.T) {
	out := agentsTestdata(t, "kube-network-policies-nft.json")
	v, err := PolicyRulesFromKubeNetworkPolicies(out)
	if err != nil {
		t.Fatal(err)
	}
	want := "kube-network-policies decided=userspace queue=100 failOpen=false all=false\n10.244.1.10 handed over\n10.244.1.11 handed over"
	if got := v.String(); got != want {
		t.Errorf("rules\n got %s\nwant %s", got, want)
	}
	if v.Decided != dataplane.DecidedInUserspace || v.NothingProgrammed {
		t.Errorf("%+v", v)
	}

	// --fail-open sets the bypass flag: one flag is a string, more a list.
	for _, flags := range []string{`"bypass"`, `["bypass", "fanout"]`} {
		bypass := strings.ReplaceAll(out, `{"queue": {"num": 100}}`, `{"queue": {"num": 100, "flags": `+flags+`}}`)
		v, err := PolicyRulesFromKubeNetworkPolicies(bypass)
		if err != nil || v.Queue == nil || !v.Queue.FailOpen || v.Queue.Num != 100 {
			t.Errorf("flags %s: %s, %v", flags, v, err)
		}
	}
	// One rule queueing elsewhere contradicts the others.
	if _, err := PolicyRulesFromKubeNetworkPolicies(strings.Replace(out, `{"queue": {"num": 100}}`, `{"queue": {"num": 101}}`, 1)); err == nil || !strings.Contains(err.Error(), "queues to") {
		t.Errorf("queues that disagree: %v", err)
	}
	// Without its queue rules the table hands nothing over.
	noQueue := strings.ReplaceAll(out, `{"queue": {"num": 100}}`, `{"accept": null}`)
	if v, err := PolicyRulesFromKubeNetworkPolicies(noQueue); err != nil || v.Queue != nil || len(v.Targets) != 2 {
		t.Errorf("no queue rule: %s, %v", v, err)
	}
}

// With admin network policies, kube-network-policies keeps no sets and
// queues every new connection.
func TestPolicyRulesFromKubeNetworkPoliciesQueueingAll(t *testing.T) {
	all := `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}},
{"table": {"family": "inet", "name": "kube-network-policies", "handle": 1}},
{"chain": {"family": "inet", "table": "kube-network-policies", "name": "postrouting", "handle": 1, "type": "filter", "hook": "postrouting", "prio": 95, "policy": "accept"}},
{"rule": {"family": "inet", "table": "kube-network-policies", "chain": "postrouting", "handle": 2, "expr": [{"match": {"op": "in", "left": {"ct": {"key": "state"}}, "right": ["established", "related"]}}, {"accept": null}]}},
{"rule": {"family": "inet", "table": "kube-network-policies", "chain": "postrouting", "handle": 3, "expr": [{"queue": {"num": 100, "flags": "bypass"}}]}}]}`
	v, err := PolicyRulesFromKubeNetworkPolicies(all)
	if err != nil || v.Queue == nil || !v.Queue.All || !v.Queue.FailOpen || len(v.Targets) != 0 {
		t.Errorf("%s, %v", v, err)
	}
}

func TestPolicyRulesFromKubeNetworkPoliciesProgrammedNothing(t *testing.T) {
	kubeProxyOnly := agentsTestdata(t, "kube-proxy-nft.json")
	for name, in := range map[string]string{"no output": "", "another table only": kubeProxyOnly} {
		v, err := PolicyRulesFromKubeNetworkPolicies(in)
		if err != nil || !v.NothingProgrammed || len(v.Targets) != 0 {
			t.Errorf("%s: %s, %v", name, v, err)
		}
	}
	for name, c := range map[string]struct{ in, want string }{
		"nft's error": {"Error: Could not process rule: No such file or directory", "nft JSON"},
		"a set of a table not listed": {`{"nftables": [{"set": {"family": "inet", "name": "podips-v4", "table": "kube-network-policies", "type": "ipv4_addr"}}]}`,
			"which the listing does not hold"},
		"an element nft does not write": {strings.Replace(agentsTestdata(t, "kube-network-policies-nft.json"), `"10.244.1.10"`, `{"range": ["10.244.1.10", "10.244.1.20"]}`, 1), "a key nft does not write"},
	} {
		if v, err := PolicyRulesFromKubeNetworkPolicies(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want an error with %q), value %s", name, err, c.want, v)
		}
	}
}
