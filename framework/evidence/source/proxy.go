package source

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source/iptables"
	"github.com/faultline/faultline/lab"
)

// Proxy reads the test service's rules as kube-proxy (iptables mode)
// programmed them on one node, with iptables-save over SSH.
type Proxy struct {
	name               evidence.Source
	host               lab.Host
	question           evidence.Question
	namespace, service string
	nft                bool
}

// InNFTablesMode makes the reader read kube-proxy's nftables table
// (nft -j list table ip kube-proxy) instead of iptables-save.
func (p *Proxy) InNFTablesMode() *Proxy { p.nft = true; return p }

// NewProxy makes a reader named "proxy/<host>" of the subjects' service.
func NewProxy(host lab.Host, subjects evidence.Subjects) *Proxy {
	return NewServiceProxy(evidence.Source("proxy/"+host.Name()), host, evidence.ServiceProxyBackends, subjects.ServiceNamespace, subjects.ServiceName)
}

// NewServiceProxy makes a reader named name that answers q with service
// namespace/service's rules on host.
func NewServiceProxy(name evidence.Source, host lab.Host, q evidence.Question, namespace, service string) *Proxy {
	return &Proxy{name: name, host: host, question: q, namespace: namespace, service: service}
}

func (p *Proxy) Source() evidence.Source { return p.name }

func (p *Proxy) Questions() []evidence.Question {
	return []evidence.Question{p.question}
}

func (p *Proxy) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	one := func(a evidence.Answer) map[evidence.Question]evidence.Answer {
		return map[evidence.Question]evidence.Answer{p.question: a}
	}
	cmd, parse := "iptables-save", ProxyBackendsFromIPTables
	if p.nft {
		// "list ruleset" always succeeds: with no kube-proxy table it is
		// read as nothing programmed, not as a failed command.
		cmd, parse = "nft -j list ruleset ip", ProxyBackendsFromNFT
	}
	res, err := p.host.Run(ctx, cmd)
	at := now()
	if err != nil {
		return one(evidence.UnreadableAnswer(Reason(err), at))
	}
	if res.ExitCode != 0 {
		return one(evidence.UnreadableAnswer(fmt.Sprintf("error: %s on %s exited %d: %s", cmd, p.host.Name(), res.ExitCode, FirstLine([]byte(res.Stderr))), at))
	}
	v, err := parse(res.Stdout, p.namespace, p.service)
	if err != nil {
		return one(evidence.UnreadableAnswer("error: "+p.host.Name()+": "+err.Error(), at))
	}
	return one(answer(v, at, ""))
}

// ProxyBackendsFromIPTables finds a service's rules in iptables-save output
// written by kube-proxy in iptables mode (ProxyServicesFromIPTables, kept
// to the service's ports). Output without kube-proxy's KUBE-SERVICES chain
// is an error (kube-proxy is not in iptables mode, or has not run), never
// "no backends".
func ProxyBackendsFromIPTables(out, namespace, name string) (evidence.ProxyBackendsValue, error) {
	v, err := ProxyServicesFromIPTables(out)
	if err != nil {
		return evidence.ProxyBackendsValue{}, err
	}
	if v.NothingProgrammed {
		return evidence.ProxyBackendsValue{}, fmt.Errorf("no KUBE-SERVICES chain in iptables-save (kube-proxy not in iptables mode, or not running)")
	}
	return v.Service(namespace, name), nil
}

// ProxyServicesFromIPTables reads every service port kube-proxy (iptables
// mode) programmed from one iptables-save output: KUBE-SERVICES →
// KUBE-SVC-* (or KUBE-SVL-* for internalTrafficPolicy Local) → KUBE-SEP-*
// → DNAT for ports with endpoints, the filter table's REJECT for ports
// without, and its DROP for ports without an endpoint on this node under
// internalTrafficPolicy Local. Output without a KUBE-SERVICES chain (or no output at all) is
// NothingProgrammed; output iptables-save does not write is an error.
func ProxyServicesFromIPTables(out string) (evidence.ProxyBackendsValue, error) {
	if strings.TrimSpace(out) == "" {
		return evidence.ProxyBackendsValue{Ports: []evidence.ProxyPort{}, NothingProgrammed: true}, nil
	}
	d, err := iptables.Parse(out)
	if err != nil {
		return evidence.ProxyBackendsValue{}, err
	}
	if !d.Declares("nat", "KUBE-SERVICES") && !d.Declares("filter", "KUBE-SERVICES") {
		return evidence.ProxyBackendsValue{Ports: []evidence.ProxyPort{}, NothingProgrammed: true}, nil
	}
	// kube-proxy writes "<ns>/<name>:<port> cluster IP" or, for an unnamed
	// port, "<ns>/<name> cluster IP"; "... has no endpoints" in filter.
	portName := func(comment, suffix string) (string, bool) {
		base, ok := strings.CutSuffix(comment, suffix)
		return base, ok && strings.Contains(base, "/")
	}
	ports := map[string]*evidence.ProxyPort{}
	get := func(port string, r iptables.Rule) *evidence.ProxyPort {
		p := ports[port]
		if p == nil {
			p = &evidence.ProxyPort{Port: port, Backends: []string{}}
			ports[port] = p
		}
		if r.Dest != "" {
			p.ClusterIP = strings.TrimSuffix(r.Dest, "/32")
		}
		if r.DPort != "" {
			p.ServicePort = r.DPort + "/" + r.Proto
		}
		return p
	}
	for _, r := range d.Chain("nat", "KUBE-SERVICES") {
		port, ok := portName(r.Comment, " cluster IP")
		if !ok || !(strings.HasPrefix(r.Jump, "KUBE-SVC-") || strings.HasPrefix(r.Jump, "KUBE-SVL-")) {
			continue
		}
		p := get(port, r)
		seen := map[string]bool{}
		for _, sr := range d.Chain("nat", r.Jump) {
			if !strings.HasPrefix(sr.Jump, "KUBE-SEP-") || seen[sr.Jump] {
				continue
			}
			seen[sr.Jump] = true
			for _, er := range d.Chain("nat", sr.Jump) {
				if er.Jump == "DNAT" && er.ToDest != "" {
					p.Backends = append(p.Backends, er.ToDest)
				}
			}
		}
	}
	for _, r := range d.Chain("filter", "KUBE-SERVICES") {
		if port, ok := portName(r.Comment, " has no endpoints"); ok && r.Jump == "REJECT" {
			get(port, r).Rejected = true
		}
		if port, ok := portName(r.Comment, " has no local endpoints"); ok && r.Jump == "DROP" {
			get(port, r).Dropped = true
		}
	}
	return sortedProxyPorts(ports), nil
}

func sortedProxyPorts(ports map[string]*evidence.ProxyPort) evidence.ProxyBackendsValue {
	v := evidence.ProxyBackendsValue{Ports: []evidence.ProxyPort{}}
	for _, p := range ports {
		sort.Strings(p.Backends)
		v.Ports = append(v.Ports, *p)
	}
	sort.Slice(v.Ports, func(i, j int) bool { return v.Ports[i].Port < v.Ports[j].Port })
	return v
}
