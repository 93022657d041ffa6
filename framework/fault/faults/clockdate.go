package faults

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/lab"
)

// clockEndpoint is a component's HTTP endpoint: every Go HTTP server
// stamps its answers with a Date header from its own process's wall
// clock, whatever the status, so a refusal for lack of credentials tells
// the time as well as a success.
type clockEndpoint struct {
	service string
	port    int
	path    string
	tls     bool
}

// clockEndpoints are the components' default ports (the local lab's and
// kubeadm's): etcd's metrics listener, the API server's secure port, the
// controller-manager's and scheduler's secure ports, the kubelet's and
// kube-proxy's health ports.
func clockEndpoints(l lab.Lab) []clockEndpoint {
	api := 6443
	if c := l.Config(); c != nil && c.Network.APIServerPort != 0 {
		api = c.Network.APIServerPort
	}
	return []clockEndpoint{
		{lab.ServiceEtcd, 2381, "/health", false},
		{lab.ServiceAPIServer, api, "/healthz", true},
		{lab.ServiceControllerManager, 10257, "/healthz", true},
		{lab.ServiceScheduler, 10259, "/healthz", true},
		{lab.ServiceKubelet, 10248, "/healthz", false},
		{lab.ServiceKubeProxy, 10256, "/healthz", false},
	}
}

// componentClock is one component's clock as its Date header shows it.
type componentClock struct {
	service string
	skew    time.Duration // its clock minus this program's
	rtt     time.Duration
}

// componentClocks asks every running component of h with an endpoint for
// its Date header, over a connection h opens (on its own address, then
// loopback), and returns how far each clock is from this program's. The
// header holds whole seconds, so half a second is added back and a skew
// is known to ±0.5 s plus half the round trip. The TLS endpoints are not
// verified: nothing is sent but a GET with no credentials, and only the
// Date header is read.
func componentClocks(ctx context.Context, l lab.Lab, h lab.Host) ([]componentClock, []string, error) {
	states, err := h.Services(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: listing services: %w", h.Name(), err)
	}
	running := map[string]bool{}
	for _, s := range states {
		running[s.Name] = s.State == "running"
	}
	var clocks []componentClock
	var unread []string
	for _, ep := range clockEndpoints(l) {
		if !running[ep.service] {
			continue
		}
		c, err := dateOf(ctx, h, ep)
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", ep.service, err))
			continue
		}
		clocks = append(clocks, c)
	}
	if len(clocks) == 0 {
		if len(unread) == 0 {
			return nil, nil, fmt.Errorf("%s runs no component with an HTTP endpoint to read its clock from", h.Name())
		}
		return nil, unread, fmt.Errorf("%s: no component told its time: %s", h.Name(), strings.Join(unread, "; "))
	}
	return clocks, unread, nil
}

func dateOf(ctx context.Context, h lab.Host, ep clockEndpoint) (componentClock, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var conn net.Conn
	var errs []error
	for _, addr := range []string{h.Address(), "127.0.0.1"} {
		c, err := h.Dial(ctx, "tcp", net.JoinHostPort(addr, strconv.Itoa(ep.port)))
		if err == nil {
			conn = c
			break
		}
		errs = append(errs, err)
	}
	if conn == nil {
		return componentClock{}, errors.Join(errs...)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if ep.tls {
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
		if err := tc.HandshakeContext(ctx); err != nil {
			return componentClock{}, fmt.Errorf("TLS handshake: %w", err)
		}
		conn = tc
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.Address()+ep.path, nil)
	if err != nil {
		return componentClock{}, err
	}
	req.Close = true
	before := time.Now()
	if err := req.Write(conn); err != nil {
		return componentClock{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	after := time.Now()
	if err != nil {
		return componentClock{}, err
	}
	resp.Body.Close()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return componentClock{}, fmt.Errorf("its answer (%s) has no Date header to read: %q", resp.Status, resp.Header.Get("Date"))
	}
	mid := before.Add(after.Sub(before) / 2)
	return componentClock{service: ep.service, skew: date.Add(500 * time.Millisecond).Sub(mid), rtt: after.Sub(before)}, nil
}

// skewSeen reports whether a clock off by skew shows an offset asked:
// more than half of it, in its direction.
func skewSeen(skew, want time.Duration) bool {
	return (want > 0 && skew > want/2) || (want < 0 && skew < want/2)
}

// describeClocks renders the clocks read, for a probe's detail.
func describeClocks(clocks []componentClock, unread []string) string {
	sort.Slice(clocks, func(i, j int) bool { return clocks[i].service < clocks[j].service })
	var parts []string
	for _, c := range clocks {
		parts = append(parts, fmt.Sprintf("%s %s", c.service, c.skew.Round(100*time.Millisecond)))
	}
	s := strings.Join(parts, ", ")
	if len(unread) > 0 {
		s += " (not read: " + strings.Join(unread, "; ") + ")"
	}
	return s
}
