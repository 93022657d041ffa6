package placement

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// world is a control plane of hosts whose service stops and starts act on
// fake Leases and a virtual address, as the real ones would.
type world struct {
	mu      sync.Mutex
	cs      *fake.Clientset
	vipOn   string
	log     []string
	onStop  func(host, service string)
	failRun bool
}

type host struct {
	name string
	w    *world
}

func (h host) Name() string          { return h.name }
func (h host) Roles() []lab.Role     { return []lab.Role{lab.RoleControlPlane} }
func (h host) HasRole(lab.Role) bool { return true }
func (h host) Address() string       { return "127.0.0.2" }
func (h host) Run(_ context.Context, cmd string) (lab.Result, error) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	if h.w.failRun {
		return lab.Result{}, errors.New("ssh: handshake failed")
	}
	out := "2: eth0    inet 10.0.0.1/24 brd 10.0.0.255 scope global eth0\n"
	if h.w.vipOn == h.name {
		out += "2: eth0    inet 10.0.0.100/32 scope global eth0\n"
	}
	return lab.Result{Stdout: out}, nil
}
func (h host) StopService(_ context.Context, s string) error {
	h.w.mu.Lock()
	h.w.log = append(h.w.log, "stop "+h.name+" "+s)
	on := h.w.onStop
	h.w.mu.Unlock()
	if on != nil {
		on(h.name, s)
	}
	return nil
}
func (h host) StartService(_ context.Context, s string) error {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.w.log = append(h.w.log, "start "+h.name+" "+s)
	return nil
}
func (host) Signal(context.Context, string, syscall.Signal) error { return nil }
func (host) Services(context.Context) ([]lab.ServiceState, error) { return nil, nil }
func (host) PowerOff(context.Context) error                       { return nil }
func (host) PowerOn(context.Context) error                        { return nil }
func (host) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no dialing in this test")
}

type fakeLab struct {
	w   *world
	cfg *lab.Config
}

func (l fakeLab) Info() lab.Info      { return lab.Info{Name: "fake"} }
func (l fakeLab) Config() *lab.Config { return l.cfg }
func (l fakeLab) Hosts() []lab.Host   { return []lab.Host{host{"m1", l.w}, host{"m2", l.w}} }
func (l fakeLab) Timers() (lab.Timers, error) {
	return lab.Timers{}, lab.Unsupported("test", "timers", "it runs no cluster")
}
func (l fakeLab) Host(name string) (lab.Host, error) {
	if name == "m1" || name == "m2" {
		return host{name, l.w}, nil
	}
	return nil, errors.New("no host " + name)
}
func (fakeLab) Kubeconfig(string) (string, error)          { return "", errors.New("none") }
func (fakeLab) StateDir() string                           { return "" }
func (fakeLab) Reset(context.Context) error                { return nil }
func (fakeLab) Status(context.Context) (lab.Status, error) { return lab.Status{}, nil }
func (fakeLab) Close() error                               { return nil }

func newWorld(holder string) *world {
	lease := func(name string) *coordinationv1.Lease {
		h := holder + "_" + name
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &h}}
	}
	return &world{cs: fake.NewClientset(lease("kube-controller-manager"), lease("kube-scheduler"))}
}

// takeOver makes host's standby take lease, as a standby does once the
// leader's lease runs out.
func (w *world) takeOver(lease, host string) {
	l, err := w.cs.CoordinationV1().Leases("kube-system").Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil {
		panic(err)
	}
	h := host + "_new"
	l.Spec.HolderIdentity = &h
	if _, err := w.cs.CoordinationV1().Leases("kube-system").Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
}

func TestLeadersStopsTheOthersUntilTheHostHoldsEveryLease(t *testing.T) {
	w := newWorld("m2")
	w.onStop = func(_, service string) {
		for _, ls := range ControlPlaneLeases {
			if ls.Service == service {
				w.takeOver(ls.Name, "m1")
			}
		}
	}
	var notes []evidence.Event
	err := Leaders(context.Background(), fakeLab{w: w}, w.cs, "m1", []string{"m2"}, ControlPlaneLeases, time.Second, func(e evidence.Event) { notes = append(notes, e) })
	if err != nil {
		t.Fatal(err)
	}
	want := "stop m2 kube-controller-manager,stop m2 kube-scheduler,start m2 kube-controller-manager,start m2 kube-scheduler"
	if got := strings.Join(w.log, ","); got != want {
		t.Errorf("did %s, want %s", got, want)
	}
	if len(notes) != 1 || notes[0].Kind != KindLeadersPlaced || !strings.Contains(notes[0].Detail, "kube-scheduler held by m1_new") || !strings.Contains(notes[0].Detail, "stopped at") {
		t.Errorf("notes %+v", notes)
	}
}

func TestLeadersTouchesNothingWhenTheHostHoldsThemAlready(t *testing.T) {
	w := newWorld("m1")
	var notes []evidence.Event
	if err := Leaders(context.Background(), fakeLab{w: w}, w.cs, "m1", []string{"m2"}, ControlPlaneLeases, time.Second, func(e evidence.Event) { notes = append(notes, e) }); err != nil {
		t.Fatal(err)
	}
	if len(w.log) != 0 || len(notes) != 1 || !strings.Contains(notes[0].Detail, "m1 held them all already") {
		t.Errorf("log %v, notes %+v", w.log, notes)
	}
}

func TestLeadersStartsTheOthersAgainWhenTheWaitFails(t *testing.T) {
	w := newWorld("m2") // nobody takes over
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := Leaders(ctx, fakeLab{w: w}, w.cs, "m1", []string{"m2"}, ControlPlaneLeases, time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "holders now") {
		t.Fatalf("err %v", err)
	}
	if got := strings.Join(w.log, ","); !strings.HasSuffix(got, "start m2 kube-controller-manager,start m2 kube-scheduler") {
		t.Errorf("did %s: the stopped components were not started again", got)
	}
	if HolderHost("m2_1234") != "m2" || HolderHost("") != "" {
		t.Error("HolderHost")
	}
}

func TestVirtualAddressStopsKeepalivedOnTheOthers(t *testing.T) {
	w := newWorld("m1")
	w.vipOn = "m1"
	w.onStop = func(h, service string) {
		if service == lab.ServiceKeepalived && h == "m1" {
			w.mu.Lock()
			w.vipOn = "m2"
			w.mu.Unlock()
		}
	}
	cfg := &lab.Config{}
	cfg.Network.VirtualIP = "10.0.0.100"
	var notes []evidence.Event
	if err := VirtualAddress(context.Background(), fakeLab{w: w, cfg: cfg}, "m2", []string{"m1"}, func(e evidence.Event) { notes = append(notes, e) }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(w.log, ","); got != "stop m1 keepalived" {
		t.Errorf("did %s", got)
	}
	if len(notes) != 1 || notes[0].Kind != KindVirtualAddressPlaced || notes[0].Subject != "address/10.0.0.100" || !strings.Contains(notes[0].Detail, "keepalived on m1 stopped") {
		t.Errorf("notes %+v", notes)
	}
	// Already there: nothing stopped.
	w.log = nil
	if err := VirtualAddress(context.Background(), fakeLab{w: w, cfg: cfg}, "m2", []string{"m1"}, nil); err != nil || len(w.log) != 0 {
		t.Errorf("err %v, did %v", err, w.log)
	}
	// No virtual address: left alone. An unreadable host: an error naming it.
	if err := VirtualAddress(context.Background(), fakeLab{w: w, cfg: &lab.Config{}}, "m2", []string{"m1"}, nil); err != nil {
		t.Errorf("no virtual address: %v", err)
	}
	w.failRun = true
	if err := VirtualAddress(context.Background(), fakeLab{w: w, cfg: cfg}, "m2", []string{"m1"}, nil); err == nil || !strings.Contains(err.Error(), "reading the addresses of m1") {
		t.Errorf("err %v", err)
	}
}
