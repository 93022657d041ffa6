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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/internal/realcluster"
)

// capture writes the raw etcd values of the subjects to testdata when
// FAULTLINE_CAPTURE=1.
func capture(t testing.TB, rc *realcluster.Cluster, s evidence.Subjects) {
	if os.Getenv("FAULTLINE_CAPTURE") != "1" {
		return
	}
	ctx := context.Background()
	k := KeysFor(s)
	for file, key := range map[string]string{"node.pb": k.Node, "lease.pb": k.Lease, "pod.pb": k.Pod} {
		resp, err := rc.EtcdClient.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("capturing %s: %v (%d values)", key, err, len(resp.Kvs))
		}
		if err := os.WriteFile(filepath.Join("testdata", "etcd", file), resp.Kvs[0].Value, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := rc.EtcdClient.Get(ctx, k.EndpointSlices, clientv3.WithPrefix())
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
	pod, err := rc.Client.CoreV1().Pods(s.PodNamespace).Get(ctx, s.PodName, metav1.GetOptions{})
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
	rc := realcluster.Start(t)
	s := evidence.DefaultSubjects
	rc.Seed(t, s)
	capture(t, rc, s)

	api := NewAPIServer("apiserver/local", rc.Client, s)
	ser := NewEtcd("e1", rc.EtcdClient, Serializable, s)
	lin := NewEtcd("e1", rc.EtcdClient, Linearizable, s)
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
	rc := realcluster.Start(t)
	s := evidence.DefaultSubjects
	rc.Seed(t, s)
	api := NewAPIServer("apiserver/local", rc.Client, s)
	ser := NewEtcd("e1", rc.EtcdClient, Serializable, s)
	const timeout = time.Second
	round, err := evidence.NewRound([]evidence.Reader{api, ser}, evidence.WithTimeouts(func(evidence.Reader) time.Duration { return timeout }))
	if err != nil {
		t.Fatal(err)
	}
	rc.APIServer.Freeze(t)
	defer rc.APIServer.Signal(t, syscall.SIGCONT)
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

	rc.APIServer.Signal(t, syscall.SIGCONT)
	rc.Etcd.Freeze(t)
	defer rc.Etcd.Signal(t, syscall.SIGCONT)
	snap = round.Take(context.Background())
	for _, q := range ser.Questions() {
		if a := snap.Get(ser.Source(), q); a.Readable() {
			t.Errorf("a frozen etcd answered %s: %s", q, a.Value)
		}
	}
}

// graceAfterTimeoutForTest is how much later than its timeout a round may
// end on this shared machine without the test calling it a hang.
const graceAfterTimeoutForTest = 2 * time.Second
