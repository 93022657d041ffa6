package dataplane

import (
	"strings"

	"github.com/faultline/faultline/framework/evidence"
)

// The data plane's questions: what the API records of the agents' test service,
// what each node's agents applied of it, and what a new connection from a
// pod on each node finds.
const (
	// AgentServiceEndpoints is the agents' test service's endpoints as an
	// API server records them (an EndpointsValue).
	AgentServiceEndpoints evidence.Question = "agents/service-endpoints"
	// AgentServiceTranslation is the agents' test service as kube-proxy
	// programmed it on one node (a ProxyBackendsValue).
	AgentServiceTranslation evidence.Question = "agents/service-translation"
	// AgentServiceProbe is a new connection from the client pod on one
	// node to the service's cluster address (a DialValue): which backend
	// answered, or why none did.
	AgentServiceProbe evidence.Question = "agents/service-probe"
	// AgentHealth is what one node's agents say of themselves on their
	// health endpoints (an AgentHealthValue).
	AgentHealth evidence.Question = "agents/health"
)

// DialValue is one new TCP connection a pod made and what came back.
type DialValue struct {
	// From is the pod that made the connection (namespace/name) and
	// Target what it dialled (host:port).
	From   string `json:"from"`
	Target string `json:"target"`
	// Connected is true when the connection was made.
	Connected bool `json:"connected"`
	// Status is the HTTP status of the answer, 0 when there was none.
	Status int `json:"status,omitempty"`
	// Body is the answer's first line: the answering pod's hostname.
	Body string `json:"body,omitempty"`
	// Error says why there is no answer: "timeout" when nothing answered
	// in time, else the pod's dial error (connection refused, no route).
	Error     string  `json:"error,omitempty"`
	ElapsedMs float64 `json:"elapsedMs"`
}

// Answered is whether an HTTP answer came back.
func (d DialValue) Answered() bool { return d.Status != 0 }

// Made is whether the connection got through: an HTTP answer came back,
// or the TCP connection was made (the target's SYN-ACK came back, which a
// policy that rejects or drops would have stopped) though no answer came
// in time.
func (d DialValue) Made() bool { return d.Connected || d.Answered() }

// AgentHealthValue is each agent's health endpoint on one node, by agent
// name ("kube-proxy", "kube-router").
type AgentHealthValue struct {
	Agents map[string]AgentHealthAnswer `json:"agents"`
}

// AgentHealthAnswer is one health endpoint's answer; Error when none came.
type AgentHealthAnswer struct {
	StatusCode int    `json:"statusCode,omitempty"`
	Body       string `json:"body,omitempty"`
	Error      string `json:"error,omitempty"`
}

// Healthy is a 200 answer.
func (a AgentHealthAnswer) Healthy() bool { return a.StatusCode == 200 }

// Admits says the agent itself told its checker it is not healthy: it
// answered with another status, nothing listened (the connection was
// refused), or its port accepted the connection and the agent did not
// answer in time (a frozen agent: the kernel accepts, the process does
// not answer). A read whose connection was not made in time, or that
// failed otherwise, says neither: the dial may have been slow on the
// reader's side (a loaded machine). Records from before the two timeouts
// were told apart say "no answer within" for both: unknown.
func (a AgentHealthAnswer) Admits() bool {
	if a.StatusCode != 0 {
		return a.StatusCode != 200
	}
	if strings.HasPrefix(a.Error, evidence.ConnectedNoAnswer) {
		return true
	}
	return strings.HasPrefix(a.Error, "connection failed: ") && strings.Contains(a.Error, "connection refused")
}

// The policy questions.
const (
	// AgentPolicyExpected is, as an API server records the policies, pods
	// and namespaces, whether each client pod may connect to the target
	// pod (a PolicyExpectationValue).
	AgentPolicyExpected evidence.Question = "agents/policy-expected"
	// AgentPolicyProbe is a new connection from the client pod on one
	// node to the target pod's address (a DialValue).
	AgentPolicyProbe evidence.Question = "agents/policy-probe"
)

// PolicyExpectationValue is what the recorded policies allow, per pair.
type PolicyExpectationValue struct {
	Pairs []PolicyPair `json:"pairs"`
}

// PolicyPair is one connection the recorded policies decide.
type PolicyPair struct {
	// From is the client pod (namespace/name), To the target pod, Target
	// the address and port dialled (ip:port).
	From    string `json:"from"`
	To      string `json:"to"`
	Target  string `json:"target"`
	Allowed bool   `json:"allowed"`
	// FromNode and TargetNode are the nodes the API records the two pods
	// on (whose policy agents enforce the pair's egress and ingress);
	// FromIP is the client's address as the API records it ("" before it
	// has one).
	FromNode   string `json:"fromNode,omitempty"`
	TargetNode string `json:"targetNode,omitempty"`
	FromIP     string `json:"fromIP,omitempty"`
	// Isolating are the policies that isolate either end; Why says which
	// side refuses, when not allowed.
	Isolating []string `json:"isolating,omitempty"`
	Why       string   `json:"why,omitempty"`
	// EgressDenying names the policies isolating From for egress when
	// none of them admits the connection (its node's agent denies it);
	// IngressDenying those isolating To for ingress when none admits it
	// (the target's node's agent denies it). Empty when that direction
	// allows.
	EgressDenying  []string `json:"egressDenying,omitempty"`
	IngressDenying []string `json:"ingressDenying,omitempty"`
}

// Rejected is a connection the pod could not make because something
// answered no (connection refused: a REJECT, which is how the lab's
// policy agent, kube-router, denies: its pod chains end in "-j REJECT").
// A timeout is not one: nothing answered, which a lost or slow path gives
// as well as a policy that drops; and any other failure (no route, the
// network unreachable) is no policy's answer either.
func (d DialValue) Rejected() bool {
	return !d.Connected && strings.Contains(d.Error, "connection refused")
}

// AgentPolicyRules is the NetworkPolicy rules the policy agent applied
// on one node, read from its kernel tables (a PolicyRulesValue).
const AgentPolicyRules evidence.Question = "agents/policy-rules"

// The DNS questions.
const (
	// AgentDNSExpected is the test name's records as an API server has
	// them: the service's cluster address, none while it does not exist
	// (a DNSExpectedValue).
	AgentDNSExpected evidence.Question = "agents/dns-expected"
	// AgentDNSAnswer is one CoreDNS instance's answer for the test name,
	// asked at the instance's own address from a client pod (a
	// DNSAnswerValue).
	AgentDNSAnswer evidence.Question = "agents/dns-answer"
)

// DNSExpectedValue is the records of Name the API holds.
type DNSExpectedValue struct {
	Name string   `json:"name"`
	IPs  []string `json:"ips"`
}

// DNSAnswerValue is one server's answer: its response code and A records,
// each with the TTL it was given.
type DNSAnswerValue struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	// Instance is the CoreDNS pod asked (namespace/name).
	Instance string      `json:"instance"`
	RCode    string      `json:"rcode"`
	Answers  []DNSRecord `json:"answers,omitempty"`
}

// DNSRecord is one A record and its TTL in seconds.
type DNSRecord struct {
	IP  string `json:"ip"`
	TTL uint32 `json:"ttl"`
}

// NameError is a DNSAnswerValue's RCode for a name that does not exist.
const NameError = "RCodeNameError"
