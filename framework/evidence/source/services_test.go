package source

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// scriptedHost reports the next of its service tables at each call, and
// answers commands from out.
type scriptedHost struct {
	tables [][]lab.ServiceState
	calls  *int
	out    lab.Result
	err    error
}

func (h scriptedHost) Name() string                                         { return "cp1" }
func (h scriptedHost) Roles() []lab.Role                                    { return []lab.Role{lab.RoleControlPlane} }
func (h scriptedHost) HasRole(lab.Role) bool                                { return true }
func (h scriptedHost) Address() string                                      { return "127.0.0.2" }
func (h scriptedHost) Run(context.Context, string) (lab.Result, error)      { return h.out, h.err }
func (h scriptedHost) StopService(context.Context, string) error            { return nil }
func (h scriptedHost) StartService(context.Context, string) error           { return nil }
func (h scriptedHost) Signal(context.Context, string, syscall.Signal) error { return nil }
func (h scriptedHost) PowerOff(context.Context) error                       { return nil }
func (h scriptedHost) PowerOn(context.Context) error                        { return nil }
func (h scriptedHost) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("the scripted host dials nothing")
}
func (h scriptedHost) Services(context.Context) ([]lab.ServiceState, error) {
	i := *h.calls
	*h.calls++
	if i >= len(h.tables) {
		return nil, errors.New("connection reset")
	}
	return h.tables[i], nil
}

func TestServicesStampsRestartsStopsAndStarts(t *testing.T) {
	calls := 0
	run := func(pid int) lab.ServiceState {
		return lab.ServiceState{Name: lab.ServiceScheduler, PID: pid, State: "running"}
	}
	h := scriptedHost{calls: &calls, tables: [][]lab.ServiceState{
		{run(10), {Name: lab.ServiceKubelet, PID: 5, State: "running"}},
		{run(11)},
		{{Name: lab.ServiceScheduler, PID: 11, State: "exited"}},
		{run(12)},
		{run(12)},
	}}
	r := NewServices("controlplane/cp1", h, "suite/components", lab.ServiceScheduler)
	var kinds, details []string
	for range h.tables {
		got := r.Read(context.Background())
		var v evidence.ServicesValue
		if err := got["suite/components"].Decode(&v); err != nil {
			t.Fatal(err)
		}
		if len(v.Services) != 1 || v.Services[0].Name != lab.ServiceScheduler {
			t.Errorf("services %+v: want the scheduler alone", v.Services)
		}
		for _, e := range r.Events(context.Background()) {
			if e.Subject != "process/cp1/"+lab.ServiceScheduler || e.Source != "controlplane/cp1" {
				t.Errorf("event %+v", e)
			}
			kinds = append(kinds, e.Kind)
			details = append(details, e.Detail)
		}
	}
	want := []string{KindComponentRestarted, KindComponentStopped, KindComponentStarted}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if len(details) == 3 && (details[0] != "pid 10 → 11" || details[1] != "pid 11 is exited" || details[2] != "pid 12 (was exited)") {
		t.Errorf("details %q", details)
	}
	if a := r.Read(context.Background())["suite/components"]; a.State != evidence.Unreadable || !strings.HasPrefix(a.Reason, "error: connection reset") {
		t.Errorf("a failed read: %+v", a)
	}
}

func TestAPIQuestionAnswersWhatItsReadSays(t *testing.T) {
	holder := "cp1_x"
	cs := fake.NewClientset(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-scheduler"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}})
	read := func(name string) APIRead {
		return func(ctx context.Context, cs kubernetes.Interface) (any, string, error) {
			l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, "", err
			}
			return LeaseOf(l), l.ResourceVersion, nil
		}
	}
	got := NewAPIQuestion("apiserver/cp1", cs, "suite/lease", read("kube-scheduler")).Read(context.Background())
	var v evidence.LeaseValue
	if err := got["suite/lease"].Decode(&v); err != nil || v.HolderIdentity != holder {
		t.Errorf("lease %+v, %v", v, err)
	}
	missing := NewAPIQuestion("apiserver/cp1", cs, "suite/lease", read("absent")).Read(context.Background())
	if a := missing["suite/lease"]; a.State != evidence.Unreadable || !strings.Contains(a.Reason, "not found") {
		t.Errorf("a failed read: %+v", a)
	}
}

func TestRuntimeAnswersEveryQuestionUnreadableWhenCrictlFails(t *testing.T) {
	calls := 0
	h := scriptedHost{calls: &calls, out: lab.Result{ExitCode: 1, Stderr: "connect: connection refused\n"}}
	r := NewCrictlRuntime(h, evidence.DefaultSubjects, NamespaceContainers("suite/containers", "faultline"))
	got := r.Read(context.Background())
	if len(got) != 2 {
		t.Fatalf("answers %v", got)
	}
	for q, a := range got {
		if a.State != evidence.Unreadable || !strings.Contains(a.Reason, "exited 1: connect: connection refused") {
			t.Errorf("%s: %+v", q, a)
		}
	}
	h.out = lab.Result{Stdout: "{}"}
	for q, a := range NewCrictlRuntime(h, evidence.DefaultSubjects, NamespaceContainers("suite/containers", "faultline")).Read(context.Background()) {
		if a.State != evidence.Unreadable || !strings.Contains(a.Reason, "separator") {
			t.Errorf("%s without a separator: %+v", q, a)
		}
	}
}
