package lab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The interfaces below are optional: a fault that needs one asserts it on
// the Lab and, when the lab lacks it, fails with ErrUnsupported naming it.
// Backends implement what they can reach.

// EtcdAccess is a lab whose etcd cluster a client can reach from the
// program running the faults.
type EtcdAccess interface {
	// EtcdClientConfig returns every etcd member's client URL and the TLS
	// configuration (CA and client certificate) to talk to them.
	EtcdClientConfig() (endpoints []string, tlsConfig *tls.Config, err error)
}

// NetworkInterfaces is a lab that knows the names of its hosts' network
// interfaces. Without it, faults ask the host's routing table.
type NetworkInterfaces interface {
	// ManagementInterface is the interface carrying the host's management
	// address.
	ManagementInterface(host string) (string, error)
	// PodInterface is the interface pod traffic between nodes leaves the
	// host by (the pod transport link, or the overlay device); an error if
	// the host runs no pods.
	PodInterface(host string) (string, error)
}

// KubeletAccess is a lab whose kubelets' own HTTPS API (port 10250) a
// client can call, authenticated with a client certificate the kubelets'
// authorizer accepts.
type KubeletAccess interface {
	// KubeletClientConfig returns the base URL of host's kubelet API
	// ("https://10.0.0.31:10250") and a TLS config that verifies the
	// kubelet's serving certificate and presents the client certificate.
	KubeletClientConfig(host string) (baseURL string, tlsConfig *tls.Config, err error)
}

// ClusterDNSAccess is a lab that runs a cluster DNS server.
type ClusterDNSAccess interface {
	// ClusterDNSServer returns the DNS server's address ("10.96.0.10:53")
	// and the cluster domain ("cluster.local"); an empty address means the
	// lab runs no cluster DNS.
	ClusterDNSServer() (address, domain string, err error)
}

// AuthorizationConfigScript is a shell command, run on a control-plane
// host, that prints the --authorization-config of the process listening
// on port (the API server), read from its command line: exit status 3
// when nothing listens there, 4 when the process runs without the flag.
func AuthorizationConfigScript(port int) string {
	return fmt.Sprintf(`pid=$(ss -Hltnp 'sport = :%d' | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1); `+
		`[ -n "$pid" ] || exit 3; `+
		`f=$(tr '\0' '\n' < /proc/"$pid"/cmdline | sed -n 's/^--authorization-config=//p'); `+
		`[ -n "$f" ] || exit 4; echo "$f"`, port)
}

// AuthorizationConfigFiles is a lab whose API servers take their
// authorizers from a structured authorization configuration file
// (kube-apiserver --authorization-config: an AuthorizationConfiguration of
// apiserver.config.k8s.io) and reload it when it changes.
type AuthorizationConfigFiles interface {
	// AuthorizationConfigFile returns the path, on the named control-plane
	// host, of the file its API server reads its authorizers from.
	AuthorizationConfigFile(host string) (string, error)
}

// EtcdForks is a lab on whose control-plane hosts a fault can run an etcd
// of its own that the host's API server accepts in place of the cluster's
// (the apiserver-etcd-fork fault): the etcd binary is there, and so are a
// member's serving certificate and the CA the API server's etcd client
// certificate is signed by.
type EtcdForks interface {
	// EtcdFork returns, for the named control-plane host, what running
	// such an etcd there takes.
	EtcdFork(host string) (EtcdFork, error)
}

// EtcdFork is what a control-plane host offers to run a second etcd.
type EtcdFork struct {
	// Binary is the etcd executable's path on the host.
	Binary string
	// Member is the client URL of the etcd member the fork stands in for,
	// as the host's API server dials it ("https://10.0.0.21:2379"); the
	// certificate below is valid for its address.
	Member string
	// Others are the client URLs of the other members the API server
	// dials.
	Others []string
	// CertFile and KeyFile are Member's serving certificate and key on the
	// host; TrustedCAFile verifies the API server's client certificate.
	CertFile      string
	KeyFile       string
	TrustedCAFile string
	// Dir is a directory on the host the fault may create things under
	// and remove; it is the same for every call about the host.
	Dir string
}

// SharedWallClock is a lab that says whether its hosts read one wall
// clock. Where they do (the local lab: network namespaces on one kernel),
// stepping one host's clock steps every host's and the clock of the
// program running the faults, so no fault may step one host's clock; a
// lab that also implements ProcessClockSkewer can emulate the skew. A lab
// that does not implement it gives every host a clock of its own.
type SharedWallClock interface {
	// SharesWallClock reports whether every host reads one wall clock,
	// and why (the reason a fault that needs its own clock per host
	// gives when it refuses).
	SharesWallClock() (shared bool, why string)
}

// SharesWallClock asks l whether its hosts read one wall clock, and why.
func SharesWallClock(l Lab) (bool, string) {
	if s, ok := l.(SharedWallClock); ok {
		return s.SharesWallClock()
	}
	return false, ""
}

// ProcessClockSkewer is a lab whose hosts share one wall clock but which
// can shift the wall clock every process of one host reads, process by
// process (the local lab patches each process's vDSO). It emulates a host
// whose clock is off: ProcessSkewEmulation says what the emulation does
// not reach, and a fault using it records that on its runs.
type ProcessClockSkewer interface {
	// SkewProcesses shifts by offset the wall clock of every process of
	// the host (its services, their children, its containers), returns
	// once every process running now is shifted, and from then on shifts
	// each process the host starts, within about a second, until
	// UnskewProcesses. Called again, it changes the offset.
	SkewProcesses(ctx context.Context, host string, offset time.Duration) error
	// UnskewProcesses stops shifting the host's new processes and sets
	// every shifted process of the host back to the machine's clock. It
	// works from the processes themselves, so a program other than the
	// one that skewed (`faultline heal` after a crash) can run it; on a
	// host with nothing shifted it does nothing.
	UnskewProcesses(ctx context.Context, host string) error
	// ProcessSkewEmulation says how the skew is emulated and what it does
	// not reach, in one line for a run record.
	ProcessSkewEmulation() string
}

// RuntimeEndpoints is a lab that knows the socket each node's container
// runtime serves the CRI on (the kubelet's containerRuntimeEndpoint), one
// its Host.Dial can open.
type RuntimeEndpoints interface {
	// RuntimeEndpoint returns the socket's path on the named node; an
	// error if the host runs no container runtime.
	RuntimeEndpoint(host string) (string, error)
}

// RuntimeSocket is the path of the CRI socket on the named node that
// Host.Dial can open: the lab's own (RuntimeEndpoints), else the lab
// file's kubernetes.runtimeEndpoint. ok is false when neither says, and a
// reader of the runtime then has to run a command on the host.
func RuntimeSocket(l Lab, host string) (path string, ok bool, err error) {
	if re, is := l.(RuntimeEndpoints); is {
		p, err := re.RuntimeEndpoint(host)
		return p, true, err
	}
	if c := l.Config(); c != nil && c.Kubernetes.RuntimeEndpoint != "" {
		p, err := runtimeEndpointPath(c.Kubernetes.RuntimeEndpoint)
		if err != nil {
			return "", true, fmt.Errorf("kubernetes.runtimeEndpoint: %w", err)
		}
		return p, true, nil
	}
	return "", false, nil
}

// runtimeEndpointPath is the socket path of a CRI endpoint written as the
// kubelet's containerRuntimeEndpoint is ("unix:///run/containerd/containerd.sock").
func runtimeEndpointPath(endpoint string) (string, error) {
	p, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%q is not a unix socket endpoint with an absolute path (unix:///run/containerd/containerd.sock)", endpoint)
	}
	return p, nil
}

// Identity is who a component authenticates to the API servers as.
type Identity struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
	// Extra is what the API servers read of the user beside its name
	// and groups that tells this component from others of the same user
	// (the node name a pod-bound service-account token carries,
	// authentication.kubernetes.io/node-name).
	Extra map[string][]string `json:"extra,omitempty"`
}

// AgentIdentities is a lab whose node agents (kube-proxy, the policy
// agent) authenticate as identities of their own per node, so a fault can
// refuse one node's agent and no other's.
type AgentIdentities interface {
	// AgentIdentity returns who the agent (a service name:
	// ServiceKubeProxy, ServicePolicyAgent) on node authenticates as; an
	// error wrapping ErrUnsupported when that agent shares its identity
	// with other nodes' or does not run there.
	AgentIdentity(node, agent string) (Identity, error)
}

// AgentKubeconfigs is a lab that says which kubeconfig file each node
// agent reads on its host, so a fault can point one node's agents at one
// API server.
type AgentKubeconfigs interface {
	// AgentKubeconfig returns the path, on node, of the kubeconfig the
	// agent (ServiceKubeProxy, ServicePolicyAgent) reads when it starts;
	// an error wrapping ErrUnsupported when that agent does not run there.
	AgentKubeconfig(node, agent string) (string, error)
}

// StoredData is a lab with storage for the stored-data workloads: a storage class whose
// volumes two copies of a workload can both reach, and an external
// key-value store, off every volume under test, where the workloads keep
// their client histories.
type StoredData interface {
	StorageInfo() (StorageInfo, error)
	// ReadVolumeFile reads a file of the volume a PersistentVolume's CSI
	// volume handle names, as the storage holds it, with the hosts that
	// had the volume mounted when the read began; an error wrapping
	// ErrUnsupported where the lab cannot read its storage itself. A lab
	// that reads its storage through the cluster (a pod mounting the
	// claim) reads only a claim marked QuiescedClaimAnnotation that no
	// node mounts, and otherwise returns an error with the hosts that
	// mount it.
	ReadVolumeFile(ctx context.Context, volumeHandle, file string) (VolumeFile, error)
}

// QuiescedClaimAnnotation marks a PersistentVolumeClaim whose workloads a
// suite has stopped for good (its value the time, RFC 3339). A lab that
// reads a volume through the cluster, by a short-lived pod that mounts
// the claim, reads only a claim that carries it and that no node mounts:
// its reader must never take the volume from a workload, nor delay one.
const QuiescedClaimAnnotation = "faultline.dev/quiesced"

// ErrNoSuchFile is wrapped by a ReadVolumeFile error when the volume
// holds no file of the name: a definite answer, not a failed read.
var ErrNoSuchFile = errors.New("the volume holds no such file")

// VolumeFile is one file of a volume as the storage holds it.
type VolumeFile struct {
	// Path names what was read, on the storage host.
	Path string
	Data []byte
	// MountedOn names the hosts that had the volume mounted when the read
	// began (each once); empty when nothing mounted it.
	MountedOn []string
}

// StorageInfo is what a lab's storage offers a suite.
type StorageInfo struct {
	// SharedClass is a StorageClass of volumes every node mounts at once
	// (attachRequired false: Kubernetes enforces no single attachment).
	SharedClass string `json:"sharedClass"`
	// BlockClass is a StorageClass of attachable volumes (a
	// VolumeAttachment per node: the Multi-Attach check applies), and
	// BlockMMPClass the same with ext4 multi-mount protection, and
	// BlockFencedClass the same fenced at detach (the node a volume is
	// detached from loses its I/O to it); any may be empty where the lab
	// has none.
	BlockClass       string `json:"blockClass,omitempty"`
	BlockMMPClass    string `json:"blockMMPClass,omitempty"`
	BlockFencedClass string `json:"blockFencedClass,omitempty"`
	// HistoryEndpoints are the external store's etcd client URLs, as pods
	// reach them.
	HistoryEndpoints []string `json:"historyEndpoints"`
	// StorageHost is the host that holds the volumes' backing data and
	// the external store.
	StorageHost string `json:"storageHost"`
	// Emulated lists what the lab's storage does not do as real shared
	// storage does (empty on real storage); every run on it says so.
	Emulated []string `json:"emulated,omitempty"`
	// FenceEmulation says how BlockFencedClass's fence is made where it
	// is not the storage's own revocation of a node's access to the disk
	// (empty on real storage, or without a fenced class): a run on the
	// fenced class says first that its fence is this one.
	FenceEmulation string `json:"fenceEmulation,omitempty"`
}
