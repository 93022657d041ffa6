//go:build bins

package sampler

// The sampler over a real etcd and kube-apiserver on loopback (the binaries
// `make bins` builds): go test -tags bins ./framework/evidence/sampler/
// and the benchmark of one round:
// go test -tags bins -run X -bench Round ./framework/evidence/sampler/

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/internal/realcluster"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/lab"
)

// loopbackLab is a test double of a lab: one control-plane host whose API
// server is the real one on loopback, and one worker that cannot be
// reached. It offers none of the optional access interfaces.
type loopbackLab struct {
	kubeconfig string
	hosts      []lab.Host
}

type unreachableHost struct {
	name  string
	roles []lab.Role
}

// errNoSSH is what dialling an unreachable host returns.
var errNoSSH error = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}

func (h unreachableHost) Name() string      { return h.name }
func (h unreachableHost) Roles() []lab.Role { return h.roles }
func (h unreachableHost) HasRole(r lab.Role) bool {
	for _, x := range h.roles {
		if x == r {
			return true
		}
	}
	return false
}

// A loopback address nothing listens on: the test sends no traffic off
// the machine.
func (h unreachableHost) Address() string { return "127.0.0.2" }
func (h unreachableHost) Run(context.Context, string) (lab.Result, error) {
	return lab.Result{}, errNoSSH
}
func (h unreachableHost) StopService(context.Context, string) error            { return errNoSSH }
func (h unreachableHost) StartService(context.Context, string) error           { return errNoSSH }
func (h unreachableHost) Signal(context.Context, string, syscall.Signal) error { return errNoSSH }
func (h unreachableHost) Services(context.Context) ([]lab.ServiceState, error) { return nil, errNoSSH }
func (h unreachableHost) PowerOff(context.Context) error                       { return errNoSSH }
func (h unreachableHost) PowerOn(context.Context) error                        { return errNoSSH }
func (h unreachableHost) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errNoSSH
}

func (l *loopbackLab) Info() lab.Info      { return lab.Info{Name: "loopback", Kind: "test"} }
func (l *loopbackLab) Config() *lab.Config { return &lab.Config{Name: "loopback"} }
func (l *loopbackLab) Hosts() []lab.Host   { return l.hosts }
func (l *loopbackLab) StateDir() string    { return "" }
func (l *loopbackLab) Timers() (lab.Timers, error) {
	return lab.Timers{}, lab.Unsupported("loopback", "timers", "it runs no cluster")
}
func (l *loopbackLab) Close() error                { return nil }
func (l *loopbackLab) Reset(context.Context) error { return nil }
func (l *loopbackLab) Status(context.Context) (lab.Status, error) {
	return lab.Status{}, nil
}
func (l *loopbackLab) Kubeconfig(string) (string, error) { return l.kubeconfig, nil }
func (l *loopbackLab) Host(name string) (lab.Host, error) {
	for _, h := range l.hosts {
		if h.Name() == name {
			return h, nil
		}
	}
	return nil, errors.New("no host " + name)
}

func TestSamplerOnALabThatOffersLittle(t *testing.T) {
	rc := realcluster.Start(t)
	s := evidence.DefaultSubjects
	rc.Seed(t, s)
	l := &loopbackLab{kubeconfig: rc.Kubeconfig, hosts: []lab.Host{
		unreachableHost{name: "cp1", roles: []lab.Role{lab.RoleControlPlane}},
		unreachableHost{name: "worker1", roles: []lab.Role{lab.RoleWorker}},
	}}
	smp := New(Options{})
	defer smp.Close()
	snap, events, err := smp.Sample(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Kind != "timeline-started" || events[0].Source != "apiserver/cp1" {
		t.Errorf("events %+v", events)
	}
	want := map[evidence.Source]string{
		"apiserver/cp1":            "",
		"apiserver/vip":            "not deployed: the lab has no virtual address",
		"etcd/member/serializable": "not readable in this lab: it offers no etcd client access",
		"etcd/member/linearizable": "not readable in this lab: it offers no etcd client access",
		"kubelet/worker1":          "not readable in this lab: it offers no kubelet client access",
		"cri/worker1":              "unreachable: dial tcp: connect: no route to host",
		"proxy/worker1":            "unreachable: dial tcp: connect: no route to host",
		"dns":                      "not deployed: the lab gives no cluster DNS address this program can reach (lab.ClusterDNSAccess)",
		"informer":                 "not deployed: no running pod",
		// Its port refuses and the host cannot say whether the process
		// exited, so leadership stays unknown rather than "not leading".
		"controlplane/cp1": "connection refused; the host's services: dial tcp: connect: no route to host",
		"probe/worker1":    "probing from worker1: unreachable: dial tcp: connect: no route to host",
		"writer":           "not deployed: no pod app.kubernetes.io/name=faultline-writer",
	}
	for src, reason := range want {
		qs := snap.Answers[src]
		for _, q := range evidence.Questions {
			if _, ok := qs[q]; !ok {
				t.Errorf("%s has no answer to %s (asked or not)", src, q)
			}
		}
		asked := 0
		for q, a := range qs {
			switch {
			case a.State == evidence.NotAsked:
			case reason == "" && !a.Readable():
				t.Errorf("%s %s: %+v", src, q, a)
			case reason != "" && (a.State != evidence.Unreadable || !strings.Contains(a.Reason, reason)):
				t.Errorf("%s %s = %s %q, want unreadable %q", src, q, a.State, a.Reason, reason)
			}
			if a.State != evidence.NotAsked {
				asked++
			}
		}
		if asked == 0 {
			t.Errorf("%s was asked nothing", src)
		}
	}
	if n := len(smp.Sources()); n != len(want) {
		t.Errorf("%d sources: %v", n, smp.Sources())
	}

	// What the watcher saw between runs is dropped, not handed to the next
	// sample.
	n, err := rc.Client.CoreV1().Nodes().Get(context.Background(), s.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions[0].Status = corev1.ConditionTrue
	if _, err := rc.Client.CoreV1().Nodes().UpdateStatus(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(smp.watcher.Timeline().OfKind("ready-true")) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := smp.DiscardEvents(); got != 1 {
		t.Errorf("discarded %d events, want the one Ready=True", got)
	}
	if _, events, err := smp.Sample(context.Background(), l); err != nil || len(events) != 0 {
		t.Errorf("after discarding: %+v %v", events, err)
	}

	// Stream samples at its rate until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	rounds := 0
	smp.Stream(ctx, l, 500*time.Millisecond, func(_ evidence.Snapshot, _ []evidence.Event, err error) bool {
		if err != nil {
			t.Error(err)
		}
		rounds++
		return true
	})
	if rounds < 2 {
		t.Errorf("Stream took %d rounds in 2.5s at 2 Hz", rounds)
	}
}

// BenchmarkRound is one snapshot round over the real API server and one
// etcd member read both ways (three sources).
func BenchmarkRound(b *testing.B) {
	rc := realcluster.Start(b)
	s := evidence.DefaultSubjects
	rc.Seed(b, s)
	round, err := evidence.NewRound([]evidence.Reader{
		source.NewAPIServer("apiserver/local", rc.Client, s),
		source.NewEtcd("e1", rc.EtcdClient, source.Serializable, s),
		source.NewEtcd("e1", rc.EtcdClient, source.Linearizable, s),
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	round.Take(ctx)
	b.ResetTimer()
	for b.Loop() {
		snap := round.Take(ctx)
		if a := snap.Get("apiserver/local", evidence.NodeReady); !a.Readable() {
			b.Fatalf("unreadable: %s", a.Reason)
		}
	}
}
