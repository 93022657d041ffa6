package evidence

import (
	"strings"
	"time"
)

// The questions every source is asked. They are declared here once; each
// source says which of them it can answer and the rest are NotAsked.
const (
	// NodeReady is worker1's Ready condition (a NodeReadyValue).
	NodeReady Question = "worker1/ready"
	// NodeTaints is worker1's taints (a []TaintValue, empty when none).
	NodeTaints Question = "worker1/taints"
	// NodeLease is worker1's kubelet Lease in kube-node-lease (a LeaseValue).
	NodeLease Question = "worker1/lease"
	// KubeletHealth is what worker1's kubelet says of itself on /healthz
	// (a KubeletHealthValue).
	KubeletHealth Question = "worker1/kubelet-health"
	// PodObject is the stateful test pod as an object (a PodValue).
	PodObject Question = "statefulpod/object"
	// PodRunningHere is whether the stateful test pod runs on the host a
	// runtime source reads (a RuntimePodValue).
	PodRunningHere Question = "statefulpod/running-here"
	// ServiceEndpoints is the test service's endpoint addresses (an
	// EndpointsValue).
	ServiceEndpoints Question = "service/endpoints"
	// ServiceProxyBackends is the test service's backends as programmed
	// in a node's data plane (a ProxyBackendsValue).
	ServiceProxyBackends Question = "service/proxy-backends"
	// ServiceDNS is the cluster DNS answer for the test service (a
	// DNSValue).
	ServiceDNS Question = "service/dns"
)

// Questions lists every question in a fixed order.
var Questions = []Question{
	NodeReady, NodeTaints, NodeLease, KubeletHealth,
	PodObject, PodRunningHere,
	ServiceEndpoints, ServiceProxyBackends, ServiceDNS,
}

// Subjects names the three things questions are about. The question names
// say "worker1", "statefulpod" and "service" whatever the subjects are
// called in a given lab, so snapshots of different labs compare.
type Subjects struct {
	// Node is the node questions about worker1 ask after.
	Node string `json:"node"`
	// PodNamespace and PodName name the stateful test pod.
	PodNamespace string `json:"podNamespace"`
	PodName      string `json:"podName"`
	// ServiceNamespace and ServiceName name the test service.
	ServiceNamespace string `json:"serviceNamespace"`
	ServiceName      string `json:"serviceName"`
}

// DefaultSubjects are the fixtures' names.
var DefaultSubjects = Subjects{
	Node:             "worker1",
	PodNamespace:     "faultline",
	PodName:          "stateful-0",
	ServiceNamespace: "faultline",
	ServiceName:      "stateful",
}

// NodeReadyValue is a node's Ready condition. Exists is false when the
// node object is not there (then the rest is empty).
type NodeReadyValue struct {
	Exists bool `json:"exists"`
	// Name is the node's name (empty in records written before it was
	// recorded, and when the node does not exist), so an invariant can
	// tell whether the readiness is that of the node a pod runs on.
	Name               string    `json:"name,omitempty"`
	Status             string    `json:"status,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	LastHeartbeatTime  time.Time `json:"lastHeartbeatTime,omitzero"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// TaintValue is one taint of a node.
type TaintValue struct {
	Key       string    `json:"key"`
	Value     string    `json:"value,omitempty"`
	Effect    string    `json:"effect"`
	TimeAdded time.Time `json:"timeAdded,omitzero"`
}

// LeaseValue is a Lease's holder and last renewal.
type LeaseValue struct {
	Exists               bool      `json:"exists"`
	HolderIdentity       string    `json:"holderIdentity,omitempty"`
	RenewTime            time.Time `json:"renewTime,omitzero"`
	AcquireTime          time.Time `json:"acquireTime,omitzero"`
	LeaseDurationSeconds int32     `json:"leaseDurationSeconds,omitempty"`
	LeaseTransitions     int32     `json:"leaseTransitions,omitempty"`
}

// KubeletHealthValue is the kubelet's /healthz answer.
type KubeletHealthValue struct {
	StatusCode int    `json:"statusCode"`
	Body       string `json:"body"`
}

// PodValue is a pod as one source sees it. Exists is false when the source
// has no such pod (then the rest is empty).
type PodValue struct {
	Exists            bool       `json:"exists"`
	UID               string     `json:"uid,omitempty"`
	NodeName          string     `json:"nodeName,omitempty"`
	Phase             string     `json:"phase,omitempty"`
	Ready             bool       `json:"ready"`
	PodIP             string     `json:"podIP,omitempty"`
	DeletionTimestamp *time.Time `json:"deletionTimestamp,omitempty"`
}

// RuntimePodValue is what a node's container runtime holds of a pod.
// Running is true when a sandbox of the pod is ready and at least one of its
// containers is running.
type RuntimePodValue struct {
	Running    bool               `json:"running"`
	Sandboxes  []RuntimeSandbox   `json:"sandboxes"`
	Containers []RuntimeContainer `json:"containers"`
}

// RuntimeSandbox is one pod sandbox in a container runtime.
type RuntimeSandbox struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	UID       string    `json:"uid"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
}

// RuntimeContainer is one container in a container runtime.
type RuntimeContainer struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	SandboxID string    `json:"sandboxId"`
	PodUID    string    `json:"podUid"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
}

// EndpointsValue is a service's endpoint addresses, merged over all its
// EndpointSlices, each list sorted.
type EndpointsValue struct {
	Ready    []string `json:"ready"`
	NotReady []string `json:"notReady"`
	// Slices counts the EndpointSlices read; zero means none exist.
	Slices int `json:"slices"`
}

// ProxyBackendsValue is a service's rules as kube-proxy programmed them on
// one node: per service port, the cluster IP and the backends traffic is
// sent to.
type ProxyBackendsValue struct {
	Ports []ProxyPort `json:"ports"`
	// NothingProgrammed is true when kube-proxy's chains or table are not
	// there at all (kube-proxy in another mode, never run, or cleaned up).
	// Only the all-services readers give it; the test service's reader
	// makes that an error instead.
	NothingProgrammed bool `json:"nothingProgrammed,omitempty"`
}

// Service keeps the ports of one service ("namespace/name").
func (v ProxyBackendsValue) Service(namespace, name string) ProxyBackendsValue {
	svc := namespace + "/" + name
	out := ProxyBackendsValue{Ports: []ProxyPort{}, NothingProgrammed: v.NothingProgrammed}
	for _, p := range v.Ports {
		if p.Port == svc || strings.HasPrefix(p.Port, svc+":") {
			out.Ports = append(out.Ports, p)
		}
	}
	return out
}

// ByPort maps each port ("namespace/name:port", "namespace/name" for an
// unnamed one) to its sorted backends (empty for a port without any).
func (v ProxyBackendsValue) ByPort() map[string][]string {
	out := make(map[string][]string, len(v.Ports))
	for _, p := range v.Ports {
		out[p.Port] = append([]string{}, p.Backends...)
	}
	return out
}

// ProxyPort is one service port's rules.
type ProxyPort struct {
	// Port is the service port's name as kube-proxy writes it in the rule
	// comment ("faultline/stateful:http"), empty for an unnamed port.
	Port      string `json:"port"`
	ClusterIP string `json:"clusterIP"`
	// ServicePort is the cluster IP's port with its protocol ("80/tcp").
	ServicePort string `json:"servicePort"`
	// Backends are the DNAT destinations ("10.244.1.5:8080"), sorted.
	Backends []string `json:"backends"`
	// Rejected is true when the node rejects the port's traffic because
	// the service has no ready endpoints.
	Rejected bool `json:"rejected,omitempty"`
	// Dropped is true when the node drops the port's traffic because the
	// service keeps traffic on its node (internalTrafficPolicy Local) and
	// has no ready endpoint there.
	Dropped bool `json:"dropped,omitempty"`
}

// DNSValue is the cluster DNS answer for the test service's name.
type DNSValue struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
}
