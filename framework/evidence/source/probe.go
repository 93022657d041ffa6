package source

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// probeTimeout bounds one request to one endpoint (connecting included),
// so that a round over a few endpoints stays within a source's read
// timeout.
const probeTimeout = time.Second

// Prober asks, from one worker, whether each address of the test
// service's EndpointSlices (ready or not) answers an HTTP request: the
// "and answer" of endpoints-truthful, seen from where pod traffic comes
// from. Each address is asked at once, over a TCP connection the worker
// makes through its SSH connection (lab.Host.Dial): the connection
// starts on the worker, and nothing runs there.
type Prober struct {
	name     evidence.Source
	host     lab.Host
	client   kubernetes.Interface
	subjects evidence.Subjects
	path     string

	mu sync.Mutex
	// last are the addresses of the last listing that succeeded.
	last []probeTarget
}

// NewProber makes the "probe/<host>" source. path is the HTTP path asked
// ("/healthz" for the netexec fixtures).
func NewProber(host lab.Host, client kubernetes.Interface, subjects evidence.Subjects, path string) *Prober {
	return &Prober{name: evidence.Source("probe/" + host.Name()), host: host, client: client, subjects: subjects, path: path}
}

func (p *Prober) Source() evidence.Source { return p.name }

func (p *Prober) Questions() []evidence.Question {
	return []evidence.Question{evidence.EndpointProbes}
}

func (p *Prober) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	one := func(a evidence.Answer) map[evidence.Question]evidence.Answer {
		return map[evidence.Question]evidence.Answer{evidence.EndpointProbes: a}
	}
	list, err := p.client.DiscoveryV1().EndpointSlices(p.subjects.ServiceNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + p.subjects.ServiceName,
	})
	var targets []probeTarget
	p.mu.Lock()
	if err == nil {
		targets = probeTargets(list.Items)
		p.last = targets
	} else {
		// A probe says whether an address answered when it was asked,
		// whoever listed it: while the API cannot list (the very faults
		// under study), the last addresses listed are still worth asking,
		// since an API server may still show them as endpoints.
		targets = p.last
	}
	p.mu.Unlock()
	if err != nil && len(targets) == 0 {
		return one(evidence.UnreadableAnswer("listing the endpoints to probe: "+Reason(err), now()))
	}
	if len(targets) == 0 {
		return one(answer(evidence.EndpointProbesValue{Probes: []evidence.EndpointProbe{}}, now(), ""))
	}
	v, err := p.probeAll(ctx, targets)
	at := now()
	if err != nil {
		return one(evidence.UnreadableAnswer("probing from "+p.host.Name()+": "+Reason(err), at))
	}
	return one(answer(v, at, ""))
}

// probeTarget is one address and the port it is probed on.
type probeTarget struct {
	Address string
	Port    int32
}

// probeTargets lists every address of the slices with the slice's first
// TCP port, sorted and without repeats.
func probeTargets(slices []discoveryv1.EndpointSlice) []probeTarget {
	seen := map[probeTarget]bool{}
	var out []probeTarget
	for _, s := range slices {
		var port int32
		for _, pt := range s.Ports {
			if pt.Port != nil && (pt.Protocol == nil || *pt.Protocol == "TCP") {
				port = *pt.Port
				break
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				t := probeTarget{Address: a, Port: port}
				if !seen[t] && net.ParseIP(a) != nil {
					seen[t] = true
					out = append(out, t)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// probeAll asks every target at once. An error means the worker itself
// could not be reached (or ctx ended): no probe then says anything about
// the addresses.
func (p *Prober) probeAll(ctx context.Context, targets []probeTarget) (evidence.EndpointProbesValue, error) {
	// The worker is reached first, within the read's time, by a dial it
	// refuses at once (no socket is at "/"): reconnecting to a worker on
	// a loaded machine may take longer than one probe's second, which
	// must go to the endpoints alone.
	if c, err := p.host.Dial(ctx, "unix", "/"); err == nil {
		c.Close()
	} else if !errors.Is(err, lab.ErrNotConnectedByHost) {
		return evidence.EndpointProbesValue{}, err
	}
	probes := make([]evidence.EndpointProbe, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { probes[i], errs[i] = p.probe(ctx, t) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return evidence.EndpointProbesValue{}, ctx.Err()
	}
	if err := errors.Join(errs...); err != nil {
		return evidence.EndpointProbesValue{}, err
	}
	return evidence.EndpointProbesValue{Probes: probes}, nil
}

// probe asks one target `GET <path>` with HTTP/1.0 and reads its status
// line: it answered when that is an HTTP 2xx or 3xx. An error means the
// worker was not reached.
func (p *Prober) probe(ctx context.Context, t probeTarget) (evidence.EndpointProbe, error) {
	addr := net.JoinHostPort(t.Address, strconv.Itoa(int(t.Port)))
	ans, err := AskOnce(ctx, p.host, addr, p.path, probeTimeout, false)
	if err != nil {
		return evidence.EndpointProbe{}, err
	}
	if ans.Failure != "" {
		return evidence.EndpointProbe{Address: t.Address, Detail: addr + ": " + ans.Failure}, nil
	}
	pr := evidence.EndpointProbe{Address: t.Address, Detail: ans.Line}
	if ans.Status >= 200 && ans.Status < 400 {
		pr.Answered = true
	}
	return pr, nil
}

// HTTPAnswer is what one HTTP/1.0 GET got back: the status line and its
// code (0 when the line is not an HTTP status line), the body's first
// line where asked for, or why no answer came.
type HTTPAnswer struct {
	Line, Body string
	Status     int
	Failure    string
}

// AskOnce makes one `GET <path>` with HTTP/1.0 to addr over a connection
// that starts on host (lab.Host.Dial), within timeout. A target that
// refuses, or does not answer in time, is an answer's failure; an error
// means the host itself was not reached. Written over the raw connection
// rather than net/http so that a refused dial, a connection made and not
// answered, and one closed without an answer stay apart, which the probes
// report.
func AskOnce(ctx context.Context, host lab.Host, addr, path string, timeout time.Duration, withBody bool) (HTTPAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	noAnswer := HTTPAnswer{Failure: fmt.Sprintf("%s %s", evidence.ConnectedNoAnswer, timeout)}
	conn, err := host.Dial(ctx, "tcp", addr)
	switch {
	case err == nil:
	case !errors.Is(err, lab.ErrNotConnectedByHost):
		return HTTPAnswer{}, err
	case errors.Is(err, context.DeadlineExceeded):
		return HTTPAnswer{Failure: fmt.Sprintf("no connection within %s", timeout)}, nil
	default:
		return HTTPAnswer{Failure: "connection failed: " + err.Error()}, nil
	}
	defer conn.Close()
	// A forwarded connection may have no deadlines: closing it is what
	// ends a read that waits too long.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.0\r\nHost: probe\r\n\r\n", requestPath(path)); err != nil {
		if ctx.Err() != nil {
			return noAnswer, nil
		}
		return HTTPAnswer{Failure: "connection failed: " + err.Error()}, nil
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	line = strings.TrimRight(line, "\r\n")
	if err != nil && line == "" {
		if ctx.Err() != nil {
			return noAnswer, nil
		}
		return HTTPAnswer{Failure: "connection failed: closed without an answer (" + err.Error() + ")"}, nil
	}
	ans := HTTPAnswer{Line: line}
	if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/") {
		ans.Status, _ = strconv.Atoi(f[1])
	}
	if withBody {
		// HTTP/1.0: the server closes after its answer; the body follows
		// the first empty line.
		rest, _ := io.ReadAll(io.LimitReader(r, 8192))
		if _, body, ok := strings.Cut(strings.ReplaceAll(string(rest), "\r\n", "\n"), "\n\n"); ok {
			ans.Body = FirstLine([]byte(body))
		}
	}
	return ans, nil
}

// requestPath keeps the request line one line: a path with spaces or
// control characters is asked as "/".
func requestPath(path string) string {
	if path == "" || !strings.HasPrefix(path, "/") || strings.ContainsFunc(path, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "/"
	}
	return path
}
