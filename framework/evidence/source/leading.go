package source

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// The secure ports kube-controller-manager and kube-scheduler serve their
// metrics on by default.
const (
	ControllerManagerMetricsPort = 10257
	SchedulerMetricsPort         = 10259
)

// leaderComponent is one leader-elected component and where its metrics are.
type leaderComponent struct {
	name     string // as its leader-election metric labels it
	question evidence.Question
	port     int
}

// Leading asks the controller-manager and the scheduler of one
// control-plane host, at the host's address, whether they act as leader:
// their leader_election_master_status metric, with process_start_time_seconds
// naming the process. It reads the processes themselves rather than the
// Lease, because a Lease says who should lead, not who acts.
type Leading struct {
	name       evidence.Source
	address    string
	client     *http.Client
	components []leaderComponent
	// host, when set, is asked which services run when a component's port
	// refuses before it was ever read.
	host lab.Host

	mu sync.Mutex
	// served records the components this reader has read at least once, so
	// that a refused connection later can be read as "nothing serves there
	// any more" (see Read).
	served map[evidence.Question]bool
}

// NewLeading makes the "controlplane/<host>" source for the host at
// address. client must present credentials the components authorize for
// /metrics; ports of zero take the defaults.
func NewLeading(host, address string, client *http.Client, controllerManagerPort, schedulerPort int) *Leading {
	if controllerManagerPort == 0 {
		controllerManagerPort = ControllerManagerMetricsPort
	}
	if schedulerPort == 0 {
		schedulerPort = SchedulerMetricsPort
	}
	return &Leading{
		name:    evidence.Source("controlplane/" + host),
		address: address,
		client:  client,
		components: []leaderComponent{
			{"kube-controller-manager", evidence.ControllerManagerLeading, controllerManagerPort},
			{"kube-scheduler", evidence.SchedulerLeading, schedulerPort},
		},
		served: map[evidence.Question]bool{},
	}
}

// MetricsClientFromKubeconfig makes the client Leading reads with from an
// admin kubeconfig: its credentials, and no verification of the server's
// certificate, because both components serve /metrics with a certificate
// they sign themselves at start unless given one, so no CA a client could
// be given signs it. The credentials still go only to the lab's own hosts.
// It asks for no compression: each round reads both components' whole
// metrics page (about 110 kB from a controller-manager), and compressing
// it takes the component longer than sending it.
func MetricsClientFromKubeconfig(path string, cfg *rest.Config) (*http.Client, error) {
	if cfg == nil {
		var err error
		if cfg, err = clientcmd.BuildConfigFromFlags("", path); err != nil {
			return nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
		}
	}
	c := rest.CopyConfig(cfg)
	c.TLSClientConfig.Insecure = true
	c.TLSClientConfig.CAFile, c.TLSClientConfig.CAData = "", nil
	c.TLSClientConfig.ServerName = ""
	c.DisableCompression = true
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("making a metrics client from %s: %w", path, err)
	}
	return hc, nil
}

func (l *Leading) Source() evidence.Source { return l.name }

func (l *Leading) Questions() []evidence.Question {
	qs := make([]evidence.Question, 0, len(l.components))
	for _, c := range l.components {
		qs = append(qs, c.question)
	}
	return qs
}

// Read asks both components at once. A refused connection, after the
// component was read at this address before, answers "not leading" with
// no process: the kernel says nothing listens on the port, and both
// components open their secure port before they start leader election,
// so a process that is not listening cannot be leading. A refusal before
// any successful read answers the same only when the host says the
// component's process has stopped or exited (a controller that loses its
// lease exits, and a lab need not restart it); otherwise it stays
// unreadable (the component may serve elsewhere, e.g. on loopback only).
// Timeouts stay unreadable: a frozen or cut-off process may still be
// leading.
func (l *Leading) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	out := map[evidence.Question]evidence.Answer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range l.components {
		wg.Go(func() {
			a := l.readOne(ctx, c)
			mu.Lock()
			out[c.question] = a
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (l *Leading) readOne(ctx context.Context, c leaderComponent) evidence.Answer {
	url := "https://" + net.JoinHostPort(l.address, strconv.Itoa(c.port)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return evidence.UnreadableAnswer("error: "+err.Error(), now())
	}
	resp, err := l.client.Do(req)
	if err != nil {
		at := now()
		if errors.Is(err, syscall.ECONNREFUSED) {
			if l.wasServed(c.question) {
				return answer(evidence.LeadingValue{Leading: false}, at, "")
			}
			if gone, why := l.processGone(ctx, c.name); gone {
				return answer(evidence.LeadingValue{Leading: false}, now(), "")
			} else if why != "" {
				return evidence.UnreadableAnswer(c.name+" metrics: "+Reason(err)+"; "+why, at)
			}
		}
		return evidence.UnreadableAnswer(c.name+" metrics: "+Reason(err), at)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return evidence.UnreadableAnswer(fmt.Sprintf("%s metrics: %s: %s", c.name, resp.Status, FirstLine(body)), now())
	}
	v, err := LeadingFromMetrics(resp.Body, c.name)
	at := now()
	if err != nil {
		return evidence.UnreadableAnswer("error: "+c.name+" metrics from "+l.address+": "+err.Error(), at)
	}
	l.mu.Lock()
	l.served[c.question] = true
	l.mu.Unlock()
	return answer(v, at, "")
}

// processGone asks the host whether the component's process has stopped
// or exited: a process that does not run leads nothing. Anything else
// (running, frozen, unknown, the host not answering) is not proof.
func (l *Leading) processGone(ctx context.Context, component string) (bool, string) {
	if l.host == nil {
		return false, ""
	}
	services, err := l.host.Services(ctx)
	if err != nil {
		return false, "the host's services: " + err.Error()
	}
	for _, sv := range services {
		if sv.Name == component {
			if sv.State == "stopped" || sv.State == "exited" {
				return true, ""
			}
			return false, "the host says it is " + sv.State
		}
	}
	return false, "the host does not list it"
}

// WithHost lets the reader ask h which services run (see Read).
func (l *Leading) WithHost(h lab.Host) *Leading {
	l.host = h
	return l
}

func (l *Leading) wasServed(q evidence.Question) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.served[q]
}

// LeadingFromMetrics reads, from a component's Prometheus text exposition,
// whether it leads the election named component and when its process
// started. Two plain lines are all it needs, so it reads them itself rather
// than pulling in a Prometheus parser. A missing series is an error, never
// "not leading": a component that runs leader election exports the series
// with 0 while it waits, so its absence means this is not what was
// expected (leader election off, another component on the port).
func LeadingFromMetrics(r io.Reader, component string) (evidence.LeadingValue, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	var status, start string
	want := `leader_election_master_status{name="` + component + `"}`
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		if v, ok := metricValue(line, "leader_election_master_status"); ok && labelsMatch(line, want) {
			status = v
		} else if v, ok := metricValue(line, "process_start_time_seconds"); ok {
			start = v
		}
	}
	if err := sc.Err(); err != nil {
		return evidence.LeadingValue{}, fmt.Errorf("reading the metrics: %w", err)
	}
	if status == "" {
		return evidence.LeadingValue{}, fmt.Errorf("no series %s: the component does not report leading this election", want)
	}
	if start == "" {
		return evidence.LeadingValue{}, errors.New("no process_start_time_seconds: cannot tell one process from the next")
	}
	s, err := strconv.ParseFloat(status, 64)
	if err != nil || (s != 0 && s != 1) {
		return evidence.LeadingValue{}, fmt.Errorf("%s is %q, not 0 or 1", want, status)
	}
	t, err := strconv.ParseFloat(start, 64)
	if err != nil || t <= 0 {
		return evidence.LeadingValue{}, fmt.Errorf("process_start_time_seconds is %q", start)
	}
	return evidence.LeadingValue{Leading: s == 1, Process: "started " + strconv.FormatFloat(t, 'f', -1, 64)}, nil
}

// metricValue returns the sample value of a line of metric name (with or
// without labels).
func metricValue(line, name string) (string, bool) {
	rest, ok := strings.CutPrefix(line, name)
	if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
		return "", false
	}
	if rest[0] == '{' {
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", false
		}
		rest = rest[end+1:]
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", false
	}
	return f[0], true
}

// labelsMatch says whether the series of line is exactly want (name and
// labels as the component writes them).
func labelsMatch(line, want string) bool {
	series, _, _ := strings.Cut(line, " ")
	return series == want
}
