package source

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source/sourcetest"
)

// slowWorker takes longer than one probe's second to reconnect to: its
// first dial waits, the others do not.
type slowWorker struct {
	sourcetest.ShellHost
	connected *bool
}

func (w slowWorker) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	if !*w.connected {
		select {
		case <-time.After(1500 * time.Millisecond):
			*w.connected = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return w.ShellHost.Dial(ctx, network, address)
}

func slice(name, addr string, port int, ready bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "faultline", Labels: map[string]string{discoveryv1.LabelServiceName: "stateful"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port))}},
	}
}

func TestProberAsksEveryEndpointFromTheWorker(t *testing.T) {
	// A real server that answers, a port nobody listens on, two servers
	// that accept and never answer, and one that says it is unhealthy.
	ok := sourcetest.Listen(t, "127.0.0.2")
	requests := make(chan string, 10)
	go http.Serve(ok, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests <- r.Proto + " " + r.Host + " " + r.URL.Path
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("ok"))
	}))
	sick := sourcetest.Listen(t, "127.0.0.6")
	go http.Serve(sick, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	closed := sourcetest.Listen(t, "127.0.0.3")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	accepted := make(chan time.Time, 10)
	silentServer := func(addr string) net.Listener {
		l := sourcetest.Listen(t, addr)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				accepted <- time.Now()
				t.Cleanup(func() { c.Close() })
			}
		}()
		return l
	}
	silent, silent2 := silentServer("127.0.0.4"), silentServer("127.0.0.5")
	client := fake.NewClientset(
		slice("a", "127.0.0.2", ok.Addr().(*net.TCPAddr).Port, true),
		slice("b", "127.0.0.3", closedPort, true),
		slice("c", "127.0.0.4", silent.Addr().(*net.TCPAddr).Port, false),
		slice("d", "127.0.0.5", silent2.Addr().(*net.TCPAddr).Port, false),
		slice("e", "127.0.0.6", sick.Addr().(*net.TCPAddr).Port, true),
	)
	p := NewProber(sourcetest.ShellHost{}, client, evidence.DefaultSubjects, "/healthz")
	if p.Source() != "probe/worker2" {
		t.Errorf("source %s", p.Source())
	}
	start := time.Now()
	a := p.Read(context.Background())[evidence.EndpointProbes]
	// The two silent servers are asked at once: the second is not
	// connected to only after the first one's second has passed.
	for range 2 {
		if at := <-accepted; at.Sub(start) >= time.Second {
			t.Errorf("a silent server was connected to %s after the read started: the endpoints were not asked at once", at.Sub(start))
		}
	}
	var v evidence.EndpointProbesValue
	if err := a.Decode(&v); err != nil {
		t.Fatal(err)
	}
	got := map[string]evidence.EndpointProbe{}
	var order []string
	for _, pr := range v.Probes {
		got[pr.Address] = pr
		order = append(order, pr.Address)
	}
	if strings.Join(order, " ") != "127.0.0.2 127.0.0.3 127.0.0.4 127.0.0.5 127.0.0.6" {
		t.Errorf("probes in the order %v, want the addresses'", order)
	}
	if pr := got["127.0.0.2"]; !pr.Answered || pr.Detail != "HTTP/1.0 200 OK" {
		t.Errorf("the answering server: %+v", pr)
	}
	if r := <-requests; r != "HTTP/1.0 probe /healthz" {
		t.Errorf("the request was %q", r)
	}
	if pr := got["127.0.0.3"]; pr.Answered || !strings.HasPrefix(pr.Detail, "127.0.0.3:") || !strings.Contains(pr.Detail, "connection failed: ") || !strings.Contains(pr.Detail, "connection refused") {
		t.Errorf("the closed port: %+v", pr)
	}
	for _, addr := range []string{"127.0.0.4", "127.0.0.5"} {
		if pr := got[addr]; pr.Answered || !strings.HasSuffix(pr.Detail, ": connected, no answer within 1s") {
			t.Errorf("the silent server %s: %+v", addr, pr)
		}
	}
	if pr := got["127.0.0.6"]; pr.Answered || pr.Detail != "HTTP/1.0 503 Service Unavailable" {
		t.Errorf("the unhealthy server: %+v", pr)
	}

	// A worker slow to reconnect to: the endpoints still get their second.
	connected := false
	a = NewProber(slowWorker{connected: &connected}, client, evidence.DefaultSubjects, "/healthz").Read(context.Background())[evidence.EndpointProbes]
	if err := a.Decode(&v); err != nil || len(v.Probes) != 5 || !v.Probes[0].Answered {
		t.Errorf("from a worker slow to reconnect to: %+v (%v)", v, err)
	}

	// A worker that cannot be reached says nothing of the endpoints.
	a = NewProber(sourcetest.UnreachableWorker{}, client, evidence.DefaultSubjects, "/healthz").Read(context.Background())[evidence.EndpointProbes]
	if a.State != evidence.Unreadable || !strings.HasPrefix(a.Reason, "probing from worker2: unreachable: ") {
		t.Errorf("from an unreachable worker: %+v", a)
	}
}

func TestProbeRequestPathStaysOneLine(t *testing.T) {
	for path, want := range map[string]string{"/healthz": "/healthz", "/a?b=c": "/a?b=c", "": "/", "healthz": "/", "/a b": "/", "/a\r\nX: y": "/"} {
		if got := requestPath(path); got != want {
			t.Errorf("requestPath(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestProberWithoutTheAPIIsUnreadable(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("list", "endpointslices", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	a := NewProber(sourcetest.ShellHost{}, client, evidence.DefaultSubjects, "/healthz").Read(context.Background())[evidence.EndpointProbes]
	if a.Readable() || !strings.Contains(a.Reason, "listing the endpoints to probe") {
		t.Errorf("%+v", a)
	}
}

func TestProberKeepsProbingTheLastListedAddressesWhileTheAPICannotList(t *testing.T) {
	ok := sourcetest.Listen(t, "127.0.0.2")
	go http.Serve(ok, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	client := fake.NewClientset(slice("a", "127.0.0.2", ok.Addr().(*net.TCPAddr).Port, true))
	p := NewProber(sourcetest.ShellHost{}, client, evidence.DefaultSubjects, "/healthz")
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
