// Package apiservertest runs a real etcd, kube-apiserver and (for namespace
// deletion) a kube-controller-manager running only the namespace
// controller, on loopback, for tests of code that talks to the Kubernetes
// API. There are no nodes: a test that needs one registers it.
//
// The binaries come from $FAULTLINE_KUBE_BINS (a directory holding etcd,
// kube-apiserver and kube-controller-manager) or from the local lab's
// build cache; without them the test is skipped.
package apiservertest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab/guard"
	"github.com/faultline/faultline/lab/internal/sshdtest"
)

// Default locations in the local lab's build cache, at the pinned versions.
var defaultBins = map[string]string{
	"etcd":                    "/var/cache/faultline/bins/etcd-v3.6.8/etcd",
	"kube-apiserver":          "/var/cache/faultline/bins/kubernetes-v1.36.3/kube-apiserver",
	"kube-controller-manager": "/var/cache/faultline/bins/kubernetes-v1.36.3/kube-controller-manager",
}

func binary(t testing.TB, name string) string {
	t.Helper()
	path := defaultBins[name]
	if dir := os.Getenv("FAULTLINE_KUBE_BINS"); dir != "" {
		path = filepath.Join(dir, name)
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s at %s (set FAULTLINE_KUBE_BINS to a directory with etcd, kube-apiserver, kube-controller-manager)", name, path)
	}
	return path
}

// Cluster is a running control plane without nodes.
type Cluster struct {
	Kubeconfig string
	Kube       kubernetes.Interface
}

// Start runs the control plane until t ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	etcdBin, apiBin, kcmBin := binary(t, "etcd"), binary(t, "kube-apiserver"), binary(t, "kube-controller-manager")
	dir := t.TempDir()
	ports := freePorts(t, 3)
	client, peer, secure := ports[0], ports[1], ports[2]
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	start(t, dir, "etcd", etcdBin, "--name", "e1", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "e1="+peerURL, "--log-level", "warn")

	token := randomHex(t)
	write(t, filepath.Join(dir, "tokens.csv"), token+",admin,admin,system:masters\n")
	writeServiceAccountKeys(t, dir)
	start(t, dir, "kube-apiserver", apiBin, "--etcd-servers", clientURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(secure),
		"--cert-dir", filepath.Join(dir, "certs"), "--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "AlwaysAllow",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range", "10.250.99.0/24", "--v", "0")

	kubeconfig := filepath.Join(dir, "kubeconfig")
	write(t, kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}
contexts:
- name: admin
  context: {cluster: test, user: admin}
current-context: admin
users:
- name: admin
  user: {token: %s}
`, secure, token))
	kube, err := guard.Client(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, kube, dir)

	start(t, dir, "kube-controller-manager", kcmBin, "--kubeconfig", kubeconfig,
		"--controllers", "namespace", "--leader-elect=false", "--use-service-account-credentials=false",
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--v", "0")
	return &Cluster{Kubeconfig: kubeconfig, Kube: kube}
}

func start(t testing.TB, dir, name, bin string, args ...string) {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	log.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		sshdtest.KillTree(cmd.Process.Pid)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) did not exit after SIGKILL", name, cmd.Process.Pid)
		}
	})
}

func waitReady(t testing.TB, kube kubernetes.Interface, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Raw()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			log, _ := os.ReadFile(filepath.Join(dir, "kube-apiserver.log"))
			if len(log) > 4000 {
				log = log[len(log)-4000:]
			}
			t.Fatalf("kube-apiserver not ready within 2m: %v\n%s", err, log)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func writeServiceAccountKeys(t testing.TB, dir string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sa.key"), string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	write(t, filepath.Join(dir, "sa.pub"), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var held []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range held {
		ln.Close()
	}
	return ports
}
