package pki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
)

// The local backend imports this package, so its tests cannot link it; the
// topologies are read through a backend of the local kind that only parses
// (the certificates need the hosts and addresses, not a lab).
func init() {
	lab.Register(lab.Backend{Kind: "local", Open: func(c *lab.Config) (lab.Lab, error) {
		return nil, errors.New("pki tests open no lab")
	}})
}

func loadLab(t *testing.T, name string) *lab.Config {
	t.Helper()
	cfg, err := lab.LoadConfig(filepath.Join("..", "..", "..", "testdata", "labs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func mustEnsure(t *testing.T, cfg *lab.Config, dir string) *Files {
	t.Helper()
	f, err := Ensure(context.Background(), cfg, dir)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return f
}

func mustCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	c, err := readCert(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// verify checks that the pair's certificate chains to the CA at caPath for
// the usage, and that its key belongs to it (by loading them as a TLS pair).
func verify(t *testing.T, p Pair, caPath string, usage x509.ExtKeyUsage) *x509.Certificate {
	t.Helper()
	if _, err := tls.LoadX509KeyPair(p.Cert, p.Key); err != nil {
		t.Errorf("%s and %s are not a pair: %v", p.Cert, p.Key, err)
	}
	cert := mustCert(t, p.Cert)
	roots := x509.NewCertPool()
	roots.AddCert(mustCert(t, caPath))
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Errorf("%s does not verify against %s for %v: %v", p.Cert, caPath, usage, err)
	}
	return cert
}

func ipStrings(c *x509.Certificate) []string {
	var out []string
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

func wantSubject(t *testing.T, c *x509.Certificate, cn string, o ...string) {
	t.Helper()
	if c.Subject.CommonName != cn {
		t.Errorf("CN = %q, want %q", c.Subject.CommonName, cn)
	}
	if !sameStrings(c.Subject.Organization, o) {
		t.Errorf("%s: O = %v, want %v", cn, c.Subject.Organization, o)
	}
}

func wantSANs(t *testing.T, c *x509.Certificate, dns, ips []string) {
	t.Helper()
	if !sameStrings(c.DNSNames, dns) {
		t.Errorf("%s: DNS SANs = %v, want %v", c.Subject.CommonName, c.DNSNames, dns)
	}
	if !sameStrings(ipStrings(c), ips) {
		t.Errorf("%s: IP SANs = %v, want %v", c.Subject.CommonName, ipStrings(c), ips)
	}
}

// kubeconfigServer loads a kubeconfig with clientcmd, the way every
// component does, and returns the server it points at and its identity.
func kubeconfigServer(t *testing.T, path string) (string, *rest.Config) {
	t.Helper()
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig()
	if err != nil {
		t.Fatalf("client config from %s: %v", path, err)
	}
	return rc.Host, rc
}

func TestLab11Certificates(t *testing.T) {
	cfg := loadLab(t, "lab11")
	f := mustEnsure(t, cfg, t.TempDir())
	ca := f.CA.Cert

	caCert := mustCert(t, ca)
	if !caCert.IsCA || caCert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA certificate cannot sign: IsCA=%v KeyUsage=%v", caCert.IsCA, caCert.KeyUsage)
	}

	if len(f.Etcd) != 5 {
		t.Errorf("%d etcd members, want 5", len(f.Etcd))
	}
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("etcd%d", i)
		addr := fmt.Sprintf("10.231.11.1%d", i)
		m, ok := f.Etcd[name]
		if !ok {
			t.Errorf("no etcd certificates for %s", name)
			continue
		}
		for _, p := range []Pair{m.Server, m.Peer} {
			c := verify(t, p, ca, x509.ExtKeyUsageServerAuth)
			verify(t, p, ca, x509.ExtKeyUsageClientAuth)
			wantSANs(t, c, []string{name, "localhost"}, []string{addr, "127.0.0.1"})
		}
	}

	for _, c := range []struct {
		p      Pair
		usage  x509.ExtKeyUsage
		cn     string
		org    []string
		caPath string
	}{
		{f.APIServerEtcdClient, x509.ExtKeyUsageClientAuth, "kube-apiserver-etcd-client", nil, ca},
		{f.EtcdAdmin, x509.ExtKeyUsageClientAuth, "faultline-etcd-admin", nil, ca},
		{f.APIServerKubeletClient, x509.ExtKeyUsageClientAuth, "kube-apiserver-kubelet-client", []string{"system:masters"}, ca},
		{f.Admin, x509.ExtKeyUsageClientAuth, "faultline-admin", []string{"system:masters"}, ca},
		{f.FrontProxyClient, x509.ExtKeyUsageClientAuth, "front-proxy-client", nil, f.FrontProxyCA.Cert},
	} {
		wantSubject(t, verify(t, c.p, c.caPath, c.usage), c.cn, c.org...)
	}
	// The front-proxy client must not be accepted as a normal client.
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	if _, err := mustCert(t, f.FrontProxyClient.Cert).Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the front-proxy client verifies against the lab CA")
	}

	if len(f.ControlPlane) != 3 {
		t.Errorf("%d control-plane hosts, want 3", len(f.ControlPlane))
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("cp%d", i)
		addr := fmt.Sprintf("10.231.11.2%d", i)
		cp := f.ControlPlane[name]
		c := verify(t, cp.APIServer, ca, x509.ExtKeyUsageServerAuth)
		wantSANs(t, c,
			[]string{name, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			[]string{addr, "127.0.0.1", "10.231.11.10", "10.250.11.1"})
		for path, want := range map[string]string{
			cp.AdminKubeconfig:             "https://" + addr + ":6443",
			cp.ControllerManagerKubeconfig: "https://" + addr + ":6443",
			cp.SchedulerKubeconfig:         "https://" + addr + ":6443",
		} {
			if got, _ := kubeconfigServer(t, path); got != want {
				t.Errorf("%s points at %s, want %s", path, got, want)
			}
		}
		if filepath.Base(cp.AdminKubeconfig) != "admin-"+name+".kubeconfig" {
			t.Errorf("admin kubeconfig of %s is %s", name, cp.AdminKubeconfig)
		}
		_, rc := kubeconfigServer(t, cp.ControllerManagerKubeconfig)
		cert, err := tls.X509KeyPair(rc.CertData, rc.KeyData)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(cert.Certificate[0])
		wantSubject(t, leaf, "system:kube-controller-manager")
		_, rc = kubeconfigServer(t, cp.SchedulerKubeconfig)
		cert, _ = tls.X509KeyPair(rc.CertData, rc.KeyData)
		leaf, _ = x509.ParseCertificate(cert.Certificate[0])
		wantSubject(t, leaf, "system:kube-scheduler")
	}

	// Every host with a kubelet (workers and control-plane hosts), and no
	// etcd-only host.
	var nodes []string
	for name := range f.Nodes {
		nodes = append(nodes, name)
	}
	sort.Strings(nodes)
	if want := []string{"cp1", "cp2", "cp3", "worker1", "worker2", "worker3"}; !slices.Equal(nodes, want) {
		t.Errorf("nodes = %v, want %v", nodes, want)
	}
	for _, h := range cfg.Hosts {
		n, ok := f.Nodes[h.Name]
		if !ok {
			continue
		}
		wantSubject(t, verify(t, n.Client, ca, x509.ExtKeyUsageClientAuth), "system:node:"+h.Name, "system:nodes")
		wantSANs(t, verify(t, n.Serving, ca, x509.ExtKeyUsageServerAuth), []string{h.Name}, []string{h.Address})
		if got, _ := kubeconfigServer(t, n.Kubeconfig); got != "https://10.231.11.10:6443" {
			t.Errorf("kubelet kubeconfig of %s points at %s, want the virtual address", h.Name, got)
		}
	}

	for path, want := range map[string]string{
		f.AdminKubeconfig:                       "https://10.231.11.10:6443",
		f.Nodes["worker1"].KubeProxyKubeconfig:  "https://10.231.11.10:6443",
		f.Nodes["worker2"].KubeRouterKubeconfig: "https://10.231.11.10:6443",
	} {
		if got, _ := kubeconfigServer(t, path); got != want {
			t.Errorf("%s points at %s, want %s", path, got, want)
		}
	}
	wantSubject(t, mustCert(t, filepath.Join(f.Dir, "kube-proxy-worker1.crt")), "faultline:kube-proxy:worker1", KubeProxyGroup)
	wantSubject(t, mustCert(t, filepath.Join(f.Dir, "kube-router-worker2.crt")), "faultline:kube-router:worker2", KubeRouterGroup)

	if _, err := readKey(f.ServiceAccountKey); err != nil {
		t.Errorf("service-account key: %v", err)
	}
}

func TestSecretsAreOwnerOnly(t *testing.T) {
	f := mustEnsure(t, loadLab(t, "lab11"), t.TempDir())
	entries, err := os.ReadDir(f.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var checked int
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".key") && !strings.HasSuffix(name, ".kubeconfig") {
			continue
		}
		checked++
		st, err := os.Stat(filepath.Join(f.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, st.Mode().Perm())
		}
	}
	if checked < 40 {
		t.Errorf("only %d keys and kubeconfigs found", checked)
	}
}

type fileState struct {
	mod     time.Time
	content string
}

func snapshot(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fileState{st.ModTime(), string(data)}
	}
	return out
}

func changed(before, after map[string]fileState) []string {
	var out []string
	for name, a := range after {
		if b, ok := before[name]; !ok || b != a {
			out = append(out, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			out = append(out, name+" (gone)")
		}
	}
	sort.Strings(out)
	return out
}

func baseNames(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	sort.Strings(out)
	return out
}

func TestEnsureIsIdempotent(t *testing.T) {
	cfg := loadLab(t, "lab11")
	dir := t.TempDir()
	first := mustEnsure(t, cfg, dir)
	if len(first.Written) == 0 {
		t.Fatal("the first run wrote nothing")
	}
	before := snapshot(t, dir)

	second := mustEnsure(t, cfg, dir)
	if len(second.Written) != 0 {
		t.Errorf("the second run wrote %v", baseNames(second.Written))
	}
	if diff := changed(before, snapshot(t, dir)); len(diff) != 0 {
		t.Errorf("the second run changed %v", diff)
	}

	// One missing certificate: only its pair is made again.
	if err := os.Remove(filepath.Join(dir, "kubelet-worker2-serving.crt")); err != nil {
		t.Fatal(err)
	}
	third := mustEnsure(t, cfg, dir)
	if got, want := baseNames(third.Written), []string{"kubelet-worker2-serving.crt", "kubelet-worker2-serving.key"}; !slices.Equal(got, want) {
		t.Errorf("after removing one certificate the run wrote %v, want %v", got, want)
	}

	// A key that no longer matches its certificate is replaced with it.
	other, err := os.ReadFile(filepath.Join(dir, "etcd-admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "admin.key"), other, 0o600); err != nil {
		t.Fatal(err)
	}
	fourth := mustEnsure(t, cfg, dir)
	got := baseNames(fourth.Written)
	for _, want := range []string{"admin.crt", "admin.key", "admin.kubeconfig", "admin-cp1.kubeconfig"} {
		if !slices.Contains(got, want) {
			t.Errorf("after breaking admin.key the run wrote %v, missing %s", got, want)
		}
	}
	if slices.Contains(got, "ca.crt") || slices.Contains(got, "kubelet-worker1-client.crt") {
		t.Errorf("after breaking admin.key the run also rewrote unrelated files: %v", got)
	}
}

func TestNewCAReissuesWhatItSigns(t *testing.T) {
	cfg := loadLab(t, "pair")
	dir := t.TempDir()
	mustEnsure(t, cfg, dir)
	if err := os.Remove(filepath.Join(dir, "ca.key")); err != nil {
		t.Fatal(err)
	}
	f := mustEnsure(t, cfg, dir)
	got := baseNames(f.Written)
	for _, want := range []string{"ca.crt", "apiserver-pair-cp.crt", "etcd-pair-cp-server.crt", "kubelet-pair-worker-client.crt", "admin.kubeconfig"} {
		if !slices.Contains(got, want) {
			t.Errorf("after a new CA the run wrote %v, missing %s", got, want)
		}
	}
	for _, keep := range []string{"front-proxy-ca.crt", "front-proxy-client.crt", "sa.key"} {
		if slices.Contains(got, keep) {
			t.Errorf("a new lab CA rewrote %s, which it does not sign", keep)
		}
	}
	verify(t, f.ControlPlane["pair-cp"].APIServer, f.CA.Cert, x509.ExtKeyUsageServerAuth)
}

func TestChangedTopologyReissuesAffectedCertificates(t *testing.T) {
	cfg := loadLab(t, "racks")
	dir := t.TempDir()
	mustEnsure(t, cfg, dir)
	cfg.Network.VirtualIP = "10.231.4.9"
	f := mustEnsure(t, cfg, dir)
	got := baseNames(f.Written)
	for _, want := range []string{"apiserver-m1.crt", "apiserver-m2.crt", "admin.kubeconfig", "kubelet-w1.kubeconfig"} {
		if !slices.Contains(got, want) {
			t.Errorf("after moving the virtual address the run wrote %v, missing %s", got, want)
		}
	}
	if slices.Contains(got, "etcd-etcd1-server.crt") || slices.Contains(got, "admin-m1.kubeconfig") {
		t.Errorf("moving the virtual address rewrote unrelated files: %v", got)
	}
	c := mustCert(t, f.ControlPlane["m1"].APIServer.Cert)
	if !slices.Contains(ipStrings(c), "10.231.4.9") {
		t.Errorf("apiserver-m1 SANs %v lack the new virtual address", ipStrings(c))
	}
}

func TestPairWithoutVirtualAddressUsesTheSoleAPIServer(t *testing.T) {
	cfg := loadLab(t, "pair")
	f := mustEnsure(t, cfg, t.TempDir())
	for _, path := range []string{f.AdminKubeconfig, f.Nodes["pair-worker"].KubeProxyKubeconfig, f.Nodes["pair-worker"].Kubeconfig, f.Nodes["pair-cp"].Kubeconfig} {
		if got, _ := kubeconfigServer(t, path); got != "https://10.231.2.11:6443" {
			t.Errorf("%s points at %s, want the sole API server", path, got)
		}
	}
	c := mustCert(t, f.ControlPlane["pair-cp"].APIServer.Cert)
	wantSANs(t, c,
		[]string{"pair-cp", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]string{"10.231.2.11", "127.0.0.1", "10.250.2.1"})
	if _, ok := f.Etcd["pair-cp"]; !ok {
		t.Error("no etcd certificates for pair-cp")
	}
}

// A real TLS handshake on loopback: an API server certificate serving,
// client certificates from kubeconfigs authenticating with mutual TLS, the
// way kube-apiserver checks them.
func TestKubeconfigsAuthenticateOverMutualTLS(t *testing.T) {
	cfg := loadLab(t, "lab11")
	f := mustEnsure(t, cfg, t.TempDir())
	serving, err := tls.LoadX509KeyPair(f.ControlPlane["cp1"].APIServer.Cert, f.ControlPlane["cp1"].APIServer.Key)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(mustCert(t, f.CA.Cert))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := r.TLS.PeerCertificates[0]
		fmt.Fprintf(w, "%s|%s", peer.Subject.CommonName, strings.Join(peer.Subject.Organization, ","))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	srv.StartTLS()
	defer srv.Close()

	for path, want := range map[string]string{
		f.ControlPlane["cp1"].AdminKubeconfig:  "faultline-admin|system:masters",
		f.Nodes["worker1"].Kubeconfig:          "system:node:worker1|system:nodes",
		f.Nodes["worker1"].KubeProxyKubeconfig: "faultline:kube-proxy:worker1|faultline:kube-proxies",
	} {
		_, rc := kubeconfigServer(t, path)
		// The certificate names 127.0.0.1, so the server's real address
		// verifies; only the port differs from the kubeconfig.
		rc.Host = srv.URL
		client, err := rest.HTTPClientFor(rc)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want {
			t.Errorf("%s authenticated as %q, want %q", filepath.Base(path), body, want)
		}
	}

	// A client certificate from another CA is refused.
	other := mustEnsure(t, cfg, t.TempDir())
	_, rc := kubeconfigServer(t, other.AdminKubeconfig)
	rc.Host = srv.URL
	rc.TLSClientConfig.CAData = nil
	rc.TLSClientConfig.CAFile = f.CA.Cert
	client, err := rest.HTTPClientFor(rc)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := client.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Error("a client certificate from another lab's CA was accepted")
	}
}

func TestEnsureRejectsBadInput(t *testing.T) {
	cfg := loadLab(t, "racks")
	cfg.Network.VirtualIP = ""
	dir := filepath.Join(t.TempDir(), "pki")
	if _, err := Ensure(context.Background(), cfg, dir); err == nil || !strings.Contains(err.Error(), "network.virtualIP") {
		t.Errorf("two control-plane hosts without a virtual address: error = %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("a rejected config created the PKI directory")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Ensure(ctx, loadLab(t, "pair"), t.TempDir()); err == nil {
		t.Error("Ensure ran with a cancelled context")
	}
}
