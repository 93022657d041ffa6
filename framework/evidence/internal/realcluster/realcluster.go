// Package realcluster runs a real etcd and a real kube-apiserver on
// loopback for tests (the binaries `make bins` builds, found under
// $FAULTLINE_CACHE, default /var/cache/faultline), and seeds the subjects
// faultline asks about. Tests skip when the binaries are not built.
package realcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
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
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/evidence"
)

// requestTimeout bounds each request of the clients made here.
const requestTimeout = 1500 * time.Millisecond

// binary finds a binary in the build cache. The framework must not import
// the local lab's binpaths package (framework never imports a backend), so
// the cache layout is repeated here.
func binary(t testing.TB, dir, name string) string {
	root := os.Getenv("FAULTLINE_CACHE")
	if root == "" {
		root = "/var/cache/faultline"
	}
	p := filepath.Join(root, "bins", dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s not built (%v): run make bins", name, err)
	}
	return p
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a started binary; it is killed (with its process group) and
// waited for at cleanup, whatever state a test left it in.
type Process struct {
	cmd *exec.Cmd
}

func start(t testing.TB, logName string, path string, args ...string) *Process {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), logName+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", logName, err)
	}
	p := &Process{cmd: cmd}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s log tail:\n%s", logName, b)
		}
	})
	return p
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

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the process.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) {
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

type Cluster struct {
	EtcdURL    string
	Etcd       *Process
	APIServer  *Process
	Client     kubernetes.Interface
	EtcdClient *clientv3.Client
	config     *rest.Config
}

// startCluster starts one etcd and one kube-apiserver (token auth,
// AlwaysAllow, protobuf storage as by default) on loopback.
func Start(t testing.TB) *Cluster {
	etcdBin := binary(t, "etcd-v3.6.8", "etcd")
	apiBin := binary(t, "kubernetes-v1.36.3", "kube-apiserver")
	dir := t.TempDir()
	cp, pp, ap := freePort(t), freePort(t), freePort(t)
	rc := &Cluster{EtcdURL: fmt.Sprintf("http://127.0.0.1:%d", cp)}
	peer := fmt.Sprintf("http://127.0.0.1:%d", pp)
	// A member name of its own: free ports are picked before they are
	// bound, so a test running at the same time could take one; the name
	// is how Start tells its etcd from another.
	member := fmt.Sprintf("e1-%d-%d", os.Getpid(), cp)
	rc.Etcd = start(t, "etcd", etcdBin, "--name", member, "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", rc.EtcdURL, "--advertise-client-urls", rc.EtcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", member+"="+peer, "--log-level", "warn")

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalECPrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	saKey := write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	saPub := write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	token := "faultline-evidence-test-token"
	tokens := write("tokens.csv", []byte(token+",admin,1,\"system:masters\"\n"))
	rc.APIServer = start(t, "kube-apiserver", apiBin,
		"--etcd-servers", rc.EtcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ap), "--cert-dir", filepath.Join(dir, "certs"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-cluster-ip-range", "10.250.31.0/24",
		"--token-auth-file", tokens, "--authorization-mode", "AlwaysAllow",
		"--disable-admission-plugins", "ServiceAccount",
		"--enable-priority-and-fairness=false", "--v", "0")

	cfg := &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", ap),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Timeout:         requestTimeout,
		QPS:             1000, Burst: 1000,
	}
	rc.Client, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc.config = cfg
	rc.EtcdClient, err = clientv3.New(clientv3.Config{Endpoints: []string{rc.EtcdURL}, DialTimeout: requestTimeout, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.EtcdClient.Close() })
	mctx, mcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer mcancel()
	for {
		ml, err := rc.EtcdClient.MemberList(mctx)
		if err == nil {
			if len(ml.Members) != 1 || ml.Members[0].Name != member {
				t.Fatalf("the etcd at %s is not this test's (members %v): another process took its port", rc.EtcdURL, ml.Members)
			}
			break
		}
		if mctx.Err() != nil {
			t.Fatalf("etcd at %s did not answer: %v", rc.EtcdURL, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	ready := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: time.Second}
	deadline := time.Now().Add(90 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := ready.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after 90s (last: %v)", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return rc
}

// seed creates the subjects: worker1 Ready with a taint, its Lease, the
// stateful pod running on worker1, and the test service's EndpointSlice
// with one ready and one not-ready address.
func (rc *Cluster) Seed(t testing.TB, s evidence.Subjects) {
	ctx := context.Background()
	cs := rc.Client
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.PodNamespace}}, metav1.CreateOptions{})
	must("namespace", err)
	hb := metav1.NewTime(time.Now().Add(-3 * time.Second).Truncate(time.Second))
	added := metav1.NewTime(time.Now().Add(-2 * time.Second).Truncate(time.Second))
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.Node},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added},
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule},
		}},
	}, metav1.CreateOptions{})
	must("node", err)
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
		LastHeartbeatTime: hb, LastTransitionTime: added,
	}}
	_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	must("node status", err)
	// kube-node-lease is made by the API server itself; wait for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: s.Node},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(s.Node), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)},
			},
		}, metav1.CreateOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	must("lease", err)
	pod, err := cs.CoreV1().Pods(s.PodNamespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: s.PodName, Labels: map[string]string{"app": "stateful"}},
		Spec: corev1.PodSpec{
			NodeName:   s.Node,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
	}, metav1.CreateOptions{})
	must("pod", err)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.PodIP = "10.244.1.5"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	_, err = cs.CoreV1().Pods(s.PodNamespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	must("pod status", err)
	_, err = cs.CoreV1().Services(s.ServiceNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.ServiceName},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	must("service", err)
	_, err = cs.DiscoveryV1().EndpointSlices(s.ServiceNamespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: s.ServiceName + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: s.ServiceName}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}, NodeName: ptr.To(s.Node)},
			{Addresses: []string{"10.244.2.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
	}, metav1.CreateOptions{})
	must("endpointslice", err)
	// An EndpointSlice of another service in the same namespace, which the
	// etcd source must leave out.
	_, err = cs.DiscoveryV1().EndpointSlices(s.ServiceNamespace).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "other-xyz", Labels: map[string]string{discoveryv1.LabelServiceName: "other"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.3.3"}}},
	}, metav1.CreateOptions{})
	must("other endpointslice", err)
}

// SecondClient is another client of the same API server (its own
// connections), for a test that needs two sources.
func (rc *Cluster) SecondClient(t testing.TB) kubernetes.Interface {
	cfg := rest.CopyConfig(rc.config)
	cfg.UserAgent = "faultline-second-client"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// Kubeconfig writes a kubeconfig for the API server to dir.
func (rc *Cluster) Kubeconfig(t testing.TB, dir string) string {
	p := filepath.Join(dir, "kubeconfig")
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: u
  user:
    token: %s
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, rc.config.Host, rc.config.BearerToken)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
