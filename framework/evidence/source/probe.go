package source

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// probeTimeoutSeconds bounds one request to one endpoint, so that a round
// over a few endpoints stays within a source's read timeout.
const probeTimeoutSeconds = 1

// Prober asks, from one worker over SSH, whether each address of the test
// service's EndpointSlices (ready or not) answers an HTTP request: the
// "and answer" of endpoints-truthful, seen from where pod traffic comes
// from. The request is made with bash's /dev/tcp, so the host needs only
// bash and timeout.
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
	res, err := p.host.Run(ctx, probeScript(targets, p.path))
	at := now()
	if err != nil {
		return one(evidence.UnreadableAnswer("probing from "+p.host.Name()+": "+Reason(err), at))
	}
	v, err := ProbesFromOutput(res.Stdout, targets)
	if err != nil {
		return one(evidence.UnreadableAnswer("error: probing from "+p.host.Name()+": "+err.Error()+": "+firstLine([]byte(res.Stderr)), at))
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

// probeScript prints one line per target: "<address> <status line>" or
// "<address> ERROR <exit code>". It is POSIX sh around a bash -c for
// /dev/tcp. Addresses and ports are checked IPs and numbers, so they are
// safe in the script.
func probeScript(targets []probeTarget, path string) string {
	var b strings.Builder
	for _, t := range targets {
		fmt.Fprintf(&b, `if line=$(timeout %d bash -c 'exec 3<>/dev/tcp/%s/%d && printf "GET %s HTTP/1.0\r\nHost: probe\r\n\r\n" >&3 && head -n1 <&3 | tr -d "\r"' 2>/dev/null); then echo "%s $line"; else echo "%s ERROR $?"; fi`+"\n",
			probeTimeoutSeconds, t.Address, t.Port, shellSafePath(path), t.Address, t.Address)
	}
	return b.String()
}

// shellSafePath keeps a path usable inside the single-quoted script.
func shellSafePath(path string) string {
	if path == "" || strings.ContainsAny(path, "'\"\\$` \t\r\n") {
		return "/"
	}
	return path
}

// ProbesFromOutput reads the script's lines: an address answered when its
// status line is an HTTP 2xx or 3xx.
func ProbesFromOutput(out string, targets []probeTarget) (evidence.EndpointProbesValue, error) {
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		addr, rest, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok {
			got[addr] = rest
		}
	}
	v := evidence.EndpointProbesValue{Probes: []evidence.EndpointProbe{}}
	for _, t := range targets {
		rest, ok := got[t.Address]
		if !ok {
			return evidence.EndpointProbesValue{}, fmt.Errorf("no result for %s in the probe's output", t.Address)
		}
		p := evidence.EndpointProbe{Address: t.Address, Detail: rest}
		if code, ok := strings.CutPrefix(rest, "ERROR "); ok {
			why := "no answer"
			if n, err := strconv.Atoi(code); err == nil && n == 124 {
				why = fmt.Sprintf("no answer within %ds", probeTimeoutSeconds)
			} else if err == nil {
				why = fmt.Sprintf("connection failed (exit %d)", n)
			}
			p.Detail = fmt.Sprintf("%s:%d: %s", t.Address, t.Port, why)
		} else if f := strings.Fields(rest); len(f) >= 2 && strings.HasPrefix(f[0], "HTTP/") && (strings.HasPrefix(f[1], "2") || strings.HasPrefix(f[1], "3")) {
			p.Answered = true
		}
		v.Probes = append(v.Probes, p)
	}
	return v, nil
}
