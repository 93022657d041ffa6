package evidence

// Paper 2's questions: what the API records of the agents' test service,
// what each node's agents applied of it, and what a new connection from a
// pod on each node finds.
const (
	// AgentServiceEndpoints is the agents' test service's endpoints as an
	// API server records them (an EndpointsValue).
	AgentServiceEndpoints Question = "agents/service-endpoints"
	// AgentServiceTranslation is the agents' test service as kube-proxy
	// programmed it on one node (a ProxyBackendsValue).
	AgentServiceTranslation Question = "agents/service-translation"
	// AgentServiceProbe is a new connection from the client pod on one
	// node to the service's cluster address (a DialValue): which backend
	// answered, or why none did.
	AgentServiceProbe Question = "agents/service-probe"
	// AgentHealth is what one node's agents say of themselves on their
	// health endpoints (an AgentHealthValue).
	AgentHealth Question = "agents/health"
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
