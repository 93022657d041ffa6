package source

import (
	"context"
	"errors"
	"net"
	"sort"

	"github.com/faultline/faultline/framework/evidence"
)

// DNS asks the cluster DNS server for the test service's name. A lab that
// runs no cluster DNS gets a reader that says "not deployed" every time.
type DNS struct {
	server   string // host:port; empty when not deployed
	why      string
	domain   string
	subjects evidence.Subjects
	resolver *net.Resolver
}

// NewDNS makes the "dns" reader asking server (host:port) about the
// service under domain ("cluster.local").
func NewDNS(server, domain string, subjects evidence.Subjects) *DNS {
	d := &DNS{server: server, domain: domain, subjects: subjects}
	d.resolver = &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, network, d.server)
		},
	}
	return d
}

// NewDNSNotDeployed makes the "dns" reader of a lab without cluster DNS.
func NewDNSNotDeployed(why string) *DNS { return &DNS{why: why} }

func (d *DNS) Source() evidence.Source { return "dns" }

func (d *DNS) Questions() []evidence.Question { return []evidence.Question{evidence.ServiceDNS} }

func (d *DNS) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	one := func(a evidence.Answer) map[evidence.Question]evidence.Answer {
		return map[evidence.Question]evidence.Answer{evidence.ServiceDNS: a}
	}
	if d.server == "" {
		return one(evidence.UnreadableAnswer(NotDeployed(d.why), now()))
	}
	name := d.subjects.ServiceName + "." + d.subjects.ServiceNamespace + ".svc." + d.domain + "."
	addrs, err := d.resolver.LookupHost(ctx, name)
	at := now()
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		// The server answered that the name does not exist: an answer.
		return one(answer(evidence.DNSValue{Name: name, Addresses: []string{}}, at, ""))
	case err != nil:
		return one(evidence.UnreadableAnswer(Reason(err), at))
	}
	sort.Strings(addrs)
	return one(answer(evidence.DNSValue{Name: name, Addresses: addrs}, at, ""))
}
