package evidence

import "github.com/faultline/faultline/fixtures/history"

// Questions some invariants read beyond the snapshot questions of
// questions.go. They are declared here so that the invariants and the
// sources that will answer them agree on names and value types; until a
// source answers one, every invariant reading it judges INSUFFICIENT_DATA.
const (
	// ControllerManagerLease and SchedulerLease are the leader-election
	// Leases in kube-system (a LeaseValue), asked of every API server.
	ControllerManagerLease Question = "leader/kube-controller-manager"
	SchedulerLease         Question = "leader/kube-scheduler"
	// ControllerManagerLeading and SchedulerLeading are whether the process
	// on one control-plane host acts as leader (a LeadingValue), asked of
	// that host ("controlplane/<host>"), e.g. from its
	// leader_election_master_status metric.
	ControllerManagerLeading Question = "leader/kube-controller-manager/self"
	SchedulerLeading         Question = "leader/kube-scheduler/self"
	// DeploymentReplicas is the test Deployment's replica counts (a
	// DeploymentValue), asked of every API server.
	DeploymentReplicas Question = "deployment/replicas"
	// EndpointProbes is whether each of the test service's endpoint
	// addresses answered a request from a worker (an EndpointProbesValue),
	// asked of "probe/<host>".
	EndpointProbes Question = "service/endpoint-probes"
	// RegisterHistory is the register writer's operations so far (a
	// RegisterHistoryValue), asked of "writer".
	RegisterHistory Question = "register/history"
)

// LeadingValue says whether one controller process acts as leader.
type LeadingValue struct {
	Leading bool `json:"leading"`
	// Process identifies the process (its start time, or its PID and start
	// time): a controller that loses its lease exits, so two answers with
	// the same Process and Leading true mean it led throughout between them.
	Process string `json:"process"`
}

// DeploymentValue is a Deployment's replica counts. Exists is false when
// the object is not there.
type DeploymentValue struct {
	Exists             bool  `json:"exists"`
	Generation         int64 `json:"generation,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is spec.replicas.
	Replicas          int32 `json:"replicas"`
	ReadyReplicas     int32 `json:"readyReplicas"`
	AvailableReplicas int32 `json:"availableReplicas"`
	UpdatedReplicas   int32 `json:"updatedReplicas"`
}

// EndpointProbesValue is one prober's requests to a service's endpoints.
type EndpointProbesValue struct {
	Probes []EndpointProbe `json:"probes"`
}

// EndpointProbe is one request to one endpoint address.
type EndpointProbe struct {
	// Address is the endpoint address probed ("10.244.1.5").
	Address  string `json:"address"`
	Answered bool   `json:"answered"`
	// Detail is the status line, or the error.
	Detail string `json:"detail,omitempty"`
}

// ConnectedNoAnswer begins the failure of an HTTP GET whose connection
// was made and not answered in time; one whose connection was not made in
// time says "no connection within".
const ConnectedNoAnswer = "connected, no answer within"

// RegisterHistoryValue is the register writer's log of operations, in the
// writer's own JSON line format (fixtures/images/writer).
type RegisterHistoryValue struct {
	Ops []RegisterOp `json:"ops"`
}

// RegisterOp is one operation of the register writer, as its log line
// holds it (fixtures/history).
type RegisterOp = history.RegisterOp
