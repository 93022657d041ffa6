package source

import (
	"reflect"
	"strings"
	"testing"
)

func TestProxyServicesFromIPTables(t *testing.T) {
	v, err := ProxyServicesFromIPTables(string(readTestdata(t, "iptables", "kube-proxy-iptables-save.txt")))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"default/kubernetes:https":         {"10.231.31.21:6443"},
		"faultline/empty":                  {},
		"faultline/stateful:http":          {"10.244.1.5:8080", "10.244.2.9:8080"},
		"faultline/stateful:metrics":       {},
		"faultline/statefulset-other:http": {"10.244.3.4:8080"},
	}
	if got := v.ByPort(); !reflect.DeepEqual(got, want) {
		t.Errorf("all services\n got %v\nwant %v", got, want)
	}
	// One read of the real worker1 dump gives the test service and the
	// API servers' service.
	real, err := ProxyServicesFromIPTables(string(readTestdata(t, "iptables", "worker1-iptables-save.txt")))
	if err != nil || len(real.ByPort()["default/kubernetes:https"]) != 3 || len(real.ByPort()["faultline/stateful:http"]) == 0 {
		t.Errorf("worker1's services = %v, %v", real.ByPort(), err)
	}
	for name, in := range map[string]string{"no output": "", "no kube-proxy chains": "*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"} {
		if v, err := ProxyServicesFromIPTables(in); err != nil || !v.NothingProgrammed {
			t.Errorf("%s: %+v, %v", name, v, err)
		}
	}
	if _, err := ProxyServicesFromIPTables("*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j KUBE-SVC-X\n"); err == nil || !strings.Contains(err.Error(), "no COMMIT") {
		t.Errorf("a dump cut short: %v", err)
	}
}
