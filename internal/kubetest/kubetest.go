// Package kubetest runs real etcd and Kubernetes binaries on loopback for
// tests of code that talks to them: one started process at a time
// (Start), or a control plane of one etcd member and one kube-apiserver,
// with the namespace controller when a test deletes namespaces
// (StartControlPlane).
//
// The binaries are the ones `make bins` builds into the cache
// (${FAULTLINE_CACHE:-/var/cache/faultline}/bins/<upstream>-<version>/);
// a test skips, naming the build command, when they are not there.
// Everything started here is killed with its process group and waited for
// when the test ends, whatever state the test left it in (even stopped).
package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/faultline/faultline/lab/local/binpaths"
)

// Upstreams of the cache, at the versions the build pins.
var (
	Kubernetes = "kubernetes-" + binpaths.KubernetesVersion
	Etcd       = "etcd-" + binpaths.EtcdVersion
)

// Binary is the cached binary name of upstream (Kubernetes or Etcd); the
// test is skipped when it is not built.
func Binary(t testing.TB, upstream, name string) string {
	t.Helper()
	p := filepath.Join(binpaths.CacheDir(), "bins", upstream, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not built (%v): run %s", name, err, binpaths.BuildCommand)
	}
	return p
}

// FreePort is a loopback TCP port free at the time of the call. Another
// process may take it before it is bound: StartControlPlane checks that the
// etcd it reaches is its own.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreePortPair returns a free port on loopback whose next port is free
// too, for a process that listens on both (the history store's etcd
// takes its peer port one above its client port). Each is free when
// asked, as FreePort's is.
func FreePortPair(t testing.TB) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		next, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+1))
		l.Close()
		if err == nil {
			next.Close()
			return port
		}
	}
	t.Fatal("no free pair of ports on loopback in 50 tries")
	return 0
}

// Process is a binary started by Start.
type Process struct {
	cmd *exec.Cmd
	// Log is the file holding the process's output.
	Log string
}

// Start runs path in a process group of its own, its output in a log file
// whose tail is printed if the test fails; at cleanup the group is
// continued (in case a test stopped it), killed and waited for.
func Start(t testing.TB, name, path string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Pdeathsig: a test binary killed outright must not leave the
	// process running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	log.Close()
	p := &Process{cmd: cmd, Log: logPath}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s log tail:\n%s", name, b)
		}
	})
	return p
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.Pid(), sig); err != nil {
		t.Fatalf("signal %v to %d: %v", sig, p.Pid(), err)
	}
}

// Freeze stops the process with SIGSTOP and waits until every one of its
// threads is stopped: kill(2) returns before the group stop is complete,
// and a thread still running may answer a request in between.
func (p *Process) Freeze(t testing.TB) {
	t.Helper()
	p.Signal(t, syscall.SIGSTOP)
	deadline := time.Now().Add(10 * time.Second)
	for {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", p.Pid()))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("listing the threads of %d: %v", p.Pid(), err)
		}
		stopped := 0
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				continue
			}
			// The state follows the parenthesised command name.
			if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
				stopped++
			}
		}
		if stopped == len(tasks) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d threads of %d stopped after SIGSTOP", stopped, len(tasks), p.Pid())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Options shape a control plane.
type Options struct {
	// NamespaceController also runs a kube-controller-manager with only the
	// namespace controller, for tests that delete namespaces.
	NamespaceController bool
	// RequestTimeout bounds each request of Client (default 5s).
	RequestTimeout time.Duration
	// AuthorizationConfig, when set, is an AuthorizationConfiguration
	// (apiserver.config.k8s.io) the API server reads its authorizers
	// from (--authorization-config, applied again whenever the file
	// changes) instead of allowing everything; its path is
	// ControlPlane.AuthorizationConfigFile. The admin is in
	// system:masters, which no authorizer is asked about.
	AuthorizationConfig string
}

// ControlPlane is one etcd member and one kube-apiserver on loopback:
// token authentication for an admin in system:masters, AlwaysAllow
// authorization, objects stored as protobuf as by default, no nodes.
type ControlPlane struct {
	EtcdURL    string
	Etcd       *Process
	APIServer  *Process
	Config     *rest.Config
	Client     kubernetes.Interface
	EtcdClient *clientv3.Client
	// Kubeconfig is a kubeconfig file for Config.
	Kubeconfig string
	// AuthorizationConfigFile is the file the API server reads its
	// authorizers from, where Options.AuthorizationConfig gave one.
	AuthorizationConfigFile string
	// Port is the API server's port on 127.0.0.1.
	Port int
}

// StartControlPlane starts a control plane that lives until t ends and
// returns when the API server is ready.
func StartControlPlane(t testing.TB, o Options) *ControlPlane {
	t.Helper()
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 5 * time.Second
	}
	etcdBin := Binary(t, Etcd, "etcd")
	apiBin := Binary(t, Kubernetes, "kube-apiserver")
	kcmBin := ""
	if o.NamespaceController {
		kcmBin = Binary(t, Kubernetes, "kube-controller-manager")
	}
	dir := t.TempDir()
	clientPort, peerPort, apiPort := FreePort(t), FreePort(t), FreePort(t)
	cp := &ControlPlane{EtcdURL: fmt.Sprintf("http://127.0.0.1:%d", clientPort)}
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	// A member name of its own: the name is how the check below tells this
	// etcd from one another test started on a port taken in between.
	member := fmt.Sprintf("kubetest-%d-%d", os.Getpid(), clientPort)
	cp.Etcd = Start(t, "etcd", etcdBin, "--name", member, "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", cp.EtcdURL, "--advertise-client-urls", cp.EtcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", member+"="+peer, "--log-level", "warn")

	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	saKey := write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	saPub := write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	token := hex.EncodeToString(secret)
	tokens := write("tokens.csv", []byte(token+",admin,1,\"system:masters\"\n"))
	authz := []string{"--authorization-mode", "AlwaysAllow"}
	if o.AuthorizationConfig != "" {
		cp.AuthorizationConfigFile = write("authorization-config.yaml", []byte(o.AuthorizationConfig))
		authz = []string{"--authorization-config", cp.AuthorizationConfigFile}
	}
	cp.Port = apiPort
	cp.APIServer = Start(t, "kube-apiserver", apiBin, append(authz,
		"--etcd-servers", cp.EtcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(apiPort), "--cert-dir", filepath.Join(dir, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.250.31.0/24",
		"--token-auth-file", tokens,
		// No controller makes service-account tokens here.
		"--disable-admission-plugins", "ServiceAccount",
		"--enable-priority-and-fairness=false", "--v", "0")...)

	cp.Config = &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", apiPort),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Timeout:         o.RequestTimeout,
		QPS:             1000, Burst: 1000,
	}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		t.Fatal(err)
	}
	if cp.EtcdClient, err = clientv3.New(clientv3.Config{Endpoints: []string{cp.EtcdURL}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.EtcdClient.Close() })
	waitOwnEtcd(t, cp.EtcdClient, cp.EtcdURL, member)
	cp.waitReady(t, 2*time.Minute)
	cp.Kubeconfig = write("kubeconfig", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: admin
  context: {cluster: kubetest, user: admin}
current-context: admin
`, cp.Config.Host, token)))
	if o.NamespaceController {
		Start(t, "kube-controller-manager", kcmBin, "--kubeconfig", cp.Kubeconfig,
			"--controllers", "namespace", "--leader-elect=false", "--use-service-account-credentials=false",
			"--bind-address", "127.0.0.1", "--secure-port", "0", "--v", "0")
	}
	return cp
}

// waitOwnEtcd waits until the etcd at url answers through c, and fails
// the test when its one member is not named member: another process took
// its port in between.
func waitOwnEtcd(t testing.TB, c *clientv3.Client, url, member string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ml, err := c.MemberList(ctx)
		if err == nil {
			if len(ml.Members) != 1 || ml.Members[0].Name != member {
				t.Fatalf("the etcd at %s is not this test's (members %v): another process took its port", url, ml.Members)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("etcd at %s did not answer: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// StartEtcd runs a one-member etcd on loopback for the test, its member
// named after name, and returns its client URL and a client closed when
// the test ends.
func StartEtcd(t testing.TB, name string) (string, *clientv3.Client) {
	t.Helper()
	etcdBin := Binary(t, Etcd, "etcd")
	dir := t.TempDir()
	clientPort, peerPort := FreePort(t), FreePort(t)
	url, peer := fmt.Sprintf("http://127.0.0.1:%d", clientPort), fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	member := fmt.Sprintf("%s-%d-%d", name, os.Getpid(), clientPort)
	Start(t, "etcd", etcdBin, "--name", member, "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", member+"="+peer, "--log-level", "warn")
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitOwnEtcd(t, c, url, member)
	return url, c
}

func (cp *ControlPlane) waitReady(t testing.TB, within time.Duration) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	deadline := time.Now().Add(within)
	for {
		req, _ := http.NewRequest(http.MethodGet, cp.Config.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+cp.Config.BearerToken)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("/readyz: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after %s (last: %v)", within, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// BuildHere compiles the program in the test's own directory, statically,
// as name in a temporary directory, and returns its path.
func BuildHere(t testing.TB, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}
