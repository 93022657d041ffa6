//go:build bins

package source

// These tests run a real etcd and a real kube-apiserver on loopback (the
// binaries `make bins` builds, found under $FAULTLINE_CACHE, default
// /var/cache/faultline) and read them with the API server and etcd sources.
// They need no lab, so they run wherever the binaries are built:
//
//	go test -tags bins ./framework/evidence/source/
//
// With FAULTLINE_CAPTURE=1 they also write the raw etcd values and the
// objects they read to testdata/ (that is where the etcd protobuf testdata
// of the unit tests comes from).

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/evidence"
)

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
type process struct {
	cmd *exec.Cmd
}

func start(t testing.TB, logName string, path string, args ...string) *process {
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
	p := &process{cmd: cmd}
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

func (p *process) signal(t testing.TB, sig syscall.Signal) {
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

type realCluster struct {
	etcdURL   string
	etcd      *process
	apiserver *process
	client    kubernetes.Interface
	etcdc     *clientv3.Client
}

// startCluster starts one etcd and one kube-apiserver (token auth,
// AlwaysAllow, protobuf storage as by default) on loopback.
func startCluster(t testing.TB) *realCluster {
	etcdBin := binary(t, "etcd-v3.6.8", "etcd")
	apiBin := binary(t, "kubernetes-v1.36.3", "kube-apiserver")
	dir := t.TempDir()
	cp, pp, ap := freePort(t), freePort(t), freePort(t)
	rc := &realCluster{etcdURL: fmt.Sprintf("http://127.0.0.1:%d", cp)}
	peer := fmt.Sprintf("http://127.0.0.1:%d", pp)
	rc.etcd = start(t, "etcd", etcdBin, "--name", "e1", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", rc.etcdURL, "--advertise-client-urls", rc.etcdURL,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e1="+peer, "--log-level", "warn")

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
	rc.apiserver = start(t, "kube-apiserver", apiBin,
		"--etcd-servers", rc.etcdURL,
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
		Timeout:         DefaultRequestTimeout,
		QPS:             1000, Burst: 1000,
	}
	rc.client, err = kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rc.etcdc, err = NewEtcdClient(rc.etcdURL, nil, DefaultRequestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.etcdc.Close() })

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
func (rc *realCluster) seed(t testing.TB, s evidence.Subjects) {
	ctx := context.Background()
	cs := rc.client
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

// capture writes the raw etcd values of the subjects to testdata when
// FAULTLINE_CAPTURE=1.
func (rc *realCluster) capture(t testing.TB, s evidence.Subjects) {
	if os.Getenv("FAULTLINE_CAPTURE") != "1" {
		return
	}
	ctx := context.Background()
	k := KeysFor(s)
	for file, key := range map[string]string{"node.pb": k.Node, "lease.pb": k.Lease, "pod.pb": k.Pod} {
		resp, err := rc.etcdc.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("capturing %s: %v (%d values)", key, err, len(resp.Kvs))
		}
		if err := os.WriteFile(filepath.Join("testdata", "etcd", file), resp.Kvs[0].Value, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := rc.etcdc.Get(ctx, k.EndpointSlices, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range resp.Kvs {
		name := filepath.Base(string(x.Key))
		if err := os.WriteFile(filepath.Join("testdata", "etcd", "endpointslice-"+name+".pb"), x.Value, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The kubelet's /pods is a v1 PodList of the pods it runs; this one is
	// the API server's pod wrapped as such.
	pod, err := rc.client.CoreV1().Pods(s.PodNamespace).Get(ctx, s.PodName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{*pod}}
	b, _ := json.MarshalIndent(list, "", "  ")
	if err := os.WriteFile(filepath.Join("testdata", "kubelet", "pods-apiserver-pod.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func valueOf(t testing.TB, a evidence.Answer) string {
	t.Helper()
	if !a.Readable() {
		t.Fatalf("answer is %s: %s", a.State, a.Reason)
	}
	return string(a.Value)
}

func TestAPIServerAndEtcdAgreeOnARealCluster(t *testing.T) {
	rc := startCluster(t)
	s := evidence.DefaultSubjects
	rc.seed(t, s)
	rc.capture(t, s)

	api := NewAPIServer("apiserver/local", rc.client, s)
	ser := NewEtcd("e1", rc.etcdc, Serializable, s)
	lin := NewEtcd("e1", rc.etcdc, Linearizable, s)
	round, err := evidence.NewRound([]evidence.Reader{api, ser, lin})
	if err != nil {
		t.Fatal(err)
	}
	snap := round.Take(context.Background())
	if err := snap.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, q := range api.Questions() {
		want := valueOf(t, snap.Get(api.Source(), q))
		for _, src := range []evidence.Source{ser.Source(), lin.Source()} {
			if got := valueOf(t, snap.Get(src, q)); got != want {
				t.Errorf("%s %s = %s, the API server says %s", src, q, got, want)
			}
			if rv, arv := snap.Get(src, q).ResourceVersion, snap.Get(api.Source(), q).ResourceVersion; q != evidence.ServiceEndpoints && rv != arv {
				t.Errorf("%s %s at resourceVersion %s, the API server at %s", src, q, rv, arv)
			}
		}
	}
	var ready evidence.NodeReadyValue
	if err := snap.Get(lin.Source(), evidence.NodeReady).Decode(&ready); err != nil || ready.Status != "Unknown" || ready.Reason != "NodeStatusUnknown" {
		t.Errorf("etcd's worker1 Ready = %+v, %v", ready, err)
	}
	var eps evidence.EndpointsValue
	if err := snap.Get(ser.Source(), evidence.ServiceEndpoints).Decode(&eps); err != nil ||
		fmt.Sprint(eps.Ready, eps.NotReady, eps.Slices) != "[10.244.1.5] [10.244.2.7] 1" {
		t.Errorf("etcd's endpoints = %+v, %v", eps, err)
	}
	if a := snap.Get(api.Source(), evidence.PodRunningHere); a.State != evidence.NotAsked {
		t.Errorf("the API server was asked a runtime question: %+v", a)
	}
}

func TestAFrozenAPIServerIsUnreadableWhileEtcdAnswersInTheSameRound(t *testing.T) {
	rc := startCluster(t)
	s := evidence.DefaultSubjects
	rc.seed(t, s)
	api := NewAPIServer("apiserver/local", rc.client, s)
	ser := NewEtcd("e1", rc.etcdc, Serializable, s)
	const timeout = time.Second
	round, err := evidence.NewRound([]evidence.Reader{api, ser}, evidence.WithTimeouts(func(evidence.Reader) time.Duration { return timeout }))
	if err != nil {
		t.Fatal(err)
	}
	rc.apiserver.signal(t, syscall.SIGSTOP)
	defer rc.apiserver.signal(t, syscall.SIGCONT)
	start := time.Now()
	snap := round.Take(context.Background())
	took := time.Since(start)
	for _, q := range api.Questions() {
		a := snap.Get(api.Source(), q)
		if a.Readable() {
			t.Errorf("a frozen API server answered %s: %s", q, a.Value)
		} else if a.Reason[:len("timeout")] != "timeout" {
			t.Errorf("%s unreadable for %q, want a timeout", q, a.Reason)
		}
		valueOf(t, snap.Get(ser.Source(), q))
		if at := snap.Get(ser.Source(), q).ReadAt; at.Sub(start) > timeout {
			t.Errorf("etcd's answer to %s came %s after the round began, after the frozen server's timeout", q, at.Sub(start))
		}
	}
	// Not a speed check: the round must end once the timeout passed, not
	// wait for the frozen server (which never answers while stopped).
	if took > timeout+2*graceAfterTimeoutForTest {
		t.Errorf("the round took %s with a %s timeout", took, timeout)
	}

	rc.apiserver.signal(t, syscall.SIGCONT)
	rc.etcd.signal(t, syscall.SIGSTOP)
	defer rc.etcd.signal(t, syscall.SIGCONT)
	snap = round.Take(context.Background())
	for _, q := range ser.Questions() {
		if a := snap.Get(ser.Source(), q); a.Readable() {
			t.Errorf("a frozen etcd answered %s", q)
		}
	}
}

// graceAfterTimeoutForTest is how much later than its timeout a round may
// end on this shared machine without the test calling it a hang.
const graceAfterTimeoutForTest = 2 * time.Second
