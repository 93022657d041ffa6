package components

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/addressing"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/pki"
	"github.com/faultline/faultline/lab/timers"
)

// The local backend imports this package, so its tests cannot link it; the
// topologies are read through a backend of the local kind that only parses.
func init() {
	lab.Register(lab.Backend{Kind: "local", Open: func(c *lab.Config) (lab.Lab, error) {
		return nil, errors.New("components tests open no lab")
	}})
}

// testCluster is a topology of testdata as its components see it, with a
// state dir of the test's own.
func testCluster(t *testing.T, topology string) (*Cluster, map[string]Host) {
	t.Helper()
	cfg, err := lab.LoadConfig(filepath.Join("..", "..", "..", "..", "testdata", "labs", topology+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := addressing.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Config: cfg, Dirs: layout.State(t.TempDir()), Plan: plan}
	hosts := map[string]Host{}
	for _, hc := range cfg.Hosts {
		h := Host{HostConfig: hc}
		if n, ok := plan.Nodes[hc.Name]; ok {
			h.Node = &n
		}
		hosts[hc.Name] = h
	}
	return c, hosts
}

func names(ss []Service) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// Each role runs its services in boot order, and a clean shutdown knows
// every one of them.
func TestServicesByRoleInBootOrder(t *testing.T) {
	c, hosts := testCluster(t, "lab11")
	s, shosts := testCluster(t, "lab11s")
	for host, want := range map[string][]string{
		"etcd1":   {"etcd"},
		"cp1":     {"kube-apiserver", "keepalived", "kube-controller-manager", "kube-scheduler", "containerd", "kubelet", "kube-proxy"},
		"worker1": {"containerd", "kubelet", "kube-proxy", "kube-router"},
		// With a storage host, every worker runs the CSI node driver.
		"lab11s/worker1": {"containerd", "kubelet", "kube-proxy", "kube-router", "csi-node"},
		"lab11s/cp1":     {"kube-apiserver", "keepalived", "kube-controller-manager", "kube-scheduler", "containerd", "kubelet", "kube-proxy"},
		"lab11s/storage": {"history-etcd", "csi-controller", "csi-attacher"},
	} {
		got := ForHost(c, hosts[host])
		if name, ok := strings.CutPrefix(host, "lab11s/"); ok {
			got = ForHost(s, shosts[name])
		}
		if !slices.Equal(names(got), want) {
			t.Errorf("%s runs %v, want %v", host, names(got), want)
		}
		all := append([]Service{SSHD()}, got...)
		for i := 1; i < len(all); i++ {
			if all[i].Phase < all[i-1].Phase {
				t.Errorf("%s: %s (%s) comes after %s (%s)", host, all[i].Name, all[i].Phase, all[i-1].Name, all[i-1].Phase)
			}
		}
		for _, s := range all {
			if !slices.Contains(StopOrder, s.Name) {
				t.Errorf("%s: %s is missing from StopOrder: down would leave it running", host, s.Name)
			}
		}
	}
	pair, hosts := testCluster(t, "pair")
	for _, h := range hosts {
		if slices.Contains(names(ForHost(pair, h)), "keepalived") {
			t.Errorf("%s runs keepalived in a lab without a virtual address", h.Name)
		}
	}
}

// Each control-plane host's VRRP instance has a priority of its own, in
// config order, and the other control-plane hosts as its peers.
func TestKeepalivedConfig(t *testing.T) {
	c, hosts := testCluster(t, "lab11")
	for host, prio := range map[string]string{"cp1": "150", "cp2": "149", "cp3": "148"} {
		conf := c.keepalivedConfig(hosts[host])
		if !strings.Contains(conf, "priority "+prio+"\n") {
			t.Errorf("%s: no priority %s in\n%s", host, prio, conf)
		}
		for other, h := range hosts {
			if !h.HasRole(lab.RoleControlPlane) {
				continue
			}
			peer := strings.Contains(conf, "    "+h.Address+"\n")
			if peer != (other != host) {
				t.Errorf("%s: %s listed as a peer: %v", host, other, peer)
			}
		}
		if !strings.Contains(conf, "10.231.11.10/24 dev eth0") {
			t.Errorf("%s: the virtual address is not on eth0:\n%s", host, conf)
		}
	}
}

// A node's pods get the node's own pod subnet.
func TestCNIConfigGivesTheNodesSubnet(t *testing.T) {
	c, hosts := testCluster(t, "lab11")
	var conf struct {
		Plugins []struct {
			IPAM struct {
				Ranges [][]struct{ Subnet string }
			}
		}
	}
	if err := json.Unmarshal([]byte(c.cniConfig(hosts["worker3"])), &conf); err != nil {
		t.Fatal(err)
	}
	if got := conf.Plugins[0].IPAM.Ranges[0][0].Subnet; got != "10.240.6.0/24" {
		t.Errorf("worker3's pods get %s, want 10.240.6.0/24", got)
	}
}

// The authorization configuration is written once: what a fault or an
// operator changed survives the API server's next start.
func TestAuthorizationConfigIsWrittenOnce(t *testing.T) {
	c, hosts := testCluster(t, "lab11")
	path, err := c.writeAuthorizationConfig(hosts["cp1"])
	if err != nil {
		t.Fatal(err)
	}
	if path != AuthorizationConfigPath(c.Dirs, "cp1") {
		t.Errorf("written to %s, named %s", path, AuthorizationConfigPath(c.Dirs, "cp1"))
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != authorizationConfig {
		t.Fatalf("first write: %q, %v", b, err)
	}
	if err := os.WriteFile(path, []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.writeAuthorizationConfig(hosts["cp1"]); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "changed" {
		t.Errorf("the second start rewrote the file: %q", b)
	}
}

// The addons give each node agent's group its role, put the kube-dns
// Service on the address the kubelets are told, and run CoreDNS with the
// image named.
func TestAddonsBindTheAgentsAndPointClusterDNSAtCoreDNS(t *testing.T) {
	c, hosts := testCluster(t, "lab11")
	a := c.AddonObjects("faultline.local/coredns:1.0")
	bound := map[string]string{}
	for _, b := range a.ClusterRoleBindings {
		for _, s := range b.Subjects {
			bound[s.Name] = b.RoleRef.Name
		}
	}
	if bound["faultline:kube-proxies"] != "system:node-proxier" || bound["faultline:kube-routers"] != "faultline:kube-router" || bound["coredns"] != "faultline:coredns" {
		t.Errorf("bindings %v", bound)
	}
	if len(a.Services) != 1 || a.Services[0].Spec.ClusterIP != c.Plan.ServiceIP(DNSServiceIPIndex).String() {
		t.Fatalf("kube-dns Service %+v, want it on the tenth service address", a.Services)
	}
	if d := a.Deployments[0]; *d.Spec.Replicas != 2 || d.Spec.Template.Spec.Containers[0].Image != "faultline.local/coredns:1.0" {
		t.Errorf("CoreDNS Deployment %+v", d.Spec)
	}
	files, err := pki.Ensure(context.Background(), c.Config, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	profile, err := timers.Get(timers.Fast)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.kubeletConfig(&Env{PKI: files, Profile: profile}, hosts["worker1"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, "- "+a.Services[0].Spec.ClusterIP) {
		t.Errorf("kubelet config does not name the kube-dns address:\n%s", cfg)
	}
	if !strings.Contains(Corefile(), "kubernetes cluster.local") || !strings.Contains(Corefile(), "ttl 5") {
		t.Errorf("Corefile:\n%s", Corefile())
	}
}

// CoreDNS's two instances never share a node, so a lab of one worker
// (pair) runs one: a second would stay Pending, and the lab would never
// have every pod Ready.
func TestCoreDNSReplicasFitTheWorkers(t *testing.T) {
	c, _ := testCluster(t, "pair")
	if r := *c.AddonObjects("dns").Deployments[0].Spec.Replicas; r != 1 {
		t.Errorf("pair's CoreDNS replicas = %d, want 1", r)
	}
}

// A lab with a storage host has the CSI drivers' objects and the
// controller's role bound to its identity; one without has none.
func TestAddonsOfTheStorageHost(t *testing.T) {
	c, _ := testCluster(t, "lab11")
	if a := c.AddonObjects("dns"); len(a.CSIDrivers) != 0 || len(a.StorageClasses) != 0 || c.Export() != "" || c.HistoryEndpoint() != "" {
		t.Errorf("lab11 has storage: %d drivers, %d classes, export %q, history %q", len(a.CSIDrivers), len(a.StorageClasses), c.Export(), c.HistoryEndpoint())
	}
	s, _ := testCluster(t, "lab11s")
	a := s.AddonObjects("dns")
	if len(a.CSIDrivers) != 2 || len(a.StorageClasses) != 4 {
		t.Errorf("lab11s: %d CSIDrivers, %d StorageClasses, want 2 and 4 (shared, block, block-mmp, block-fenced)", len(a.CSIDrivers), len(a.StorageClasses))
	}
	bound := false
	for _, b := range a.ClusterRoleBindings {
		if b.RoleRef.Name == "faultline:csi-controller" && len(b.Subjects) == 1 && b.Subjects[0].Name == pki.CSIControllerUser {
			bound = true
		}
	}
	if !bound {
		t.Error("lab11s: the CSI controller's role is not bound to its identity")
	}
	if got, want := s.HistoryEndpoint(), "http://10.231.13.41:2379"; got != want {
		t.Errorf("history endpoint %q, want %q", got, want)
	}
	if got := s.Export(); !strings.HasSuffix(got, filepath.Join("hosts", "storage", "export")) {
		t.Errorf("export path %q, want the storage host's disk", got)
	}
}

// kube-router starts only once the host's kube-proxy has synced its
// rules: the metric kube-proxy sets at the end of a sync that succeeded
// says so, and is 0 (or absent) before the first.
func TestKubeRouterStartsAfterKubeProxysFirstSync(t *testing.T) {
	for _, c := range []struct {
		metrics string
		want    float64
	}{
		{"# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\nkubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"} 0\n", 0},
		{"# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\nkubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"} 1.7650648e+09\n", 1.7650648e+09},
		{"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.7650648e+09\n", 0},
	} {
		got, err := lastSyncOf(strings.NewReader(c.metrics))
		if err != nil || got != c.want {
			t.Errorf("lastSyncOf(%q) = %v, %v; want %v", c.metrics, got, err, c.want)
		}
	}
	if _, err := lastSyncOf(strings.NewReader("not metrics {")); err == nil {
		t.Error("lastSyncOf took malformed metrics")
	}
	if kubeRouterService().After == nil {
		t.Fatal("kube-router's start waits for nothing")
	}
	// Where kube-proxy does not run, nothing is waited for (no address
	// is dialled: the host's address is not a listener).
	h := Host{HostConfig: lab.HostConfig{Name: "worker1", Address: "192.0.2.1"}}
	if err := afterKubeProxySynced(context.Background(), nil, h, func(string) bool { return false }); err != nil {
		t.Errorf("with kube-proxy not running: %v", err)
	}
}

// The images a lab's up recorded are what a later process of the lab
// names, without building them; a record whose archives are gone, or
// none, is not taken.
func TestRecordedImagesAreReused(t *testing.T) {
	c, _ := testCluster(t, "pair")
	dir := t.TempDir()
	tar := filepath.Join(dir, "fixtures.tar")
	if err := os.WriteFile(tar, []byte("oci"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := Images{Pause: "faultline.local/pause:1.0", Tarballs: []string{tar}, Refs: []string{"faultline.local/pause:1.0", "faultline.local/coredns:1.0"}}
	if _, ok := c.recordedImages(); ok {
		t.Fatal("took a record that is not there")
	}
	c.imagesOnce.Do(func() {})
	c.images = want
	if err := c.RecordImages(); err != nil {
		t.Fatal(err)
	}
	got, ok := c.recordedImages()
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded %+v (%v), want %+v", got, ok, want)
	}
	later, _ := testCluster(t, "pair")
	later.Dirs = c.Dirs
	if img, err := later.CoreDNSImage(); err != nil || img != "faultline.local/coredns:1.0" {
		t.Errorf("a later process's CoreDNS image: %q, %v", img, err)
	}
	if err := os.Remove(tar); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.recordedImages(); ok {
		t.Error("took a record whose archive is gone")
	}
}

// kube-proxy's metrics are read over HTTP: a sync reported gives its
// time, a status other than 200 an error naming it.
func TestKubeProxyLastSyncOverHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.Error(w, "no such page", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, "# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge\nkubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family=\"IPv4\"} 42\n")
	}))
	defer srv.Close()
	if at, err := kubeProxyLastSync(context.Background(), srv.URL+"/metrics"); err != nil || at != 42 {
		t.Errorf("got %v, %v; want 42", at, err)
	}
	if _, err := kubeProxyLastSync(context.Background(), srv.URL+"/other"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 gave %v", err)
	}
}
