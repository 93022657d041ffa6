package dataplane

import (
	"encoding/json"
	"testing"

	"github.com/faultline/faultline/framework/evidence"
)

func TestSortPolicyRules(t *testing.T) {
	allow := func(peers ...string) PolicyAllow {
		return PolicyAllow{Peers: peers, Ports: []string{"tcp/80", "tcp/80"}}
	}
	v := PolicyRulesValue{Agent: "kube-router", Decided: DecidedInKernel, Targets: []PolicyTarget{
		{PodIP: "10.244.1.9", Ingress: PolicyDirection{Isolated: true, Policies: []AppliedPolicy{
			{Name: "ns/b", Kind: "NetworkPolicy", Allow: []PolicyAllow{allow("10.0.0.2", "10.0.0.1"), allow("10.0.0.1", "10.0.0.2")}},
			{Name: "ns/a", Kind: "NetworkPolicy"},
		}}},
		{PodIP: "10.244.1.10"},
	}}
	SortPolicyRules(&v)
	want := "kube-router decided=kernel\n" +
		"10.244.1.10 ingress open[] egress open[]\n" +
		"10.244.1.9 ingress isolated[NetworkPolicy ns/a allow{}; NetworkPolicy ns/b allow{10.0.0.1,10.0.0.2 on tcp/80}] egress open[]"
	if got := v.String(); got != want {
		t.Errorf("sorted\n got %s\nwant %s", got, want)
	}
	// Sorting left no nil list behind: the JSON says [] where there is
	// nothing, so equal values encode equally.
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back PolicyRulesValue
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(b) || !back.Equal(v) {
		t.Errorf("round trip changed the value:\n%s\n%s", b, again)
	}
}

func TestPolicyRulesValueEqual(t *testing.T) {
	a := PolicyRulesValue{Agent: "calico", Decided: DecidedInKernel, Targets: []PolicyTarget{{Interface: "cali1", Ingress: PolicyDirection{Isolated: true}}}}
	b := a
	b.Targets = []PolicyTarget{{Interface: "cali1"}}
	if a.Equal(b) {
		t.Error("an isolated and an open direction are equal")
	}
	c := a
	c.NothingProgrammed = true
	c.Targets = nil
	if a.Equal(c) || !c.Equal(PolicyRulesValue{Agent: "calico", Decided: DecidedInKernel, NothingProgrammed: true}) {
		t.Error("nothing programmed compares wrongly")
	}
	q := PolicyRulesValue{Agent: "kube-network-policies", Decided: DecidedInUserspace, Queue: &PolicyQueue{Num: 100}}
	r := q
	r.Queue = &PolicyQueue{Num: 100, FailOpen: true}
	if q.Equal(r) {
		t.Error("queues that differ in fail-open are equal")
	}
}

func TestProxyBackendsValueService(t *testing.T) {
	v := evidence.ProxyBackendsValue{Ports: []evidence.ProxyPort{
		{Port: "faultline/stateful:http", Backends: []string{"10.0.0.1:80"}},
		{Port: "faultline/stateful"},
		{Port: "faultline/statefulset-other:http"},
	}}
	s := v.Service("faultline", "stateful")
	if len(s.Ports) != 2 || s.Ports[0].Port != "faultline/stateful:http" || s.Ports[1].Port != "faultline/stateful" {
		t.Errorf("service = %+v", s)
	}
	m := v.ByPort()
	m["faultline/stateful:http"][0] = "changed"
	if v.Ports[0].Backends[0] != "10.0.0.1:80" || len(m) != 3 {
		t.Errorf("ByPort shares or loses backends: %v", m)
	}
}
