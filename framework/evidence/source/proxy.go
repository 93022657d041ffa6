package source

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/lab"
)

// Proxy reads the test service's rules as kube-proxy (iptables mode)
// programmed them on one node, with iptables-save over SSH.
type Proxy struct {
	name               evidence.Source
	host               lab.Host
	question           evidence.Question
	namespace, service string
}

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
	res, err := p.host.Run(ctx, "iptables-save")
	at := now()
	if err != nil {
		return one(evidence.UnreadableAnswer(Reason(err), at))
	}
	if res.ExitCode != 0 {
		return one(evidence.UnreadableAnswer(fmt.Sprintf("error: iptables-save on %s exited %d: %s", p.host.Name(), res.ExitCode, firstLine([]byte(res.Stderr))), at))
	}
	v, err := ProxyBackendsFromIPTables(res.Stdout, p.namespace, p.service)
	if err != nil {
		return one(evidence.UnreadableAnswer("error: "+p.host.Name()+": "+err.Error(), at))
	}
	return one(answer(v, at, ""))
}

// rule is one "-A CHAIN ..." line of iptables-save, split into its chain,
// its comment, its jump target and the arguments faultline reads.
type rule struct {
	table, chain, comment, jump string
	dest, proto, dport, toDest  string
}

// ProxyBackendsFromIPTables finds a service's rules in iptables-save output
// written by kube-proxy in iptables mode: KUBE-SERVICES → KUBE-SVC-* →
// KUBE-SEP-* → DNAT for ports with endpoints, and the filter table's
// REJECT for ports without. Output without kube-proxy's KUBE-SERVICES chain
// is an error (kube-proxy is not in iptables mode, or has not run), never
// "no backends".
func ProxyBackendsFromIPTables(out, namespace, name string) (evidence.ProxyBackendsValue, error) {
	rules, err := parseIPTablesSave(out)
	if err != nil {
		return evidence.ProxyBackendsValue{}, err
	}
	byChain := map[string][]rule{}
	haveServices := false
	for _, r := range rules {
		byChain[r.table+"/"+r.chain] = append(byChain[r.table+"/"+r.chain], r)
	}
	if strings.Contains(out, ":KUBE-SERVICES ") {
		haveServices = true
	}
	if !haveServices {
		return evidence.ProxyBackendsValue{}, fmt.Errorf("no KUBE-SERVICES chain in iptables-save (kube-proxy not in iptables mode, or not running)")
	}
	svc := namespace + "/" + name
	portName := func(comment string) (string, bool) {
		// kube-proxy writes "<ns>/<name>:<port> cluster IP" or, for an
		// unnamed port, "<ns>/<name> cluster IP".
		for _, suffix := range []string{" cluster IP", " has no endpoints"} {
			if base, ok := strings.CutSuffix(comment, suffix); ok && (base == svc || strings.HasPrefix(base, svc+":")) {
				return base, true
			}
		}
		return "", false
	}
	ports := map[string]*evidence.ProxyPort{}
	get := func(port string, r rule) *evidence.ProxyPort {
		p := ports[port]
		if p == nil {
			p = &evidence.ProxyPort{Port: port, Backends: []string{}}
			ports[port] = p
		}
		if r.dest != "" {
			p.ClusterIP = strings.TrimSuffix(r.dest, "/32")
		}
		if r.dport != "" {
			p.ServicePort = r.dport + "/" + r.proto
		}
		return p
	}
	for _, r := range byChain["nat/KUBE-SERVICES"] {
		port, ok := portName(r.comment)
		if !ok || !strings.HasPrefix(r.jump, "KUBE-SVC-") {
			continue
		}
		p := get(port, r)
		seen := map[string]bool{}
		for _, sr := range byChain["nat/"+r.jump] {
			if !strings.HasPrefix(sr.jump, "KUBE-SEP-") || seen[sr.jump] {
				continue
			}
			seen[sr.jump] = true
			for _, er := range byChain["nat/"+sr.jump] {
				if er.jump == "DNAT" && er.toDest != "" {
					p.Backends = append(p.Backends, er.toDest)
				}
			}
		}
	}
	for _, r := range byChain["filter/KUBE-SERVICES"] {
		port, ok := portName(r.comment)
		if ok && r.jump == "REJECT" {
			get(port, r).Rejected = true
		}
	}
	v := evidence.ProxyBackendsValue{Ports: []evidence.ProxyPort{}}
	for _, p := range ports {
		sort.Strings(p.Backends)
		v.Ports = append(v.Ports, *p)
	}
	sort.Slice(v.Ports, func(i, j int) bool { return v.Ports[i].Port < v.Ports[j].Port })
	return v, nil
}

func parseIPTablesSave(out string) ([]rule, error) {
	var rules []rule
	table := ""
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
			continue
		case !strings.HasPrefix(line, "-A "):
			continue
		}
		if table == "" {
			return nil, fmt.Errorf("iptables-save line %d: a rule outside any table", n+1)
		}
		words, err := splitRuleWords(line)
		if err != nil {
			return nil, fmt.Errorf("iptables-save line %d: %w", n+1, err)
		}
		r := rule{table: table, chain: words[1]}
		for i := 2; i < len(words); i++ {
			next := func() string {
				if i+1 < len(words) {
					i++
					return words[i]
				}
				return ""
			}
			switch words[i] {
			case "--comment":
				r.comment = next()
			case "-j", "--jump":
				r.jump = next()
			case "-d", "--destination":
				r.dest = next()
			case "-p", "--protocol":
				r.proto = next()
			case "--dport", "--destination-port":
				r.dport = next()
			case "--to-destination":
				r.toDest = next()
			case "!":
				// A negated match ("! -s 10.0.0.0/8") is skipped whole:
				// none of the arguments read here is ever negated by
				// kube-proxy.
				next()
				next()
			}
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// splitRuleWords splits an iptables-save line into words the way
// iptables-save quotes them: double quotes around words with spaces,
// backslash escaping a quote or backslash inside.
func splitRuleWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case c == '"':
			quoted = !quoted
			inWord = true
		case !quoted && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) < 2 {
		return nil, fmt.Errorf("rule without a chain: %q", line)
	}
	return words, nil
}
