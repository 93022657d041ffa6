package source

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/evidence"
)

func agentsTestdata(t *testing.T, name string) string {
	t.Helper()
	return string(readTestdata(t, "agents", name))
}

// Every service port of capture-objects.yaml, as kube-proxy v1.36.3
// programmed it on worker1 (in either mode).
var kubeProxyWant = map[string]string{
	"default/kubernetes:https":         "10.250.31.1 443/tcp [10.231.31.21:6443]",
	"faultline/empty":                  "10.250.31.77 80/tcp [] rejected",
	"faultline/local-only:http":        "10.250.31.160 80/tcp [] dropped",
	"faultline/stateful:http":          "10.250.31.140 80/tcp [10.244.1.5:8080 10.244.2.9:8080]",
	"faultline/stateful:metrics":       "10.250.31.140 9100/tcp [] rejected",
	"faultline/statefulset-other:http": "10.250.31.141 80/tcp [10.244.3.4:8080]",
	"faultline/sticky:http":            "10.250.31.150 80/tcp [10.244.1.7:8080 10.244.2.8:8080]",
}

func proxyPorts(v evidence.ProxyBackendsValue) map[string]string {
	out := map[string]string{}
	for _, p := range v.Ports {
		s := fmt.Sprintf("%s %s %v", p.ClusterIP, p.ServicePort, p.Backends)
		if p.Rejected {
			s += " rejected"
		}
		if p.Dropped {
			s += " dropped"
		}
		out[p.Port] = s
	}
	return out
}

func TestProxyServicesFromNFT(t *testing.T) {
	v, err := ProxyServicesFromNFT(agentsTestdata(t, "kube-proxy-nft.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := proxyPorts(v); !reflect.DeepEqual(got, kubeProxyWant) {
		t.Errorf("ports\n got %v\nwant %v", got, kubeProxyWant)
	}
	one, err := ProxyBackendsFromNFT(agentsTestdata(t, "kube-proxy-nft.json"), "faultline", "stateful")
	if err != nil || len(one.Ports) != 2 || one.Ports[0].Port != "faultline/stateful:http" || one.Ports[1].Port != "faultline/stateful:metrics" {
		t.Errorf("the stateful service = %+v, %v", one, err)
	}
	if want := []string{"10.244.1.7:8080", "10.244.2.8:8080"}; !reflect.DeepEqual(v.ByPort()["faultline/sticky:http"], want) {
		t.Errorf("ByPort = %v", v.ByPort())
	}
}

// The two modes, captured from the same cluster state, read the same.
func TestProxyServicesAgreeAcrossModes(t *testing.T) {
	nft, err := ProxyServicesFromNFT(agentsTestdata(t, "kube-proxy-nft.json"))
	if err != nil {
		t.Fatal(err)
	}
	ipt, err := ProxyServicesFromIPTables(agentsTestdata(t, "kube-proxy-iptables-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(nft, ipt) {
		t.Errorf("nftables mode %+v\niptables mode %+v", nft, ipt)
	}
	if got := proxyPorts(ipt); !reflect.DeepEqual(got, kubeProxyWant) {
		t.Errorf("iptables mode ports\n got %v\nwant %v", got, kubeProxyWant)
	}
}

func TestProxyServicesFromNFTProgrammedNothing(t *testing.T) {
	empty := `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}]}`
	other := `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}}, {"table": {"family": "inet", "name": "kube-network-policies", "handle": 1}}]}`
	for name, in := range map[string]string{"no output": "", "an empty ruleset": empty, "another table only": other} {
		v, err := ProxyServicesFromNFT(in)
		if err != nil || !v.NothingProgrammed || len(v.Ports) != 0 {
			t.Errorf("%s: %+v, %v", name, v, err)
		}
		if _, err := ProxyBackendsFromNFT(in, "faultline", "stateful"); err == nil {
			t.Errorf("%s: the test service's reader gave no error", name)
		}
	}
}

func TestProxyServicesFromNFTRejectsBadListings(t *testing.T) {
	out := agentsTestdata(t, "kube-proxy-nft.json")
	for name, c := range map[string]struct{ in, want string }{
		"nft's error":         {"Error: No such file or directory\nlist table ip kube-proxy\n                 ^^^^^^^^^^", "nft JSON"},
		"a listing cut short": {out[:len(out)/2], "nft JSON"},
		"two listings":        {out + out, "more after the listing"},
		"not nft's JSON":      {`{"tables": []}`, `no "nftables" array`},
		// Renamed everywhere, so only the name's hash is wrong.
		"a chain named otherwise": {strings.ReplaceAll(out, "service-TFPCIKUC-", "service-TFPCIKUD-"), `hash TFPCIKUD is not that of "faultline/stateful/tcp/http"`},
		"a map to a chain not listed": {strings.Replace(out, `{"goto": {"target": "service-TFPCIKUC-faultline/stateful/tcp/http"}}`, `{"goto": {"target": "service-VUWENF3D-faultline/gone/tcp/http"}}`, 1),
			"service-VUWENF3D-faultline/gone/tcp/http, which the table does not list"},
		"a rule of a chain not listed": {strings.Replace(out, `"chain": "service-TFPCIKUC-faultline/stateful/tcp/http", "handle"`, `"chain": "elsewhere", "handle"`, 1), "a rule of chain elsewhere"},
	} {
		v, err := ProxyServicesFromNFT(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want an error with %q), value %+v", name, err, c.want, v)
		}
	}
}
