package vsphere

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
)

// fakeAPIServer is an HTTPS server on loopback answering /readyz and the
// node list as the test sets them, and counting what it was asked.
type fakeAPIServer struct {
	mu      sync.Mutex
	ready   bool
	nodes   []corev1.Node
	readyzN int
	nodesN  int
	// marker is the lab name in the lab marker; empty: no marker.
	marker string
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.URL.Path {
	case "/readyz":
		s.readyzN++
		if !s.ready {
			http.Error(w, "[-]etcd failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	case "/api/v1/nodes":
		s.nodesN++
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(corev1.NodeList{
			TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"},
			Items:    s.nodes,
		})
	case "/api/v1/namespaces/kube-system/configmaps/faultline-lab-marker":
		w.Header().Set("Content-Type", "application/json")
		if s.marker == "" {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status:   metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
				Details: &metav1.StatusDetails{Name: "faultline-lab-marker", Kind: "configmaps"},
			})
			return
		}
		_ = json.NewEncoder(w).Encode(corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "faultline-lab-marker", Namespace: "kube-system"},
			Data:       map[string]string{"lab": s.marker},
		})
	default:
		http.NotFound(w, r)
	}
}

func (s *fakeAPIServer) set(f func(*fakeAPIServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func node(name string, ready bool) corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}},
	}
}

// kubeconfigFor writes a kubeconfig for the test server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.conf")
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fleet
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: test-token}
contexts:
- name: admin@fleet
  context: {cluster: fleet, user: admin}
current-context: admin@fleet
`, server)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func clusterConfig(kubeconfig string) *lab.Config {
	c := &lab.Config{Name: "fleet", Kind: Kind, Lab: true, Kubeconfig: kubeconfig, Network: lab.Network{APIServerPort: 6443}}
	for _, h := range []struct {
		n string
		r lab.Role
	}{{"etcd1", lab.RoleEtcd}, {"cp1", lab.RoleControlPlane}, {"cp2", lab.RoleControlPlane}, {"worker1", lab.RoleWorker}} {
		c.Hosts = append(c.Hosts, lab.HostConfig{Name: h.n, Roles: []lab.Role{h.r}, Address: "192.0.2.1"})
	}
	return c
}

func TestClusterCheckAsksWhatEachGroupBringsUp(t *testing.T) {
	api := &fakeAPIServer{}
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	check := kubeClusterCheck(clusterConfig(kubeconfigFor(t, srv.URL)), 20*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := check(ctx, lab.RoleEtcd); err != nil {
		t.Fatalf("after etcd: %v", err)
	}
	if api.readyzN != 0 {
		t.Errorf("the API server was asked %d times after the etcd group, when none runs yet", api.readyzN)
	}

	// Not ready at first: the check must keep asking, then succeed.
	go func() {
		time.Sleep(200 * time.Millisecond)
		api.set(func(s *fakeAPIServer) { s.ready = true })
	}()
	if err := check(ctx, lab.RoleControlPlane); err != nil {
		t.Fatalf("after the control plane: %v", err)
	}
	api.set(func(s *fakeAPIServer) {
		if s.readyzN < 2 {
			t.Errorf("/readyz asked %d times, want the failures retried", s.readyzN)
		}
		if s.nodesN != 0 {
			t.Errorf("nodes listed after the control plane group")
		}
	})

	// Three nodes expected (2 control plane + 1 worker): too few, then
	// one not Ready, time out naming it.
	api.set(func(s *fakeAPIServer) { s.nodes = []corev1.Node{node("cp1", true), node("cp2", true)} })
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	err := check(short, lab.RoleWorker)
	cancelShort()
	if err == nil || !strings.Contains(err.Error(), "2 nodes registered, want at least 3") {
		t.Errorf("with two nodes: %v, want the count named", err)
	}
	api.set(func(s *fakeAPIServer) { s.nodes = append(s.nodes, node("worker1", false)) })
	short, cancelShort = context.WithTimeout(ctx, 500*time.Millisecond)
	err = check(short, lab.RoleWorker)
	cancelShort()
	if err == nil || !strings.Contains(err.Error(), "nodes not Ready: worker1") {
		t.Errorf("with worker1 NotReady: %v, want it named", err)
	}
	api.set(func(s *fakeAPIServer) { s.nodes[2] = node("worker1", true) })
	err = check(ctx, lab.RoleWorker)
	if err == nil || !strings.Contains(err.Error(), "carries no faultline lab marker") || !strings.Contains(err.Error(), "before the cold snapshot is taken") {
		t.Errorf("every node Ready, no marker: %v, want the missing marker named", err)
	}
	api.set(func(s *fakeAPIServer) { s.marker = "another-lab" })
	if err := check(ctx, lab.RoleWorker); err == nil || !strings.Contains(err.Error(), `says it is lab "another-lab"`) {
		t.Errorf("another lab's marker: %v, want a refusal", err)
	}
	api.set(func(s *fakeAPIServer) { s.marker = "fleet" })
	if err := check(ctx, lab.RoleWorker); err != nil {
		t.Errorf("every node Ready and the marker in place: %v", err)
	}
}

func TestKubeconfigForOneAPIServer(t *testing.T) {
	c := clusterConfig(kubeconfigFor(t, "https://192.0.2.10:6443"))
	c.StateDir = t.TempDir()
	l := &Lab{cfg: c}
	if got, err := l.Kubeconfig(""); err != nil || got != c.Kubeconfig {
		t.Errorf("Kubeconfig(\"\") = %q, %v; want the lab's", got, err)
	}
	path, err := l.Kubeconfig("cp2")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := raw.Clusters["fleet"].Server; got != "https://192.0.2.1:6443" {
		t.Errorf("cp2's kubeconfig points at %s", got)
	}
	if raw.AuthInfos["admin"].Token != "test-token" {
		t.Errorf("cp2's kubeconfig lost the credentials")
	}
	for _, bad := range []string{"worker1", "cp9"} {
		if _, err := l.Kubeconfig(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Kubeconfig(%q) = %v, want an error naming it", bad, err)
		}
	}
}
