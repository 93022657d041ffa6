package faults

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

const testContainerID = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func kubeProxyRun(node string) lab.AgentRun {
	p, _ := lab.KubeadmAgentPod(lab.ServiceKubeProxy)
	return lab.AgentRun{Agent: lab.ServiceKubeProxy, Node: node, Pod: &p}
}

func agentPodObject(name, node, uid string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: types.UID(uid), Labels: map[string]string{"k8s-app": "kube-proxy"}},
		Spec:       corev1.PodSpec{NodeName: node, ServiceAccountName: "kube-proxy"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "kube-proxy", ContainerID: "containerd://" + testContainerID, RestartCount: 2,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		}}},
	}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

// The agent's pod is the one of its DaemonSet on its node not being
// deleted, with its container's id; none or two are errors.
func TestFindAgentPodIsTheOneLivePodOnTheNode(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(
		agentPodObject("kube-proxy-old", "worker1", "11111111-2222-3333-4444-555555555555", true),
		agentPodObject("kube-proxy-a", "worker1", testUID, false),
		agentPodObject("kube-proxy-b", "worker2", "99999999-2222-3333-4444-555555555555", false),
		agentPodObject("kube-proxy-c", "worker2", "88888888-2222-3333-4444-555555555555", false),
	)
	p, err := findAgentPod(ctx, cs, kubeProxyRun("worker1"))
	if err != nil || p != (agentPod{Name: "kube-proxy-a", UID: testUID, ContainerID: testContainerID, Running: true, RestartCount: 2}) {
		t.Errorf("worker1: %+v, %v", p, err)
	}
	if _, err := findAgentPod(ctx, cs, kubeProxyRun("worker2")); err == nil || !strings.Contains(err.Error(), "2 pods of kube-proxy on worker2") {
		t.Errorf("two pods: %v", err)
	}
	if _, err := findAgentPod(ctx, cs, kubeProxyRun("worker3")); err == nil || !strings.Contains(err.Error(), "no pod of kube-proxy") {
		t.Errorf("no pod: %v", err)
	}
}

// A list the API dropped (a reset connection) is asked again; the API's
// own answer is not.
func TestFindAgentPodAsksAgainWhenTheListIsDropped(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(agentPodObject("kube-proxy-a", "worker1", testUID, false))
	fails := 2
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			fails--
			return true, nil, errors.New("read tcp 10.0.0.1:44250->10.0.0.10:6443: read: connection reset by peer")
		}
		return false, nil, nil
	})
	if p, err := findAgentPod(ctx, cs, kubeProxyRun("worker1")); err != nil || p.Name != "kube-proxy-a" {
		t.Fatalf("after two resets: %+v, %v", p, err)
	}
	lists := 0
	forbidden := fake.NewClientset()
	forbidden.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("no"))
	})
	if _, err := findAgentPod(ctx, forbidden, kubeProxyRun("worker1")); err == nil || lists != 1 {
		t.Errorf("a forbidden list: %v after %d lists, want an error after one", err, lists)
	}
}

// The kill finds the container's cgroup under the pod's, in either
// driver's spelling, and kills every process in it; none or two such
// cgroups, or no process, fail before any signal.
func TestKillContainerScriptKillsTheContainersProcesses(t *testing.T) {
	dir := t.TempDir()
	pod := filepath.Join(dir, "pod"+testUID)
	for _, d := range []string{testContainerID, "other"} {
		if err := os.MkdirAll(filepath.Join(pod, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	t.Cleanup(func() { sleeper.Process.Kill() })
	if err := os.WriteFile(filepath.Join(pod, testContainerID, "cgroup.procs"), []byte(strconv.Itoa(sleeper.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", killContainerScript(pod, testContainerID)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != strconv.Itoa(sleeper.Process.Pid) {
		t.Fatalf("kill: %v %s", err, out)
	}
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the container's process ended with %v, not SIGKILL", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the container's process still runs")
	}

	// The systemd driver's spelling, with no process left: refused.
	scope := filepath.Join(dir, "pod2")
	if err := os.MkdirAll(filepath.Join(scope, "cri-containerd-"+testContainerID+".scope"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scope, "cri-containerd-"+testContainerID+".scope", "cgroup.procs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-c", killContainerScript(scope, testContainerID)).CombinedOutput(); err == nil || !strings.Contains(string(out), "has no process") {
		t.Errorf("an empty container cgroup: %v %s", err, out)
	}
	if out, err := exec.Command("bash", "-c", killContainerScript(filepath.Join(dir, "none"), testContainerID)).CombinedOutput(); err == nil {
		t.Errorf("no pod cgroup: %s", out)
	}
	if err := os.MkdirAll(filepath.Join(scope, testContainerID), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-c", killContainerScript(scope, testContainerID)).CombinedOutput(); err == nil || !strings.Contains(string(out), "no one cgroup") {
		t.Errorf("two cgroups of the container: %v %s", err, out)
	}
}

// The identity refused is the service account's on the node the API
// server reads from the pod-bound token; a server that reads no node
// name there is unsupported, named so.
func TestIdentityFromReviewNeedsTheNodeName(t *testing.T) {
	r := kubeProxyRun("worker1")
	user := func(extra map[string]authenticationv1.ExtraValue) authenticationv1.TokenReviewStatus {
		return authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
			Username: "system:serviceaccount:kube-system:kube-proxy", Groups: []string{"system:serviceaccounts"}, Extra: extra}}
	}
	id, err := identityFromReview(user(map[string]authenticationv1.ExtraValue{NodeNameExtra: {"worker1"}, "authentication.kubernetes.io/pod-name": {"kube-proxy-a"}}), r)
	if err != nil || id.User != "system:serviceaccount:kube-system:kube-proxy" || len(id.Extra) != 1 || id.Extra[NodeNameExtra][0] != "worker1" {
		t.Errorf("with the node name: %+v, %v", id, err)
	}
	for name, st := range map[string]authenticationv1.TokenReviewStatus{
		"no node name":      user(map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"kube-proxy-a"}}),
		"another node name": user(map[string]authenticationv1.ExtraValue{NodeNameExtra: {"worker2"}}),
	} {
		if _, err := identityFromReview(st, r); !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "1.32") {
			t.Errorf("%s: %v, want unsupported naming the versions", name, err)
		}
	}
	if _, err := identityFromReview(authenticationv1.TokenReviewStatus{Authenticated: false, Error: "expired"}, r); err == nil || errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("not authenticated: %v", err)
	}
	other := user(map[string]authenticationv1.ExtraValue{NodeNameExtra: {"worker1"}})
	other.User.Username = "system:serviceaccount:kube-system:default"
	if _, err := identityFromReview(other, r); err == nil {
		t.Error("a token of another account was taken for the agent's")
	}
}

// The identity is read from a token the API server issues bound to the
// agent's pod found on the node, reviewed by the API server.
func TestPodAgentIdentityAsksForATokenBoundToThePod(t *testing.T) {
	cs := fake.NewClientset(agentPodObject("kube-proxy-a", "worker1", testUID, false))
	var bound *authenticationv1.BoundObjectReference
	cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest)
		bound = tr.Spec.BoundObjectRef
		tr.Status.Token = "token-of-kube-proxy-a"
		return true, tr, nil
	})
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		rev := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if rev.Spec.Token == "token-of-kube-proxy-a" {
			rev.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "system:serviceaccount:kube-system:kube-proxy", Extra: map[string]authenticationv1.ExtraValue{NodeNameExtra: {"worker1"}}}}
		}
		return true, rev, nil
	})
	id, token, err := podAgentIdentity(context.Background(), cs, kubeProxyRun("worker1"))
	if err != nil || token != "token-of-kube-proxy-a" || id.Extra[NodeNameExtra][0] != "worker1" {
		t.Fatalf("%+v %q %v", id, token, err)
	}
	if bound == nil || bound.Kind != "Pod" || bound.Name != "kube-proxy-a" || string(bound.UID) != testUID {
		t.Errorf("the token is bound to %+v, want the pod kube-proxy-a", bound)
	}
}

// The match condition names the node through the user's extra, each
// read guarded, and nothing that could leave the string literal passes.
func TestDenyExpressionSelectsOneNodesTokens(t *testing.T) {
	id := lab.Identity{User: "system:serviceaccount:kube-system:kube-proxy", Extra: map[string][]string{NodeNameExtra: {"worker1"}}}
	expr := denyWatchExpression(id, []WatchedResource{{Group: "discovery.k8s.io", Resource: "endpointslices"}})
	for _, want := range []string{
		"request.user == 'system:serviceaccount:kube-system:kube-proxy'",
		"has(request.extra) && 'authentication.kubernetes.io/node-name' in request.extra && request.extra['authentication.kubernetes.io/node-name'].exists(v, v == 'worker1')",
	} {
		if !strings.Contains(expr, want) {
			t.Errorf("expression lacks %q:\n%s", want, expr)
		}
	}
	if err := checkIdentity(id); err != nil {
		t.Error(err)
	}
	for _, bad := range []lab.Identity{
		{User: "a'b"},
		{User: "u", Extra: map[string][]string{NodeNameExtra: {"w1' || true || '"}}},
		{User: "u", Extra: map[string][]string{"k' in x": {"w1"}}},
		{User: "u", Extra: map[string][]string{NodeNameExtra: {}}},
	} {
		if checkIdentity(bad) == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// A freeze recorded in the ledger before freezes carried a tag still
// decodes (there is then no pod marker to thaw).
func TestFreezeWithoutATagDecodes(t *testing.T) {
	if _, err := decodeFreeze(`{"host":"worker1","service":"kube-proxy"}`); err != nil {
		t.Error(err)
	}
	if _, err := decodeFreeze(`{"host":"worker1","service":"kube-proxy","tag":"zz"}`); err == nil {
		t.Error("a bad tag decoded")
	}
}

func decodeFreeze(raw string) (any, error) {
	return fault.Decode(KindFreeze, []byte(raw))
}

// Of the node's connections to the API addresses, the pin closes only
// those the agent's processes hold, found by their pids in ss's users,
// and knows each by its local address as well as its port: kube-router,
// dialling the kubernetes Service, leaves from the pod network's address.
func TestAgentLocalEndpointsAreThoseOfTheAgentsProcesses(t *testing.T) {
	out := `0      0      10.231.11.31:41002 10.231.11.10:6443 users:(("kube-proxy",pid=4242,fd=7))
0      0      10.231.11.31:41003 10.231.11.10:6443 users:(("kubelet",pid=1200,fd=19))
0      0      10.249.1.1:52210 10.250.11.1:443 users:(("kube-router",pid=4300,fd=9),("kube-router",pid=4301,fd=9))
0      0      10.231.11.31:41002 10.231.11.10:6443 users:(("kube-proxy",pid=4242,fd=8))
`
	ap := netip.MustParseAddrPort
	if got := agentLocalEndpoints(out, []int{4242, 4301}); !slices.Equal(got, []netip.AddrPort{ap("10.231.11.31:41002"), ap("10.249.1.1:52210")}) {
		t.Errorf("endpoints %v, want the agent's 10.231.11.31:41002 and 10.249.1.1:52210 and not the kubelet's", got)
	}
	if got := agentLocalEndpoints(out, []int{4242}); !slices.Equal(got, []netip.AddrPort{ap("10.231.11.31:41002")}) {
		t.Errorf("endpoints %v", got)
	}
	if got := portsOf([]netip.AddrPort{ap("10.249.1.1:52210"), ap("10.231.11.31:41002"), ap("10.231.11.32:41002")}); !slices.Equal(got, []int{41002, 52210}) {
		t.Errorf("ports %v", got)
	}
	if got := parsePids("12\n13\n\n14\n"); !slices.Equal(got, []int{12, 13, 14}) {
		t.Errorf("pids %v", got)
	}
}

// The server's side of a pinned connection is matched by the peer's
// address and port, not its port alone: another host's connection from
// the same port number is not the agent's.
func TestServedPeersAreAddressAndPort(t *testing.T) {
	out := `0      0      10.231.11.22:6443 10.249.1.1:52210
0      0      10.231.11.22:6443 10.231.11.32:41002
0      0      [::ffff:10.231.11.22]:6443 [::ffff:10.231.11.31]:41010
`
	ap := netip.MustParseAddrPort
	want := []netip.AddrPort{ap("10.249.1.1:52210"), ap("10.231.11.32:41002"), ap("10.231.11.31:41010")}
	got := servedPeers(out)
	if !slices.Equal(got, want) {
		t.Fatalf("peers %v, want %v", got, want)
	}
	if slices.Contains(got, ap("10.231.11.31:41002")) {
		t.Error("worker1's port 41002 matched worker2's connection")
	}
}

// Every address a connection from the node can leave from, and no
// loopback or link-local one.
func TestHostAddressesFromIPAddrShow(t *testing.T) {
	out := `1: lo    inet 127.0.0.1/8 scope host lo\       valid_lft forever preferred_lft forever
1: lo    inet6 ::1/128 scope host noprefixroute \       valid_lft forever preferred_lft forever
2: eth0    inet 10.231.14.31/24 brd 10.231.14.255 scope global eth0\       valid_lft forever preferred_lft forever
2: eth0    inet6 fe80::1/64 scope link \       valid_lft forever preferred_lft forever
3: pod0    inet 10.249.1.1/24 brd 10.249.1.255 scope global pod0\       valid_lft forever preferred_lft forever
4: kube-ipvs0    inet 10.231.14.10/32 scope global kube-ipvs0\       valid_lft forever preferred_lft forever
`
	if got, want := hostAddresses(out), []string{"10.231.14.31", "10.249.1.1", "10.231.14.10"}; !slices.Equal(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
}

// The node's chain DNATs each API address the agents dial to the one
// server, first in OUTPUT (before kube-proxy's service rules), and a
// chain of the same tag already there is refused.
func TestPinNatScriptSendsEveryAPIAddressToTheServer(t *testing.T) {
	s := pinNatScript("FAULTLINE-abcd", []string{"10.231.11.10:6443", "10.250.11.1:443"}, "10.231.11.22:6443")
	for _, want := range []string{
		"iptables -w -t nat -A FAULTLINE-abcd -p tcp -d '10.231.11.10' --dport 6443 -j DNAT --to-destination 10.231.11.22:6443",
		"iptables -w -t nat -A FAULTLINE-abcd -p tcp -d '10.250.11.1' --dport 443 -j DNAT --to-destination 10.231.11.22:6443",
		"iptables -w -t nat -I OUTPUT 1 -j FAULTLINE-abcd",
		"exists already",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if got := ssFilter([]string{"10.231.11.10:6443", "10.250.11.1:443"}); got != "( dst 10.231.11.10:6443 or dst 10.250.11.1:443 )" {
		t.Errorf("filter %q", got)
	}
}

// On a lab whose agents are pods (lab11-pods), heal of a freeze thaws
// what its marker names on the node and signals no service; heal of a
// kill or restart has nothing to start; a stop is refused, touching
// nothing; a service that is no agent is still the host's.
func TestPodAgentHealsTouchNoService(t *testing.T) {
	l := loadLab(t, "lab11-pods")
	delete(l.host("worker1").services, lab.ServiceKubeProxy)
	ctx := context.Background()
	fr := Freeze("worker1", lab.ServiceKubeProxy)
	g, err := fault.Decode(fr.Kind(), fr.Params())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Heal(ctx, l); err != nil {
		t.Fatalf("heal of a pod freeze from the ledger: %v", err)
	}
	var p freezeParams
	if err := json.Unmarshal(fr.Params(), &p); err != nil || p.Tag == "" {
		t.Fatalf("the freeze carries no tag: %s", fr.Params())
	}
	cmds := l.host("worker1").commands()
	if len(cmds) != 1 || cmds[0] != thawScript(podFreezeMarker(p.Tag)) {
		t.Errorf("worker1 ran %q, want the thaw of the marker", cmds)
	}
	for _, f := range []fault.Fault{Kill("worker1", lab.ServiceKubeProxy), Restart("worker1", lab.ServicePolicyAgent), StopService("worker1", lab.ServicePolicyAgent)} {
		if err := f.Heal(ctx, l); err != nil {
			t.Errorf("heal of %s: %v", fault.Describe(f), err)
		}
	}
	err = StopService("worker1", lab.ServicePolicyAgent).Inject(ctx, l)
	if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "DaemonSet kube-system/kube-router") {
		t.Errorf("stop of a pod agent: %v, want unsupported naming the DaemonSet", err)
	}
	if ch := l.changes(); len(ch) != 1 {
		t.Errorf("changes %v, want the thaw alone", ch)
	}
	// The kubelet on the same lab is still a service of its host.
	if err := Freeze("worker1", lab.ServiceKubelet).Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	if ops := l.host("worker1").operations(); len(ops) != 1 || !strings.HasPrefix(ops[0], "signal kubelet ") {
		t.Errorf("operations %v, want the kubelet signalled", ops)
	}
}

// On a lab whose agents are pods, a pin's heal from the ledger removes the
// node's chain by its tag (its account says what it found) and closes the
// node's connections on the server even when the chain is gone already:
// a heal cut short after removing the chain left the connections made
// through it, whose DNAT holds in conntrack, and only the next heal's
// close ends them. It touches no service.
func TestPinAgentsPodsHealClosesTheNodesConnectionsWithOrWithoutTheChain(t *testing.T) {
	l := loadLab(t, "lab11-pods")
	ctx := context.Background()
	f := PinAgents("worker1", "cp1", lab.ServiceKubeProxy, lab.ServicePolicyAgent)
	chain := chainName(f.(*pinAgents).p.Tag)
	// kube-router's connection to the kubernetes Service left from pod0's
	// address: it is closed too.
	closeOnServer := closeConnectionsScript("( sport = :6443 ) and ( dst 10.231.14.31 or dst 10.249.1.1 )")
	for _, chainThere := range []bool{true, false} {
		w, cp := l.host("worker1"), l.host("cp1")
		w.cmds, cp.cmds = nil, nil
		w.answers = map[string]lab.Result{"ip -o addr show": {Stdout: "1: lo    inet 127.0.0.1/8 scope host lo\n2: eth0    inet 10.231.14.31/24 scope global eth0\n3: pod0    inet 10.249.1.1/24 scope global pod0\n"}}
		if chainThere {
			w.answers[removeNatChainScript(chain)] = lab.Result{Stdout: foundLine + "iptables nat chain " + chain + " (2 rules), jumped to from: OUTPUT\n" + removedLine + "iptables nat chain " + chain + " and its jumps\n"}
		}
		hctx, account := fault.WithHealAccount(ctx)
		if err := fromLedger(t, f).Heal(hctx, l); err != nil {
			t.Fatalf("chain there %v: heal: %v", chainThere, err)
		}
		if cmds := w.commands(); len(cmds) != 2 || cmds[0] != removeNatChainScript(chain) || cmds[1] != "ip -o addr show" {
			t.Errorf("chain there %v: worker1 ran %q, want the chain's removal, then its addresses listed", chainThere, cmds)
		}
		if cmds := cp.commands(); len(cmds) != 1 || cmds[0] != closeOnServer {
			t.Errorf("chain there %v: cp1 ran %q, want the node's connections closed", chainThere, cmds)
		}
		if a := account(); chainThere != (len(a.Found) == 1 && strings.Contains(a.Found[0], chain)) {
			t.Errorf("chain there %v: the heal's account %+v", chainThere, a)
		}
		for _, h := range []*recordingHost{w, cp} {
			if ops := h.operations(); len(ops) != 0 {
				t.Errorf("chain there %v: %s did %v", chainThere, h.name, ops)
			}
		}
	}
}

// A freeze of an agent run as a pod drops its marker only after the thaw
// said it found one, in a command of its own, so a heal cut short between
// the two thaws again; without a marker it drops nothing.
func TestPodAgentFreezeHealDropsTheMarkerAfterTheThaw(t *testing.T) {
	l := loadLab(t, "lab11-pods")
	ctx := context.Background()
	fr := Freeze("worker1", lab.ServiceKubeProxy)
	marker := podFreezeMarker(fr.(*freeze).p.Tag)
	w := l.host("worker1")
	w.answers[thawScript(marker)] = lab.Result{Stdout: foundLine + "marker " + marker + " naming cgroup /sys/fs/cgroup/x\nmarked\n"}
	if err := fromLedger(t, fr).Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if cmds := w.commands(); len(cmds) != 2 || cmds[0] != thawScript(marker) || cmds[1] != dropMarkerScript(marker) {
		t.Errorf("worker1 ran %q, want the thaw, then the marker dropped", cmds)
	}
	if ops := w.operations(); len(ops) != 0 {
		t.Errorf("worker1 did %v", ops)
	}
}
