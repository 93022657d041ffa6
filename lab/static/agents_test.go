package static

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/faultline/faultline/lab"
)

// clientCertPEM is a self-signed client certificate for cn in orgs.
func clientCertPEM(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// writeKubeconfig writes a kubeconfig whose current user is u.
func writeKubeconfig(t *testing.T, file string, u *clientcmdapi.AuthInfo) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://10.0.0.10:6443"}
	cfg.AuthInfos["agent"] = u
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "agent"}
	cfg.CurrentContext = "ctx"
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
}

// agentLab is a static lab of two workers and a control-plane host whose
// kube-proxy kubeconfigs the lab file places under dir/<host>/.
func agentLab(t *testing.T, dir, layout string) *Lab {
	cfg := &lab.Config{Name: "fleet", Kind: Kind, Kubernetes: lab.KubernetesSettings{
		Agents:           layout,
		AgentKubeconfigs: map[string]string{lab.ServiceKubeProxy: filepath.Join(dir, "{host}", "kube-proxy.conf")},
	}}
	l := New(cfg, Options{})
	mounts := &mountTable{path: "/dev/null"}
	for _, h := range []struct {
		name string
		role lab.Role
	}{{"cp1", lab.RoleControlPlane}, {"w1", lab.RoleWorker}, {"w2", lab.RoleWorker}} {
		l.testHosts = append(l.testHosts, shellNode{name: h.name, roles: []lab.Role{h.role}, mounts: mounts})
	}
	return l
}

// Each worker's kube-proxy is who its kubeconfig's client certificate
// says, embedded or in a file beside it, and the kubeconfig is the lab
// file's path with the host's name.
func TestAgentIdentityFromTheKubeconfigOnTheHost(t *testing.T) {
	dir := t.TempDir()
	writeKubeconfig(t, filepath.Join(dir, "w1", "kube-proxy.conf"), &clientcmdapi.AuthInfo{ClientCertificateData: clientCertPEM(t, "system:kube-proxy:w1", "system:node-proxier")})
	writeKubeconfig(t, filepath.Join(dir, "w2", "kube-proxy.conf"), &clientcmdapi.AuthInfo{ClientCertificate: "kp.crt"})
	if err := os.WriteFile(filepath.Join(dir, "w2", "kp.crt"), clientCertPEM(t, "system:kube-proxy:w2", "system:node-proxier"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := agentLab(t, dir, "")

	path, err := l.AgentKubeconfig("w1", lab.ServiceKubeProxy)
	if err != nil || path != filepath.Join(dir, "w1", "kube-proxy.conf") {
		t.Errorf("AgentKubeconfig(w1) = %q, %v", path, err)
	}
	for node, user := range map[string]string{"w1": "system:kube-proxy:w1", "w2": "system:kube-proxy:w2"} {
		id, err := l.AgentIdentity(node, lab.ServiceKubeProxy)
		if err != nil {
			t.Fatalf("AgentIdentity(%s): %v", node, err)
		}
		if id.User != user || !slices.Equal(id.Groups, []string{"system:node-proxier", "system:authenticated"}) {
			t.Errorf("AgentIdentity(%s) = %+v, want %s in system:node-proxier", node, id, user)
		}
	}
}

// Where the lab cannot tell one node's agent from another's, or does not
// know, it says so: unsupported, never an identity that would refuse more
// or other than the one agent.
func TestAgentIdentityUnsupportedWhereItCannotTell(t *testing.T) {
	dir := t.TempDir()
	shared := clientCertPEM(t, "system:kube-proxy", "system:node-proxier")
	writeKubeconfig(t, filepath.Join(dir, "w1", "kube-proxy.conf"), &clientcmdapi.AuthInfo{ClientCertificateData: shared})
	writeKubeconfig(t, filepath.Join(dir, "w2", "kube-proxy.conf"), &clientcmdapi.AuthInfo{ClientCertificateData: shared})
	l := agentLab(t, dir, "")
	_, err := l.AgentIdentity("w1", lab.ServiceKubeProxy)
	if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "as w2's does") {
		t.Errorf("one certificate on both workers: %v, want unsupported naming w2", err)
	}

	writeKubeconfig(t, filepath.Join(dir, "w1", "kube-proxy.conf"), &clientcmdapi.AuthInfo{ClientCertificateData: clientCertPEM(t, "system:node:w1", "system:nodes")})
	writeKubeconfig(t, filepath.Join(dir, "w2", "kube-proxy.conf"), &clientcmdapi.AuthInfo{ClientCertificateData: clientCertPEM(t, "system:node:w2", "system:nodes")})
	_, err = l.AgentIdentity("w1", lab.ServiceKubeProxy)
	if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "refuse the kubelet too") {
		t.Errorf("kube-proxy with the kubelet's credentials: %v, want unsupported", err)
	}

	writeKubeconfig(t, filepath.Join(dir, "w2", "kube-proxy.conf"), &clientcmdapi.AuthInfo{Token: "secret"})
	_, err = l.AgentIdentity("w2", lab.ServiceKubeProxy)
	if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "no client certificate") {
		t.Errorf("a token: %v, want unsupported", err)
	}

	if _, err := l.AgentIdentity("w1", lab.ServicePolicyAgent); !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "kubernetes.agentKubeconfigs.kube-router") {
		t.Errorf("an agent the file names no kubeconfig for: %v, want unsupported naming the field", err)
	}
	if _, err := l.AgentKubeconfig("cp1", lab.ServiceKubeProxy); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("a control-plane host: %v, want unsupported", err)
	}
	if _, err := agentLab(t, dir, lab.AgentsAsPods).AgentIdentity("w1", lab.ServiceKubeProxy); !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "run as pods") {
		t.Errorf("agents as pods: %v, want unsupported", err)
	}
}

// A worker whose kubeconfig cannot be read leaves unknown whether the
// other's identity is its own: an error, not unsupported and not an
// identity.
func TestAgentIdentityUnknownWhenAnotherWorkerCannotBeRead(t *testing.T) {
	dir := t.TempDir()
	writeKubeconfig(t, filepath.Join(dir, "w1", "kube-proxy.conf"), &clientcmdapi.AuthInfo{ClientCertificateData: clientCertPEM(t, "system:kube-proxy:w1")})
	l := agentLab(t, dir, "")
	_, err := l.AgentIdentity("w1", lab.ServiceKubeProxy)
	if err == nil || errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "unknown") || !strings.Contains(err.Error(), "w2") {
		t.Errorf("w2's kubeconfig missing: %v, want an error saying whether w1's identity is shared is unknown", err)
	}
}

// listenerEnv makes the test binary, run again, listen on a loopback port
// and print it: a process whose command line the script reads.
const listenerEnv = "FAULTLINE_STATIC_TEST_LISTENER"

func TestListenerProcess(t *testing.T) {
	if os.Getenv(listenerEnv) == "" {
		t.Skip("the process listener starts, not a test")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(2)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	time.Sleep(time.Minute)
	os.Exit(0)
}

// listener starts a process listening on loopback with args on its
// command line and returns its port.
func listener(t *testing.T, args ...string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestListenerProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), listenerEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var port int
	if _, err := fmt.Fscan(out, &port); err != nil {
		t.Fatal(err)
	}
	return port
}

// The API server's authorization configuration is the file its own
// command line names; a server without one cannot be refused a watch
// (unsupported), and a port nothing listens on is an error.
func TestAuthorizationConfigFileFromTheCommandLine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("ss shows another process's pid to root only")
	}
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("no ss")
	}
	withFlag := listener(t, "--authorization-config=/etc/kubernetes/authz.yaml")
	without := listener(t, "--authorization-mode=Node,RBAC")
	at := func(port int) *Lab {
		l := New(&lab.Config{Name: "fleet", Kind: Kind, Network: lab.Network{APIServerPort: port}}, Options{})
		l.testHosts = []lab.Host{
			shellNode{name: "cp1", roles: []lab.Role{lab.RoleControlPlane}, mounts: &mountTable{path: "/dev/null"}},
			shellNode{name: "w1", roles: []lab.Role{lab.RoleWorker}, mounts: &mountTable{path: "/dev/null"}},
		}
		return l
	}
	if f, err := at(withFlag).AuthorizationConfigFile("cp1"); err != nil || f != "/etc/kubernetes/authz.yaml" {
		t.Errorf("a server with --authorization-config: %q, %v", f, err)
	}
	if _, err := at(without).AuthorizationConfigFile("cp1"); !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "without --authorization-config") {
		t.Errorf("a server without it: %v, want unsupported", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if _, err := at(free).AuthorizationConfigFile("cp1"); err == nil || errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "nothing listens") {
		t.Errorf("nothing listening: %v, want an error", err)
	}
	if _, err := at(withFlag).AuthorizationConfigFile("w1"); err == nil || !strings.Contains(err.Error(), "runs no API server") {
		t.Errorf("a worker: %v, want an error", err)
	}
}
