package source

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// shellHost runs commands with this machine's sh, as an SSH session on a
// lab host would; it can do nothing else.
type shellHost struct{}

func (shellHost) Name() string          { return "worker2" }
func (shellHost) Roles() []lab.Role     { return []lab.Role{lab.RoleWorker} }
func (shellHost) HasRole(lab.Role) bool { return false }
func (shellHost) Address() string       { return "127.0.0.1" }
func (shellHost) Run(ctx context.Context, cmd string) (lab.Result, error) {
	var out, errb strings.Builder
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return lab.Result{Stdout: out.String(), Stderr: errb.String(), ExitCode: exit.ExitCode()}, nil
	}
	return lab.Result{Stdout: out.String(), Stderr: errb.String()}, err
}
func (shellHost) StopService(context.Context, string) error            { return lab.ErrUnsupported }
func (shellHost) StartService(context.Context, string) error           { return lab.ErrUnsupported }
func (shellHost) Signal(context.Context, string, syscall.Signal) error { return lab.ErrUnsupported }
func (shellHost) Services(context.Context) ([]lab.ServiceState, error) {
	return nil, lab.ErrUnsupported
}
func (shellHost) PowerOff(context.Context) error { return lab.ErrUnsupported }
func (shellHost) PowerOn(context.Context) error  { return lab.ErrUnsupported }

// Dial dials from this machine, as the worker would from its own.
func (shellHost) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

func listen(t *testing.T, addr string) net.Listener {
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func slice(name, addr string, port int, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "faultline", Labels: map[string]string{discoveryv1.LabelServiceName: "stateful"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port))}},
	}
}

func TestProberAsksEveryEndpointOverTheHostsShell(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	// A real server that answers, a port nobody listens on, and a server
	// that accepts and never answers.
	ok := listen(t, "127.0.0.2")
	go http.Serve(ok, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("ok"))
	}))
	closed := listen(t, "127.0.0.3")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	silent := listen(t, "127.0.0.4")
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	client := fake.NewClientset(
		slice("a", "127.0.0.2", ok.Addr().(*net.TCPAddr).Port, true),
		slice("b", "127.0.0.3", closedPort, true),
		slice("c", "127.0.0.4", silent.Addr().(*net.TCPAddr).Port, false),
	)
	p := NewProber(shellHost{}, client, evidence.DefaultSubjects, "/healthz")
	if p.Source() != "probe/worker2" {
		t.Errorf("source %s", p.Source())
	}
	a := p.Read(context.Background())[evidence.EndpointProbes]
	var v evidence.EndpointProbesValue
	if err := a.Decode(&v); err != nil {
		t.Fatal(err)
	}
	got := map[string]evidence.EndpointProbe{}
	for _, pr := range v.Probes {
		got[pr.Address] = pr
	}
	if pr := got["127.0.0.2"]; !pr.Answered || !strings.HasPrefix(pr.Detail, "HTTP/1.0 200") {
		t.Errorf("the answering server: %+v", pr)
	}
	if pr := got["127.0.0.3"]; pr.Answered || !strings.Contains(pr.Detail, "connection failed") {
		t.Errorf("the closed port: %+v", pr)
	}
	if pr := got["127.0.0.4"]; pr.Answered || !strings.Contains(pr.Detail, "no answer within 1s") {
		t.Errorf("the silent server: %+v", pr)
	}
}

func TestProberWithoutTheAPIIsUnreadable(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	a := NewProber(shellHost{}, client, evidence.DefaultSubjects, "/healthz").Read(context.Background())[evidence.EndpointProbes]
	if a.Readable() || !strings.Contains(a.Reason, "listing the endpoints to probe") {
		t.Errorf("%+v", a)
	}
}

func TestProberKeepsProbingTheLastListedAddressesWhileTheAPICannotList(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	ok := listen(t, "127.0.0.2")
	go http.Serve(ok, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	client := fake.NewClientset(slice("a", "127.0.0.2", ok.Addr().(*net.TCPAddr).Port, true))
	p := NewProber(shellHost{}, client, evidence.DefaultSubjects, "/healthz")
	if a := p.Read(context.Background())[evidence.EndpointProbes]; !a.Readable() {
		t.Fatalf("first read: %+v", a)
	}
	client.PrependReactor("list", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	a := p.Read(context.Background())[evidence.EndpointProbes]
	var v evidence.EndpointProbesValue
	if err := a.Decode(&v); err != nil {
		t.Fatalf("with the API failing: %v (%+v)", err, a)
	}
	if len(v.Probes) != 1 || v.Probes[0].Address != "127.0.0.2" || !v.Probes[0].Answered {
		t.Errorf("with the API failing: %+v, want the last listed address probed", v)
	}
}
