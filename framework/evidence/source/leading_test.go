package source

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source/sourcetest"
	"github.com/faultline/faultline/lab"
)

func TestLeadingFromMetricsOfRealComponents(t *testing.T) {
	for _, tc := range []struct {
		file      []string
		component string
		want      evidence.LeadingValue
	}{
		{[]string{"metrics", "kube-controller-manager-leader.txt"}, "kube-controller-manager", evidence.LeadingValue{Leading: true, Process: "started 1795964378.31"}},
		{[]string{"metrics", "kube-scheduler-standby.txt"}, "kube-scheduler", evidence.LeadingValue{Leading: false, Process: "started 1795964378.93"}},
	} {
		got, err := LeadingFromMetrics(strings.NewReader(string(readTestdata(t, tc.file...))), tc.component)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.file, got, tc.want)
		}
	}
}

func TestLeadingFromMetricsRefusesWhatItCannotRead(t *testing.T) {
	leader := string(readTestdata(t, "metrics", "kube-controller-manager-leader.txt"))
	for name, tc := range map[string]struct{ metrics, component, wantErr string }{
		// The scheduler's series asked of the controller-manager's metrics:
		// absent is never "not leading".
		"another component's metrics": {leader, "kube-scheduler", `no series leader_election_master_status{name="kube-scheduler"}`},
		"no start time":               {"leader_election_master_status{name=\"kube-scheduler\"} 1\n", "kube-scheduler", "no process_start_time_seconds"},
		"not a boolean":               {"leader_election_master_status{name=\"kube-scheduler\"} 0.5\nprocess_start_time_seconds 1.7e+09\n", "kube-scheduler", "not 0 or 1"},
		"a longer name":               {"leader_election_master_status{name=\"kube-scheduler-extra\"} 1\nprocess_start_time_seconds 1.7e+09\n", "kube-scheduler", "no series"},
		"empty":                       {"", "kube-scheduler", "no series"},
	} {
		_, err := LeadingFromMetrics(strings.NewReader(tc.metrics), tc.component)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: got error %v, want one containing %q", name, err, tc.wantErr)
		}
	}
}

// metricsServer serves body at /metrics over TLS and answers 403 elsewhere.
func metricsServer(t *testing.T, body []byte) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		w.Write(body)
	}))
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return srv, p
}

func leadingOf(t *testing.T, a evidence.Answer) evidence.LeadingValue {
	t.Helper()
	if !a.Readable() {
		t.Fatalf("unreadable: %s", a.Reason)
	}
	var v evidence.LeadingValue
	if err := json.Unmarshal(a.Value, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLeadingReadsBothComponentsAndReadsARefusalAfterServingAsNotLeading(t *testing.T) {
	cm, cmPort := metricsServer(t, readTestdata(t, "metrics", "kube-controller-manager-leader.txt"))
	sched, schedPort := metricsServer(t, readTestdata(t, "metrics", "kube-scheduler-standby.txt"))
	defer sched.Close()
	r := NewLeading("cp1", "127.0.0.1", cm.Client(), cmPort, schedPort)
	if r.Source() != "controlplane/cp1" {
		t.Errorf("source %s", r.Source())
	}
	got := r.Read(context.Background())
	if v := leadingOf(t, got[evidence.ControllerManagerLeading]); !v.Leading || v.Process != "started 1795964378.31" {
		t.Errorf("controller-manager: %+v", v)
	}
	if v := leadingOf(t, got[evidence.SchedulerLeading]); v.Leading {
		t.Errorf("scheduler: %+v", v)
	}

	// The controller-manager goes away: its port now refuses.
	cm.Close()
	got = r.Read(context.Background())
	if v := leadingOf(t, got[evidence.ControllerManagerLeading]); v.Leading || v.Process != "" {
		t.Errorf("controller-manager after its port closed: %+v, want not leading and no process", v)
	}

	// A reader that never read the component there cannot tell a stopped
	// component from one that serves elsewhere.
	fresh := NewLeading("cp1", "127.0.0.1", sched.Client(), cmPort, schedPort)
	a := fresh.Read(context.Background())[evidence.ControllerManagerLeading]
	if a.Readable() || !strings.Contains(a.Reason, "kube-controller-manager metrics") {
		t.Errorf("refusal before any read: got %+v, want unreadable naming the component", a)
	}
}

func TestLeadingIsUnreadableWhenMetricsAreRefusedOrTimeOut(t *testing.T) {
	forbidden := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `forbidden: User "system:anonymous" cannot get path "/metrics"`, http.StatusForbidden)
	}))
	defer forbidden.Close()
	_, port, _ := net.SplitHostPort(forbidden.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	r := NewLeading("cp2", "127.0.0.1", forbidden.Client(), p, p)
	for q, a := range r.Read(context.Background()) {
		if a.Readable() || !strings.Contains(a.Reason, "403") {
			t.Errorf("%s: got %+v, want unreadable with the status", q, a)
		}
	}

	// A server that accepts but never answers (a frozen process): the read
	// ends with the context and stays unreadable, never "not leading".
	l := sourcetest.Listen(t, "127.0.0.1")
	_, port, _ = net.SplitHostPort(l.Addr().String())
	p, _ = strconv.Atoi(port)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r = NewLeading("cp3", "127.0.0.1", forbidden.Client(), p, p)
	r.served[evidence.ControllerManagerLeading] = true
	for q, a := range r.Read(ctx) {
		if a.Readable() {
			t.Errorf("%s: a hung server read as %s", q, a.Value)
		}
	}
}

// servicesHost reports fixed service states.
type servicesHost struct {
	sourcetest.ShellHost
	states []lab.ServiceState
}

func (h servicesHost) Services(context.Context) ([]lab.ServiceState, error) { return h.states, nil }

func TestLeadingAsksTheHostWhenAPortRefusesBeforeAnyRead(t *testing.T) {
	l := sourcetest.Listen(t, "127.0.0.1")
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	l.Close() // nothing listens there now: connections are refused
	host := servicesHost{states: []lab.ServiceState{
		{Name: lab.ServiceControllerManager, State: "exited"},
		{Name: lab.ServiceScheduler, PID: 42, State: "running"},
	}}
	got := NewLeading("cp1", "127.0.0.1", http.DefaultClient, p, p).WithHost(host).Read(context.Background())
	if v := leadingOf(t, got[evidence.ControllerManagerLeading]); v.Leading {
		t.Errorf("an exited controller-manager read as %+v", v)
	}
	// The host says the scheduler runs, yet its port refuses: it may serve
	// elsewhere, so that is no proof either way.
	if a := got[evidence.SchedulerLeading]; a.Readable() || !strings.Contains(a.Reason, "the host says it is running") {
		t.Errorf("scheduler: %+v, want unreadable naming what the host said", a)
	}
}
