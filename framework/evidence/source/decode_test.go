package source

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/faultline/faultline/framework/evidence"
)

func readTestdata(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeStoredNode(t *testing.T) {
	d := NewDecoder()
	node, err := DecodeAs[*corev1.Node](d, readTestdata(t, "etcd", "node.pb"))
	if err != nil {
		t.Fatal(err)
	}
	r := NodeReadyOf(node)
	if !r.Exists || r.Status != "Unknown" || r.Reason != "NodeStatusUnknown" || r.LastHeartbeatTime.IsZero() || r.LastTransitionTime.IsZero() {
		t.Errorf("Ready = %+v", r)
	}
	// The third taint is the API server's own: TaintNodesByCondition adds
	// not-ready:NoSchedule to every node it admits.
	taints := TaintsOf(node)
	if len(taints) != 3 || taints[2].Key != "node.kubernetes.io/not-ready" || taints[2].Effect != "NoSchedule" || taints[0].Key != "node.kubernetes.io/unreachable" || taints[0].Effect != "NoExecute" ||
		taints[0].TimeAdded.IsZero() || taints[1].Effect != "NoSchedule" || !taints[1].TimeAdded.IsZero() {
		t.Errorf("taints = %+v", taints)
	}
}

func TestDecodeStoredLease(t *testing.T) {
	lease, err := DecodeAs[*coordinationv1.Lease](NewDecoder(), readTestdata(t, "etcd", "lease.pb"))
	if err != nil {
		t.Fatal(err)
	}
	v := LeaseOf(lease)
	if !v.Exists || v.HolderIdentity != "worker1" || v.LeaseDurationSeconds != 40 || v.RenewTime.IsZero() {
		t.Errorf("lease = %+v", v)
	}
	// MicroTime keeps microseconds through protobuf; a renewal stamped
	// within a second must not collapse onto the second before.
	if v.RenewTime.Nanosecond()%1000 != 0 {
		t.Errorf("renewTime %s has sub-microsecond digits", v.RenewTime)
	}
}

func TestDecodeStoredPod(t *testing.T) {
	pod, err := DecodeAs[*corev1.Pod](NewDecoder(), readTestdata(t, "etcd", "pod.pb"))
	if err != nil {
		t.Fatal(err)
	}
	v := PodOf(pod)
	if !v.Exists || v.UID == "" || v.NodeName != "worker1" || v.Phase != "Running" || !v.Ready || v.PodIP != "10.244.1.5" || v.DeletionTimestamp != nil {
		t.Errorf("pod = %+v", v)
	}
}

func TestDecodeStoredEndpointSlices(t *testing.T) {
	d := NewDecoder()
	var slices []discoveryv1.EndpointSlice
	for _, f := range []string{"endpointslice-stateful-abcde.pb", "endpointslice-other-xyz.pb"} {
		s, err := DecodeAs[*discoveryv1.EndpointSlice](d, readTestdata(t, "etcd", f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		slices = append(slices, *s)
	}
	e := &Etcd{subjects: evidence.DefaultSubjects, decoder: d}
	var kvs []kv
	for _, f := range []string{"endpointslice-stateful-abcde.pb", "endpointslice-other-xyz.pb"} {
		kvs = append(kvs, kv{value: readTestdata(t, "etcd", f)})
	}
	mine, err := e.serviceSlices(kvs)
	if err != nil {
		t.Fatal(err)
	}
	v := EndpointsOf(mine)
	if got := fmt.Sprint(v.Ready, v.NotReady, v.Slices); got != "[10.244.1.5] [10.244.2.7] 1" {
		t.Errorf("the service's endpoints = %s (the other service's slice must be left out)", got)
	}
	// A Ready condition left unset means ready.
	if all := EndpointsOf(slices); fmt.Sprint(all.Ready) != "[10.244.1.5 10.244.3.3]" {
		t.Errorf("all slices' ready addresses = %v", all.Ready)
	}
}

func TestDecodeRefusesWhatItCannotRead(t *testing.T) {
	d := NewDecoder()
	node := readTestdata(t, "etcd", "node.pb")
	if _, err := DecodeAs[*corev1.Pod](d, node); err == nil || !strings.Contains(err.Error(), "*v1.Node") {
		t.Errorf("a node decoded as a pod: %v", err)
	}
	if _, err := d.Decode(node[:len(node)/2]); err == nil {
		t.Error("a cut-short value decoded")
	}
	if _, err := d.Decode([]byte(`{"kind":"Node","apiVersion":"v1"}`)); err == nil {
		t.Error("a JSON value went through the protobuf decoder")
	}
	if _, err := d.Decode([]byte("k8s:enc:aescbc:v1:key1:\x00\x01")); err == nil || !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("an encrypted value: %v", err)
	}
}

func TestSingleKeyMissingIsAnAbsentObject(t *testing.T) {
	node, rv, err := single[*corev1.Node](NewDecoder(), nil, "42")
	if err != nil || node != nil || rv != "42" {
		t.Errorf("missing key = %v, %q, %v", node, rv, err)
	}
	if v := NodeReadyOf(node); v.Exists {
		t.Errorf("a missing node exists: %+v", v)
	}
	_, rv, err = single[*corev1.Node](NewDecoder(), []kv{{value: readTestdata(t, "etcd", "node.pb"), modRevision: 17}}, "42")
	if err != nil || rv != "17" {
		t.Errorf("a present key's resourceVersion = %q (%v), want its mod revision", rv, err)
	}
}

func TestFindKubeletPod(t *testing.T) {
	body := readTestdata(t, "kubelet", "pods-apiserver-pod.json")
	p, err := FindKubeletPod(body, "faultline", "stateful-0")
	if err != nil || p == nil {
		t.Fatalf("pod = %v, %v", p, err)
	}
	if v := PodOf(p); v.NodeName != "worker1" || !v.Ready || v.UID == "" {
		t.Errorf("kubelet's pod = %+v", v)
	}
	if p, err := FindKubeletPod(body, "other", "stateful-0"); err != nil || p != nil {
		t.Errorf("a pod of another namespace was found: %v %v", p, err)
	}
	if _, err := FindKubeletPod([]byte(`{"kind":"Status","status":"Failure"}`), "faultline", "stateful-0"); err == nil {
		t.Error("a Status was read as a pod list")
	}
	if _, err := FindKubeletPod([]byte(`<html>`), "faultline", "stateful-0"); err == nil {
		t.Error("HTML was read as a pod list")
	}
}

func TestRuntimePodFromCrictl(t *testing.T) {
	pods, ps := readTestdata(t, "crictl", "pods.json"), readTestdata(t, "crictl", "ps.json")
	v, err := RuntimePodFromCrictl(pods, ps, "faultline", "stateful-0")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Running || len(v.Sandboxes) != 2 || len(v.Containers) != 2 {
		t.Fatalf("runtime pod = %+v", v)
	}
	if v.Sandboxes[0].UID != "uid-old" || v.Sandboxes[0].State != "SANDBOX_NOTREADY" || v.Sandboxes[1].UID != "uid-new" {
		t.Errorf("sandboxes (oldest first) = %+v", v.Sandboxes)
	}
	if want := time.Date(2026, 11, 29, 12, 1, 30, 0, time.UTC); !v.Sandboxes[1].CreatedAt.Equal(want) {
		t.Errorf("createdAt = %s, want %s", v.Sandboxes[1].CreatedAt, want)
	}
	if v.Containers[1].State != "CONTAINER_RUNNING" || v.Containers[1].PodUID != "uid-new" || v.Containers[1].SandboxID != "3d4e5f6a7b" {
		t.Errorf("containers = %+v", v.Containers)
	}
	// Only the exited container of the old sandbox: not running here.
	onlyOld := strings.Replace(string(ps), `"CONTAINER_RUNNING"`, `"CONTAINER_EXITED"`, 1)
	if v, err := RuntimePodFromCrictl(pods, []byte(onlyOld), "faultline", "stateful-0"); err != nil || v.Running {
		t.Errorf("with every container of the pod exited, running = %v (%v)", v.Running, err)
	}
	if v, err := RuntimePodFromCrictl(pods, ps, "faultline", "absent-0"); err != nil || v.Running || len(v.Sandboxes) != 0 {
		t.Errorf("an absent pod = %+v, %v", v, err)
	}
	if _, err := RuntimePodFromCrictl([]byte("FATA[0000] connect: connection refused"), ps, "faultline", "stateful-0"); err == nil {
		t.Error("crictl's error text was read as JSON")
	}
}

func TestProxyBackendsFromIPTables(t *testing.T) {
	out := string(readTestdata(t, "iptables", "kube-proxy-iptables-save.txt"))
	v, err := ProxyBackendsFromIPTables(out, "faultline", "stateful")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", v.Ports)
	want := "[{Port:faultline/stateful:http ClusterIP:10.250.31.140 ServicePort:80/tcp Backends:[10.244.1.5:8080 10.244.2.9:8080] Rejected:false Dropped:false} " +
		"{Port:faultline/stateful:metrics ClusterIP:10.250.31.140 ServicePort:9100/tcp Backends:[] Rejected:true Dropped:false}]"
	if got != want {
		t.Errorf("ports\n got %s\nwant %s", got, want)
	}
	if v, err := ProxyBackendsFromIPTables(out, "faultline", "absent"); err != nil || len(v.Ports) != 0 {
		t.Errorf("a service without rules = %+v, %v", v, err)
	}
	if v, err := ProxyBackendsFromIPTables(out, "faultline", "empty"); err != nil || len(v.Ports) != 1 || !v.Ports[0].Rejected || v.Ports[0].Port != "faultline/empty" {
		t.Errorf("an unnamed port without endpoints = %+v, %v", v, err)
	}
	if _, err := ProxyBackendsFromIPTables("*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n", "faultline", "stateful"); err == nil {
		t.Error("rules without kube-proxy's chains read as no backends")
	}
	if _, err := ProxyBackendsFromIPTables("*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -m comment --comment \"open\n", "faultline", "stateful"); err == nil {
		t.Error("an unterminated quote was accepted")
	}
}

// Real /pods of worker1's kubelet on a local lab (captured by the lab
// integration test).
func TestFindPodInRealKubeletPods(t *testing.T) {
	p, err := FindKubeletPod(readTestdata(t, "kubelet", "pods-worker1.json"), "faultline", "stateful-0")
	if err != nil || p == nil {
		t.Fatalf("pod = %v, %v", p, err)
	}
	v := PodOf(p)
	if v.UID != "d36dbb64-dc9f-4a2d-b622-c9ae57353339" || v.NodeName != "worker1" || v.Phase != "Running" || !v.Ready || v.PodIP == "" {
		t.Errorf("kubelet's pod = %+v", v)
	}
}

func TestNamespaceContainersFromCrictl(t *testing.T) {
	b := readTestdata(t, "crictl", "ps.json")
	v, err := NamespaceContainersFromCrictl(b, "faultline")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Containers) == 0 {
		t.Fatal("no container of namespace faultline found")
	}
	for i, c := range v.Containers {
		if c.ID == "" || c.Pod == "" || c.PodUID == "" || c.CreatedAt.IsZero() {
			t.Errorf("container %d lacks a field: %+v", i, c)
		}
		if i > 0 && c.CreatedAt.Before(v.Containers[i-1].CreatedAt) {
			t.Errorf("containers not in creation order")
		}
	}
	if got := v.Running(); len(got) == 0 || got[0].State != "CONTAINER_RUNNING" {
		t.Errorf("Running() = %+v", got)
	}
	none, err := NamespaceContainersFromCrictl(b, "no-such-namespace")
	if err != nil || none.Containers == nil || len(none.Containers) != 0 {
		t.Errorf("other namespace: %+v, %v", none, err)
	}
	if _, err := NamespaceContainersFromCrictl([]byte("{not json"), "c1"); err == nil {
		t.Error("malformed crictl output was accepted")
	}
}
