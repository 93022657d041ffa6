//go:build bins

package faults

// The refusal of one node's agent when every node's agent runs as a pod
// under one service account, against a real kube-apiserver on loopback
// (the binaries `make bins` builds): the fault is injected, probed and
// healed through a lab whose hosts run their commands on this machine
// (the control-plane host's in a directory of the test's own; the node's
// in a network namespace of its own, so closing its connections touches
// none of the machine's). It needs root for that namespace.
//
//	go test -tags bins -run TestBlackholeOfOneNodesPodAgent ./framework/fault/faults/

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/faultline/faultline/internal/kubetest"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/labtest"
)

// loopbackHost runs its commands with bash on this machine; a node's in a
// network namespace of its own.
type loopbackHost struct {
	name     string
	role     lab.Role
	isolated bool
	services []lab.ServiceState
}

func (h *loopbackHost) Name() string            { return h.name }
func (h *loopbackHost) Roles() []lab.Role       { return []lab.Role{h.role} }
func (h *loopbackHost) HasRole(r lab.Role) bool { return r == h.role }
func (h *loopbackHost) Address() string         { return "127.0.0.1" }
func (h *loopbackHost) Run(ctx context.Context, cmd string) (lab.Result, error) {
	argv := []string{"bash", "-c", cmd}
	if h.isolated {
		argv = append([]string{"unshare", "--net"}, argv...)
	}
	return labtest.Run(exec.CommandContext(ctx, argv[0], argv[1:]...))
}
func (h *loopbackHost) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("not dialled")
}
func (h *loopbackHost) StopService(context.Context, string) error { return errors.New("not stopped") }
func (h *loopbackHost) StartService(context.Context, string) error {
	return errors.New("not started")
}
func (h *loopbackHost) Signal(context.Context, string, syscall.Signal) error {
	return errors.New("not signalled")
}
func (h *loopbackHost) Services(context.Context) ([]lab.ServiceState, error) { return h.services, nil }
func (h *loopbackHost) PowerOff(context.Context) error                       { return errors.New("no power") }
func (h *loopbackHost) PowerOn(context.Context) error                        { return errors.New("no power") }

// loopbackLab is one API server (cp1) and a node (worker1) whose agents
// run as pods (kubernetes.agents: pods).
type loopbackLab struct {
	cp    *kubetest.ControlPlane
	cfg   *lab.Config
	hosts []*loopbackHost
}

func (l *loopbackLab) Info() lab.Info                             { return lab.Info{Name: "loopback", Kind: "loopback"} }
func (l *loopbackLab) Config() *lab.Config                        { return l.cfg }
func (l *loopbackLab) Timers() (lab.Timers, error)                { return lab.Timers{}, errors.New("none") }
func (l *loopbackLab) Kubeconfig(string) (string, error)          { return l.cp.Kubeconfig, nil }
func (l *loopbackLab) StateDir() string                           { return "" }
func (l *loopbackLab) Reset(context.Context) error                { return errors.New("no reset") }
func (l *loopbackLab) Status(context.Context) (lab.Status, error) { return lab.Status{}, nil }
func (l *loopbackLab) Close() error                               { return nil }
func (l *loopbackLab) AuthorizationConfigFile(string) (string, error) {
	return l.cp.AuthorizationConfigFile, nil
}
func (l *loopbackLab) Hosts() []lab.Host {
	var out []lab.Host
	for _, h := range l.hosts {
		out = append(out, h)
	}
	return out
}
func (l *loopbackLab) Host(name string) (lab.Host, error) {
	for _, h := range l.hosts {
		if h.name == name {
			return h, nil
		}
	}
	return nil, fmt.Errorf("no host %s", name)
}

const rbacAuthorization = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: RBAC
  name: rbac
`

// agentPods makes the cluster objects of kube-proxy run as pods on two
// nodes, as kubeadm does: its service account bound to system:node-proxier,
// and a running pod on each node.
func agentPods(t *testing.T, cs kubernetes.Interface, nodes ...string) {
	t.Helper()
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := cs.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy"}}, metav1.CreateOptions{})
	must("service account", err)
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:node-proxier"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-proxier"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "kube-proxy", Namespace: "kube-system"}},
	}, metav1.CreateOptions{})
	must("binding", err)
	for _, n := range nodes {
		_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		must("node "+n, err)
		p, err := cs.CoreV1().Pods("kube-system").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy-" + n, Labels: map[string]string{"k8s-app": "kube-proxy"}},
			Spec: corev1.PodSpec{NodeName: n, ServiceAccountName: "kube-proxy", HostNetwork: true,
				Containers: []corev1.Container{{Name: "kube-proxy", Image: "faultline.local/kube-proxy:1.0"}}},
		}, metav1.CreateOptions{})
		must("pod on "+n, err)
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "kube-proxy", ContainerID: "containerd://" + testContainerID,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		_, err = cs.CoreV1().Pods("kube-system").UpdateStatus(ctx, p, metav1.UpdateOptions{})
		must("pod status on "+n, err)
	}
}

// asPod is a client that presents a token the API server binds to the
// node's kube-proxy pod, as the kubelet gets that pod's own.
func asPod(t *testing.T, cp *kubetest.ControlPlane, node string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	p, err := cp.Client.CoreV1().Pods("kube-system").Get(ctx, "kube-proxy-"+node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cp.Client.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, "kube-proxy", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(cp.Config)
	cfg.BearerToken = tr.Status.Token
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// listSlices lists EndpointSlices as cs: "" when allowed, the error
// otherwise.
func listSlices(cs kubernetes.Interface) string {
	_, err := cs.DiscoveryV1().EndpointSlices("").List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil {
		return err.Error()
	}
	return ""
}

// One node's kube-proxy, a pod of the one service account every node's
// kube-proxy runs as, refused its list and watch of EndpointSlices by the
// node name the API server reads from its pod-bound token: the other
// node's pod and its own reads of its node go through; heal puts the
// authorization configuration back as it was and the list goes through
// again.
func TestBlackholeOfOneNodesPodAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node's commands run in a network namespace of their own, which needs root")
	}
	cp := kubetest.StartControlPlane(t, kubetest.Options{AuthorizationConfig: rbacAuthorization, RequestTimeout: 10 * time.Second})
	agentPods(t, cp.Client, "worker1", "worker2")
	l := &loopbackLab{cp: cp,
		cfg: &lab.Config{Name: "loopback", Kubernetes: lab.KubernetesSettings{Agents: lab.AgentsAsPods}, Network: lab.Network{APIServerPort: cp.Port}},
		hosts: []*loopbackHost{
			{name: "cp1", role: lab.RoleControlPlane, services: []lab.ServiceState{{Name: lab.ServiceAPIServer, State: "running", PID: cp.APIServer.Pid()}}},
			{name: "worker1", role: lab.RoleWorker, isolated: true},
		}}
	original, err := os.ReadFile(cp.AuthorizationConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	w1, w2 := asPod(t, cp, "worker1"), asPod(t, cp, "worker2")
	if e1, e2 := listSlices(w1), listSlices(w2); e1 != "" || e2 != "" {
		t.Fatalf("before the fault both pods list EndpointSlices: %q, %q", e1, e2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	f := BlackholeAgentWatch("worker1", lab.ServiceKubeProxy, WatchedResource{Group: "discovery.k8s.io", Resource: "endpointslices"})
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = f.Heal(context.Background(), l)
		}
	})
	eff, err := f.Probe(ctx, l)
	if err != nil || !eff.Observed {
		t.Errorf("probe: %+v, %v", eff, err)
	}
	t.Logf("probe: %s", eff.Detail)
	if e := listSlices(w1); !strings.Contains(e, fmt.Sprintf("127.0.0.1:%d", refusedWebhookPort)) {
		t.Errorf("worker1's kube-proxy lists EndpointSlices during the fault: %q, want the webhook's refusal", e)
	}
	if e := listSlices(w2); e != "" {
		t.Errorf("worker2's kube-proxy, the same service account, is refused too: %s", e)
	}
	if _, err := w1.CoreV1().Nodes().Get(ctx, "worker1", metav1.GetOptions{}); err != nil {
		t.Errorf("worker1's kube-proxy is refused its node: %v", err)
	}
	// What is matched is the node the token is bound to, not the account:
	// the admin impersonating the account with no node is let through.
	imp := rest.CopyConfig(cp.Config)
	imp.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:kube-system:kube-proxy", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	if cs, err := kubernetes.NewForConfig(imp); err != nil {
		t.Fatal(err)
	} else if e := listSlices(cs); e != "" {
		t.Errorf("the account without a node name is refused: %s", e)
	}

	if err := f.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	healed = true
	if err := f.Heal(ctx, l); err != nil {
		t.Errorf("a second heal: %v", err)
	}
	after, err := os.ReadFile(cp.AuthorizationConfigFile)
	if err != nil || string(after) != string(original) {
		t.Errorf("the configuration after heal differs from before (%v):\n%s", err, after)
	}
	if e := listSlices(w1); e != "" {
		t.Errorf("worker1's kube-proxy is still refused after heal: %s", e)
	}
	eff, err = f.Probe(ctx, l)
	if err != nil || eff.Observed {
		t.Errorf("probe after heal: %+v, %v", eff, err)
	}
}
