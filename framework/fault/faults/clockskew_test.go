package faults

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// skewingLab is a recording lab that can shift a host's processes
// (lab.ProcessClockSkewer), whose hosts' components answer HTTP with a
// Date header from a clock off by what the host's processes were shifted
// by: one real HTTP server on loopback per component port (TLS where the
// component serves TLS) stands in for that component on every host, and
// tells the hosts apart by the address the request names.
type skewingLab struct {
	*recordingLab
	mu     sync.Mutex
	calls  []string
	offset map[string]time.Duration
	// honest names a service whose process the skew missed.
	honest  string
	servers map[int]*httptest.Server
}

const testEmulation = "emulated: per-process skew in a test double"

func newSkewingLab(t *testing.T) *skewingLab {
	l := &skewingLab{recordingLab: loadLab(t, "lab11"), offset: map[string]time.Duration{}, servers: map[int]*httptest.Server{}}
	byAddress := map[string]string{}
	for _, h := range l.cfg.Hosts {
		byAddress[h.Address] = h.Name
	}
	for _, ep := range clockEndpoints(l) {
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l.mu.Lock()
			off := l.offset[byAddress[r.Host]]
			if ep.service == l.honest {
				off = 0
			}
			l.mu.Unlock()
			w.Header().Set("Date", time.Now().Add(off).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusUnauthorized)
		})
		srv := httptest.NewUnstartedServer(handler)
		if ep.tls {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		t.Cleanup(srv.Close)
		l.servers[ep.port] = srv
	}
	return l
}

func (l *skewingLab) SkewProcesses(_ context.Context, host string, offset time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, fmt.Sprintf("skew %s %s", host, offset))
	l.offset[host] = offset
	return nil
}

func (l *skewingLab) UnskewProcesses(_ context.Context, host string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, "unskew "+host)
	delete(l.offset, host)
	return nil
}

func (l *skewingLab) ProcessSkewEmulation() string { return testEmulation }

func (l *skewingLab) Host(name string) (lab.Host, error) {
	h := l.recordingLab.host(name)
	if h == nil {
		return nil, fmt.Errorf("lab %s has no host %q", l.cfg.Name, name)
	}
	return &componentHost{recordingHost: h, l: l}, nil
}

func (l *skewingLab) skewCalls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...)
}

// componentHost dials the test's server for a component port.
type componentHost struct {
	*recordingHost
	l *skewingLab
}

func (h *componentHost) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(port)
	srv := h.l.servers[p]
	if srv == nil {
		return nil, fmt.Errorf("nothing listens on %s", address)
	}
	return (&net.Dialer{}).DialContext(ctx, "tcp", srv.Listener.Addr().String())
}

// TestClockSkewShiftsProcessesWhereTheLabCan: on a lab that shares one
// wall clock but can shift a host's processes, inject and heal ask the
// lab and run nothing on the host, the run is labelled emulated (the null
// arm too), and the probe reads every component's Date header: the skew
// is seen only when every component that answered shows it.
func TestClockSkewShiftsProcessesWhereTheLabCan(t *testing.T) {
	ctx := context.Background()
	l := newSkewingLab(t)
	f := ClockSkew("worker1", 90*time.Second)

	e, err := f.Probe(ctx, l)
	if err != nil || e.Observed {
		t.Fatalf("probe before inject: %+v %v", e, err)
	}
	if !strings.Contains(e.Detail, "kubelet") || !strings.Contains(e.Detail, "kube-proxy") {
		t.Errorf("probe detail %q does not name the worker's components", e.Detail)
	}
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := l.skewCalls(); len(got) != 1 || got[0] != "skew worker1 1m30s" {
		t.Errorf("inject asked the lab %q", got)
	}
	if ch := l.changes(); len(ch) > 0 {
		t.Errorf("inject ran %q on the hosts", ch)
	}
	if e, err := f.Probe(ctx, l); err != nil || !e.Observed || !regexp.MustCompile(`kubelet 1m(29|30)`).MatchString(e.Detail) {
		t.Errorf("probe while skewed: %+v %v", e, err)
	}
	// A component the skew missed: not seen, and named.
	l.mu.Lock()
	l.honest = lab.ServiceKubeProxy
	l.mu.Unlock()
	if e, err := f.Probe(ctx, l); err != nil || e.Observed || !strings.Contains(e.Detail, "not skewed: kube-proxy") {
		t.Errorf("probe with kube-proxy unskewed: %+v %v", e, err)
	}
	l.mu.Lock()
	l.honest = ""
	l.mu.Unlock()

	if got := fault.EmulationOf(f, l); got != testEmulation {
		t.Errorf("emulation %q", got)
	}
	if got := fault.EmulationOf(fault.Null(f), l); got != testEmulation {
		t.Errorf("null arm's emulation %q", got)
	}
	static := loadLab(t, "lab11")
	static.cfg.Kind = "static"
	if got := fault.EmulationOf(f, static); got != "" {
		t.Errorf("a lab that steps the clock labels the run %q", got)
	}

	// Heal from the ledger: the decoded fault asks the lab to undo it.
	g, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got := l.skewCalls(); len(got) != 2 || got[1] != "unskew worker1" {
		t.Errorf("heal asked the lab %q", got)
	}
	if e, err := f.Probe(ctx, l); err != nil || e.Observed {
		t.Errorf("probe after heal: %+v %v", e, err)
	}
	if ch := l.changes(); len(ch) > 0 {
		t.Errorf("heal ran %q on the hosts", ch)
	}

	// A control-plane host: the API server, controller-manager and
	// scheduler answer over TLS, etcd over plain HTTP.
	cp := ClockSkew("cp1", -time.Hour)
	if err := cp.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	e, err = cp.Probe(ctx, l)
	if err != nil || !e.Observed {
		t.Errorf("control-plane probe: %+v %v", e, err)
	}
	for _, s := range []string{lab.ServiceAPIServer, lab.ServiceControllerManager, lab.ServiceScheduler, lab.ServiceKubelet} {
		if !regexp.MustCompile(s + ` -(1h0m0|59m59)`).MatchString(e.Detail) {
			t.Errorf("control-plane probe %q does not show %s skewed", e.Detail, s)
		}
	}
	if err := cp.Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// TestClockSkewProbeWithNothingToRead: a host none of whose components
// answers cannot be looked at; that is an error, not an unseen effect.
func TestClockSkewProbeWithNothingToRead(t *testing.T) {
	l := newSkewingLab(t)
	for _, srv := range l.servers {
		srv.Close()
	}
	if _, err := ClockSkew("worker1", time.Minute).Probe(context.Background(), l); err == nil || !strings.Contains(err.Error(), "no component told its time") {
		t.Errorf("probe with every component down: %v", err)
	}
}
