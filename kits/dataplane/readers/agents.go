package readers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/lab"
)

// The readers of paper 2: what a pod on a node finds when it connects, and
// what the node's agents say of themselves. Both reach their target from
// the node (lab.Host.Dial): the runner may have no route to pod or node
// addresses, and a connection that starts on the node is what pod traffic
// and a health checker there would make.

// viaHost is an HTTP client whose every connection starts on host, one
// connection per request.
func viaHost(host lab.Host, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
				return host.Dial(ctx, "tcp", addr)
			},
			DisableKeepAlives: true,
		},
	}
}

// getVia GETs url through c and returns the status and the body's first
// 4 KiB.
func getVia(ctx context.Context, c *http.Client, u string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// PodDialer asks a client pod on one node (a netexec pod) to make a new
// connection to a target and say what answered: source "pod/<host>",
// question dataplane.AgentServiceProbe. The pod's address is looked up
// through client and kept while it answers; a pod that cannot be asked
// (not running, its node unreachable) is unreadable, never an answer.
type PodDialer struct {
	name      evidence.Source
	question  evidence.Question
	host      lab.Host
	client    kubernetes.Interface
	namespace string
	pod       string
	// target finds what the pod dials (host:port), once; path is what it
	// asks there.
	target  func(context.Context) (string, error)
	path    string
	timeout time.Duration
	http    *http.Client

	mu       sync.Mutex
	podIP    string
	targetIs string
}

// PodPort is where the netexec client pods serve their /dial.
const PodPort = 8080

// NewPodDialer makes the reader of pod namespace/pod on host dialling the
// address target finds (asked until it finds one, then kept) and asking
// path, each connection given timeout.
func NewPodDialer(host lab.Host, client kubernetes.Interface, q evidence.Question, namespace, pod string, target func(context.Context) (string, error), path string, timeout time.Duration) *PodDialer {
	return &PodDialer{
		name: evidence.Source("pod/" + host.Name()), question: q, host: host, client: client,
		namespace: namespace, pod: pod, target: target, path: path, timeout: timeout,
		// The pod's own timeout, the hop to it and its answer.
		http: viaHost(host, timeout+2*time.Second),
	}
}

// As names the reader name instead of "pod/<host>": for a second pod
// dialling from the same node, whose connections another invariant reads.
func (d *PodDialer) As(name evidence.Source) *PodDialer {
	d.name = name
	return d
}

func (d *PodDialer) Source() evidence.Source        { return d.name }
func (d *PodDialer) Questions() []evidence.Question { return []evidence.Question{d.question} }

func (d *PodDialer) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	one := func(a evidence.Answer) map[evidence.Question]evidence.Answer {
		return map[evidence.Question]evidence.Answer{d.question: a}
	}
	ip, err := d.address(ctx)
	if err != nil {
		return one(evidence.UnreadableAnswer(err.Error(), now()))
	}
	target, err := d.targetAddress(ctx)
	if err != nil {
		return one(evidence.UnreadableAnswer("finding what to dial: "+source.Reason(err), now()))
	}
	q := url.Values{"target": {target}, "path": {d.path}, "timeout": {d.timeout.String()}}
	u := "http://" + net.JoinHostPort(ip, strconv.Itoa(PodPort)) + "/dial?" + q.Encode()
	status, body, err := getVia(ctx, d.http, u)
	at := now()
	if err != nil {
		d.forget(ip)
		return one(evidence.UnreadableAnswer(fmt.Sprintf("asking pod %s/%s at %s from %s: %s", d.namespace, d.pod, ip, d.host.Name(), source.Reason(err)), at))
	}
	if status != http.StatusOK {
		return one(evidence.UnreadableAnswer(fmt.Sprintf("error: pod %s/%s answered %d: %s", d.namespace, d.pod, status, source.FirstLine([]byte(body))), at))
	}
	var v dataplane.DialValue
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return one(evidence.UnreadableAnswer(fmt.Sprintf("error: pod %s/%s: its answer is not a dial result: %v", d.namespace, d.pod, err), at))
	}
	if v.From != d.pod {
		// The address now belongs to another pod: its connection says
		// nothing of the client's.
		d.forget(ip)
		return one(evidence.UnreadableAnswer(fmt.Sprintf("error: the pod at %s is %q, not %s/%s", ip, v.From, d.namespace, d.pod), at))
	}
	v.From = d.namespace + "/" + d.pod
	return one(evidence.EncodedAnswer(v, at, ""))
}

// address is the pod's IP: the one kept, or looked up.
func (d *PodDialer) address(ctx context.Context) (string, error) {
	d.mu.Lock()
	ip := d.podIP
	d.mu.Unlock()
	if ip != "" {
		return ip, nil
	}
	p, err := d.client.CoreV1().Pods(d.namespace).Get(ctx, d.pod, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("looking up the client pod %s/%s: %s", d.namespace, d.pod, source.Reason(err))
	}
	if p.Status.PodIP == "" || p.Spec.NodeName != d.host.Name() {
		return "", fmt.Errorf("error: the client pod %s/%s has no address on %s (node %q, phase %s)", d.namespace, d.pod, d.host.Name(), p.Spec.NodeName, p.Status.Phase)
	}
	d.mu.Lock()
	d.podIP = p.Status.PodIP
	d.mu.Unlock()
	return p.Status.PodIP, nil
}

// targetAddress is the target: the one kept, or found.
func (d *PodDialer) targetAddress(ctx context.Context) (string, error) {
	d.mu.Lock()
	t := d.targetIs
	d.mu.Unlock()
	if t != "" {
		return t, nil
	}
	t, err := d.target(ctx)
	if err != nil {
		return "", err
	}
	d.mu.Lock()
	d.targetIs = t
	d.mu.Unlock()
	return t, nil
}

// forget drops a kept address that did not answer, so the next read
// looks it up again (the pod may have been recreated).
func (d *PodDialer) forget(ip string) {
	d.mu.Lock()
	if d.podIP == ip {
		d.podIP = ""
	}
	d.mu.Unlock()
}

// AgentEndpoint is one agent's health endpoint on a node's address.
type AgentEndpoint struct {
	Agent string // "kube-proxy"
	Port  int
	Path  string // "/healthz"
}

// AgentHealth reads a node's agents' health endpoints: source
// "agents/<host>", question dataplane.AgentHealth. One endpoint that does
// not answer is recorded in the value with its error (an agent that is
// down says so by not answering); the node itself not reached is
// unreadable.
type AgentHealth struct {
	name      evidence.Source
	host      lab.Host
	endpoints []AgentEndpoint
	timeout   time.Duration
}

// NewAgentHealth makes the reader of host's agents at endpoints.
func NewAgentHealth(host lab.Host, endpoints []AgentEndpoint, timeout time.Duration) *AgentHealth {
	return &AgentHealth{name: evidence.Source("agents/" + host.Name()), host: host, endpoints: endpoints, timeout: timeout}
}

func (a *AgentHealth) Source() evidence.Source { return a.name }
func (a *AgentHealth) Questions() []evidence.Question {
	return []evidence.Question{dataplane.AgentHealth}
}

func (a *AgentHealth) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	v := dataplane.AgentHealthValue{Agents: map[string]dataplane.AgentHealthAnswer{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var hostErr error
	for _, e := range a.endpoints {
		wg.Go(func() {
			ans, err := a.ask(ctx, e)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				hostErr = err
				return
			}
			v.Agents[e.Agent] = ans
		})
	}
	wg.Wait()
	at := now()
	if hostErr != nil {
		return map[evidence.Question]evidence.Answer{dataplane.AgentHealth: evidence.UnreadableAnswer(fmt.Sprintf("reaching %s: %s", a.host.Name(), source.Reason(hostErr)), at)}
	}
	return map[evidence.Question]evidence.Answer{dataplane.AgentHealth: evidence.EncodedAnswer(v, at, "")}
}

// ask GETs one endpoint as a health checker on the node would: refused,
// or connected with no answer in time, is the agent's answer (it is not
// healthy to its checker); an error means the node was not reached.
func (a *AgentHealth) ask(ctx context.Context, e AgentEndpoint) (dataplane.AgentHealthAnswer, error) {
	ans, err := source.AskOnce(ctx, a.host, net.JoinHostPort(a.host.Address(), strconv.Itoa(e.Port)), e.Path, a.timeout, true)
	if err != nil {
		return dataplane.AgentHealthAnswer{}, err
	}
	if ans.Failure != "" {
		return dataplane.AgentHealthAnswer{Error: ans.Failure}, nil
	}
	if ans.Status == 0 {
		return dataplane.AgentHealthAnswer{Error: "no HTTP answer: " + ans.Line}, nil
	}
	return dataplane.AgentHealthAnswer{StatusCode: ans.Status, Body: ans.Body}, nil
}

// policyDump is how one agent's applied state is read on a node: the
// command that dumps it (lab.PolicyDumpCommand) and the parser of that
// command's output.
type policyDump struct {
	command string
	parse   func(out string) (dataplane.PolicyRulesValue, error)
}

// iptablesAndIPSets parses the filter table and the IP sets dumped in one
// command, for agents that program both (kube-router, Calico's iptables
// data plane).
func iptablesAndIPSets(parse func(iptablesSave, ipsetSave string) (dataplane.PolicyRulesValue, error)) func(string) (dataplane.PolicyRulesValue, error) {
	return func(out string) (dataplane.PolicyRulesValue, error) {
		ipt, sets, ok := strings.Cut(out, lab.PolicyDumpSeparator+"\n")
		if !ok {
			return dataplane.PolicyRulesValue{}, errors.New("the dump has no ipset part")
		}
		return parse(ipt, sets)
	}
}

// policyParsers are the parsers of the agents whose applied state is
// read, by the name a lab file gives them
// (lab.KubernetesSettings.PolicyAgent).
var policyParsers = map[string]func(string) (dataplane.PolicyRulesValue, error){
	lab.PolicyAgentKubeRouter:          iptablesAndIPSets(PolicyRulesFromKubeRouter),
	lab.PolicyAgentCalico:              iptablesAndIPSets(PolicyRulesFromCalico),
	lab.PolicyAgentKubeNetworkPolicies: PolicyRulesFromKubeNetworkPolicies,
}

// policyDumpOf is agent's dump: its command and its parser.
func policyDumpOf(agent string) (policyDump, bool) {
	cmd, ok := lab.PolicyDumpCommand(agent)
	parse, parsed := policyParsers[agent]
	return policyDump{command: cmd, parse: parse}, ok && parsed
}

// PolicyRules reads the NetworkPolicy rules a node's policy agent applied:
// source "policy-agent/<host>", question dataplane.AgentPolicyRules, with
// the dump and parser of that agent (kube-router's and Calico's filter
// table and IP sets in one command, kube-network-policies' nftables
// table).
type PolicyRules struct {
	name evidence.Source
	host lab.Host
	dump policyDump
}

// PolicyRulesFor makes the reader of host's policy agent's rules, for the
// agent l's lab file names (lab.PolicyAgentOf). A lab that names none, or
// one whose rules are not read, gets a reader unreadable in every round
// saying so: reading another agent's layout would find nothing
// programmed, an answer the node never gave.
func PolicyRulesFor(l lab.Lab, host lab.Host) evidence.Reader {
	name := evidence.Source("policy-agent/" + host.Name())
	agent := lab.PolicyAgentOf(l)
	d, ok := policyDumpOf(agent)
	switch {
	case agent == "":
		return source.NewUnavailable(name, []evidence.Question{dataplane.AgentPolicyRules},
			"the lab file names no NetworkPolicy agent (kubernetes.policyAgent: "+strings.Join(lab.PolicyAgents, ", ")+")")
	case !ok:
		return source.NewUnavailable(name, []evidence.Question{dataplane.AgentPolicyRules}, "no reader for the policy agent "+agent)
	}
	return &PolicyRules{name: name, host: host, dump: d}
}

func (p *PolicyRules) Source() evidence.Source { return p.name }
func (p *PolicyRules) Questions() []evidence.Question {
	return []evidence.Question{dataplane.AgentPolicyRules}
}

func (p *PolicyRules) Read(ctx context.Context) map[evidence.Question]evidence.Answer {
	one := func(a evidence.Answer) map[evidence.Question]evidence.Answer {
		return map[evidence.Question]evidence.Answer{dataplane.AgentPolicyRules: a}
	}
	res, err := p.host.Run(ctx, p.dump.command)
	at := now()
	if err != nil {
		return one(evidence.UnreadableAnswer(source.Reason(err), at))
	}
	if res.ExitCode != 0 {
		return one(evidence.UnreadableAnswer(fmt.Sprintf("error: dumping the policy agent's rules on %s exited %d: %s", p.host.Name(), res.ExitCode, source.FirstLine([]byte(res.Stderr))), at))
	}
	v, err := p.dump.parse(res.Stdout)
	if err != nil {
		return one(evidence.UnreadableAnswer("error: "+p.host.Name()+": "+err.Error(), at))
	}
	return one(evidence.EncodedAnswer(v, at, ""))
}

func now() time.Time { return time.Now().UTC() }
