package lab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Timer profiles.
const (
	ProfileKubernetesDefaults = "kubernetes-defaults"
	ProfileFast               = "fast"
)

// Config is a lab file (testdata/labs/*.yaml): the topology of a lab, its
// hosts and networks, and how its backend reaches them. The fields below
// are those every lab file shares; a backend's own settings are its
// section (see Backend), decoded by the backend's registration.
type Config struct {
	// Name identifies the lab in reports and run records.
	Name string `json:"name"`
	// Kind selects the backend; Kinds lists those this program links.
	Kind string `json:"kind"`
	// Lab must be true for any destructive scenario to run: it says this
	// config describes a disposable lab, not someone's cluster.
	Lab bool `json:"lab"`
	// StateDir holds the lab's state and the heal ledger. Default:
	// <name> under StateRoot ($FAULTLINE_STATE_DIR, else
	// /var/lib/faultline).
	StateDir string `json:"stateDir,omitempty"`
	// Kubeconfig is an admin kubeconfig for labs that do not make their
	// own (static, vsphere, proxmox).
	Kubeconfig string             `json:"kubeconfig,omitempty"`
	Kubernetes KubernetesSettings `json:"kubernetes,omitempty"`
	Network    Network            `json:"network"`
	Hosts      []HostConfig       `json:"hosts"`
	// SSH says how hosts are reached, for the backends that reach them
	// over SSH.
	SSH *SSHConfig `json:"ssh,omitempty"`
	// Storage is what a cluster the lab did not build offers the stored-data workloads (the
	// local lab builds its own storage host and refuses it).
	Storage *StorageSettings `json:"storage,omitempty"`
	// Etcd is how this program reaches the etcd of a cluster the lab did
	// not build (lab.EtcdAccess); the local lab has its own and refuses
	// it.
	Etcd *EtcdClientSettings `json:"etcd,omitempty"`
	// Kubelet is how this program reaches the kubelets' own API on a
	// cluster the lab did not build (lab.KubeletAccess); the local lab
	// has its own and refuses it.
	Kubelet *KubeletClientSettings `json:"kubelet,omitempty"`

	// section is the backend's own section, as its NewSection made it;
	// nil when the file has none.
	section any
	// path is the file the config was read from.
	path string
}

// KubernetesSettings pins versions and the timer profile.
type KubernetesSettings struct {
	Version     string `json:"version,omitempty"`
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// TimerProfile names the timer profile the cluster runs with (see
	// Timers). The local backend defaults it to kubernetes-defaults and
	// runs its components with it; for a cluster the lab did not build it
	// is a declaration of what the cluster runs with.
	TimerProfile string `json:"timerProfile,omitempty"`
	// RuntimeEndpoint is the CRI socket of every node, written as the
	// kubelet's containerRuntimeEndpoint
	// ("unix:///run/containerd/containerd.sock"), for labs that reach
	// their hosts over SSH: where set, the container runtime is read
	// over CRI through each host's SSH connection (lab.RuntimeSocket),
	// which opens the socket as the SSH user, so that user must be
	// allowed to (root, or a member of the socket's group: sudo does
	// not apply); where not, crictl runs on the host. The local lab uses
	// its own nodes' sockets and refuses it.
	RuntimeEndpoint string `json:"runtimeEndpoint,omitempty"`
	// ProxyMode is kube-proxy's mode: ProxyModeIPTables (the default) or
	// ProxyModeNFTables. The local lab runs kube-proxy with it; for a
	// cluster the lab did not build it says which rules to read.
	ProxyMode string `json:"proxyMode,omitempty"`
	// Agents is how the node agents (kube-proxy, the NetworkPolicy agent)
	// run: AgentsAsServices (the default), services of each host, or
	// AgentsAsPods, DaemonSet pods in the host's network namespace as a
	// kubeadm cluster runs them (see AgentRunOf). The local lab runs them
	// so; for a cluster the lab did not build it says how they run there.
	Agents string `json:"agents,omitempty"`
	// PolicyAgent is the nodes' NetworkPolicy agent: PolicyAgentKubeRouter,
	// PolicyAgentCalico or PolicyAgentKubeNetworkPolicies. It says whose
	// applied state the agents' readers read (PolicyAgentOf). The local
	// lab runs kube-router and defaults it so; a cluster the lab did not
	// build declares it, and where it declares none the applied state is
	// not read.
	PolicyAgent string `json:"policyAgent,omitempty"`
	// AgentKubeconfigs says, for a cluster whose node agents run as
	// services of its hosts (Agents "services"), which kubeconfig each
	// agent reads on its host: the agent's service name (ServiceKubeProxy,
	// ServicePolicyAgent) to an absolute path, "{host}" replaced by the
	// host's name. A fault reads the agent's identity from that file's
	// client certificate (lab.AgentIdentities) and points the agent at one
	// API server by it (lab.AgentKubeconfigs). The local lab knows its
	// own and refuses it; agents run as pods read theirs from the cluster.
	AgentKubeconfigs map[string]string `json:"agentKubeconfigs,omitempty"`
}

// Equal says whether two settings are the same.
func (k KubernetesSettings) Equal(o KubernetesSettings) bool {
	if !maps.Equal(k.AgentKubeconfigs, o.AgentKubeconfigs) {
		return false
	}
	k.AgentKubeconfigs, o.AgentKubeconfigs = nil, nil
	return reflect.DeepEqual(k, o)
}

// The NetworkPolicy agents whose applied state faultline reads
// (KubernetesSettings.PolicyAgent).
const (
	PolicyAgentKubeRouter          = "kube-router"
	PolicyAgentCalico              = "calico"
	PolicyAgentKubeNetworkPolicies = "kube-network-policies"
)

// PolicyAgents lists the agents a lab file may name, in the order its
// errors give them.
var PolicyAgents = []string{PolicyAgentCalico, PolicyAgentKubeRouter, PolicyAgentKubeNetworkPolicies}

// PolicyAgentOf names the NetworkPolicy agent of l's nodes, as its lab
// file says (the local lab's defaulted to the kube-router it runs); ""
// when the file names none.
func PolicyAgentOf(l Lab) string {
	if c := l.Config(); c != nil {
		return c.Kubernetes.PolicyAgent
	}
	return ""
}

// kube-proxy's modes a lab may run (KubernetesSettings.ProxyMode).
const (
	ProxyModeIPTables = "iptables"
	ProxyModeNFTables = "nftables"
)

// Network is the lab's address plan.
type Network struct {
	// Management is the CIDR of the network every host's management
	// address lies in.
	Management string `json:"management"`
	// Pods is the pod network CIDR (per-node /24s are carved from it).
	Pods string `json:"pods,omitempty"`
	// Services is the service CIDR.
	Services string `json:"services,omitempty"`
	// VirtualIP is the address in front of the API servers (keepalived).
	VirtualIP string `json:"virtualIP,omitempty"`
	// APIServerPort is the port every API server and the virtual address
	// listen on. Default 6443.
	APIServerPort int `json:"apiServerPort,omitempty"`
}

// HostConfig is one host of the lab.
type HostConfig struct {
	Name    string `json:"name"`
	Roles   []Role `json:"roles"`
	Address string `json:"address"`
	// Rack groups hosts for rack-level faults.
	Rack string `json:"rack,omitempty"`
	// KubeletRootDir is the host's kubelet's --root-dir, under which its
	// pods' volumes are mounted, for the labs that look for those mounts
	// over SSH. Default DefaultKubeletRootDir.
	KubeletRootDir string `json:"kubeletRootDir,omitempty"`
	// VM is the vSphere inventory path or name of the host's VM.
	VM string `json:"vm,omitempty"`
	// VMID is the Proxmox vmid of the host's VM (0: resolve from the
	// address's last octet, as the drill does).
	VMID int `json:"vmid,omitempty"`
}

// DefaultKubeletRootDir is the kubelet's own default --root-dir.
const DefaultKubeletRootDir = "/var/lib/kubelet"

// KubeletRoot is the host's kubelet's --root-dir.
func (h HostConfig) KubeletRoot() string {
	if h.KubeletRootDir != "" {
		return h.KubeletRootDir
	}
	return DefaultKubeletRootDir
}

// StorageSettings is the storage of a cluster the lab did not build
// (lab.StoredData): the StorageClasses the workloads store on, the
// external store their histories go to, and how a volume's file is read
// when the lab cannot read its storage directly.
type StorageSettings struct {
	// SharedClass, BlockClass, BlockMMPClass and BlockFencedClass are as
	// in StorageInfo; at least one is required.
	SharedClass      string `json:"sharedClass,omitempty"`
	BlockClass       string `json:"blockClass,omitempty"`
	BlockMMPClass    string `json:"blockMMPClass,omitempty"`
	BlockFencedClass string `json:"blockFencedClass,omitempty"`
	// History is the external store the workloads keep their histories
	// in. Each reset empties it, so it must be faultline's alone.
	History HistoryStore `json:"history"`
	// ReaderImage is the image of the short-lived pod that mounts a
	// quiesced claim so that its volume's file can be read on the node
	// (its entrypoint must keep running; nothing of it is executed).
	// Default DefaultReaderImage, the sandbox image every node holds.
	ReaderImage string `json:"readerImage,omitempty"`
	// Emulated lists what the storage does not do as real shared storage
	// does; empty on real storage. Every run on it says so.
	Emulated []string `json:"emulated,omitempty"`
}

// EtcdClientSettings is an etcd client this program can use against the
// cluster's etcd: on a kubeadm cluster the CA /etc/kubernetes/pki/etcd/ca.crt
// and a client certificate it signed (healthcheck-client, or the API
// server's apiserver-etcd-client), copied where faultline runs.
type EtcdClientSettings struct {
	// Endpoints are the members' client URLs, one per host with the etcd
	// role, in the order of hosts.
	Endpoints []string `json:"endpoints"`
	CAFile    string   `json:"caFile"`
	CertFile  string   `json:"certFile"`
	KeyFile   string   `json:"keyFile"`
}

// KubeletClientSettings is a client of the kubelets' HTTPS API: the CA
// their serving certificates are signed by (a kubeadm kubelet signs its
// own unless serverTLSBootstrap is on) and a client certificate their
// authorizer accepts (kubeadm's /etc/kubernetes/pki/apiserver-kubelet-client),
// copied where faultline runs.
type KubeletClientSettings struct {
	CAFile   string `json:"caFile"`
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
	// Port is the kubelets' port. Default 10250.
	Port int `json:"port,omitempty"`
}

// problems are what is wrong with an etcd section, each naming its field.
func (e *EtcdClientSettings) problems(c *Config) []error {
	var errs []error
	members := 0
	for _, h := range c.Hosts {
		if slices.Contains(h.Roles, RoleEtcd) {
			members++
		}
	}
	if len(e.Endpoints) != members {
		errs = append(errs, fmt.Errorf("etcd.endpoints: %d endpoints for %d hosts with the etcd role (one each, in the order of hosts)", len(e.Endpoints), members))
	}
	for i, ep := range e.Endpoints {
		if !strings.HasPrefix(ep, "https://") {
			errs = append(errs, fmt.Errorf("etcd.endpoints[%d]: %q is not an https:// client URL", i, ep))
		}
	}
	for _, f := range []struct{ name, val string }{{"caFile", e.CAFile}, {"certFile", e.CertFile}, {"keyFile", e.KeyFile}} {
		if f.val == "" {
			errs = append(errs, fmt.Errorf("etcd.%s: is required", f.name))
		}
	}
	return errs
}

// DefaultReaderImage is the pause image kubelet v1.36 and containerd 2.x
// run every pod sandbox with.
const DefaultReaderImage = "registry.k8s.io/pause:3.10.2"

// HistoryStore is an etcd that runs already (Endpoints), or one faultline
// runs itself on a host no scenario touches (Host, with the storage role).
type HistoryStore struct {
	// Endpoints are its client URLs, as both pods and this program reach
	// them ("http://10.0.0.40:2379").
	Endpoints []string `json:"endpoints,omitempty"`
	// Host is the storage host faultline starts the store on, over SSH,
	// when it does not answer: Etcd is the etcd binary there, DataDir its
	// data (default /var/lib/faultline-history), Port its client port
	// (default 2379; the peer port is the next one, on loopback).
	Host    string `json:"host,omitempty"`
	Etcd    string `json:"etcd,omitempty"`
	DataDir string `json:"dataDir,omitempty"`
	Port    int    `json:"port,omitempty"`
}

// SSHConfig says how hosts are reached over SSH.
type SSHConfig struct {
	User string `json:"user"`
	Port int    `json:"port,omitempty"`
	// IdentityFile is a private key file; with UseAgent the SSH agent at
	// $SSH_AUTH_SOCK is tried as well.
	IdentityFile string `json:"identityFile,omitempty"`
	UseAgent     bool   `json:"useAgent,omitempty"`
	// KnownHosts is the known_hosts file host keys are verified against.
	KnownHosts string `json:"knownHosts"`
	// AcceptNewHostKeys adds keys of hosts not yet in KnownHosts (never
	// accepts a changed key).
	AcceptNewHostKeys bool `json:"acceptNewHostKeys,omitempty"`
	// Jump is a jump host, user@host:port (ProxyJump).
	Jump string `json:"jump,omitempty"`
	// Sudo runs privileged commands through sudo -n.
	Sudo bool `json:"sudo,omitempty"`
	// ServiceCommand, where set, manages the hosts' services in place of
	// systemd: faultline runs `<command> stop <service>`, `<command>
	// start <service>`, `<command> signal <SIGNAME> <service>` and
	// `<command> list` (one line per service: name, state, pid) on the
	// host, through sudo where Sudo is set; "{host}" in it is the host's
	// name. Exit status 64 means the host has no such service. `faultline
	// lab service` is such a command for a local lab's hosts.
	ServiceCommand string `json:"serviceCommand,omitempty"`
	// CommandTimeout bounds every command. Default 60s.
	CommandTimeout Duration `json:"commandTimeout,omitempty"`
}

// Section is the backend's own section of the lab file, as the backend's
// NewSection made it, or nil when the file has none.
func (c *Config) Section() any { return c.section }

// SetSection sets the backend's own section, for configs built in code.
func (c *Config) SetSection(v any) { c.section = v }

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration struct{ time.Duration }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// Path is the file the config was read from, if any.
func (c *Config) Path() string { return c.path }

// LoadConfig reads and validates a lab file. Unknown fields are errors.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading lab file: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("lab file %s: %w", path, err)
	}
	c.path = path
	return c, nil
}

// ParseConfig parses and validates a lab file's content.
func ParseConfig(data []byte) (*Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// labFile is Config without its JSON methods (and the name decoding
// errors give for its fields).
type labFile Config

// UnmarshalJSON decodes a lab file's fields, unknown ones being errors,
// and hands the section of the file's kind to its backend's decoder. A
// section of another registered backend is an error naming its kind; so
// is any other key no backend claims.
func (c *Config) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var kind string
	if k, ok := raw["kind"]; ok {
		_ = json.Unmarshal(k, &kind) // a kind that is no string fails the decoding below
	}
	own, known := backendOf(kind)
	var section any
	var errs []error
	secs := sections()
	keys := make([]string, 0, len(secs))
	for key := range secs {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v, present := raw[key]
		if !present {
			continue
		}
		delete(raw, key)
		switch {
		case !known:
			// The kind is wrong; Validate says so.
		case secs[key] != own.Kind:
			errs = append(errs, fmt.Errorf("%s: is only for a %s lab", key, secs[key]))
		default:
			section = own.NewSection()
			if err := strictJSON(v, section); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
			}
		}
	}
	rest, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	var p labFile
	if err := strictJSON(rest, &p); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	path := c.path
	*c = Config(p)
	c.section, c.path = section, path
	return nil
}

// MarshalJSON writes the config as a lab file, its section included.
func (c Config) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(labFile(c))
	if err != nil || c.section == nil {
		return b, err
	}
	own, ok := backendOf(c.Kind)
	if !ok || own.Section == "" {
		return nil, fmt.Errorf("lab %s: a section for kind %q, which has none in this program", c.Name, c.Kind)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m[own.Section], err = json.Marshal(c.section); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// strictJSON decodes b into v, unknown fields being errors.
func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func (c *Config) applyDefaults() {
	if c.Network.APIServerPort == 0 {
		c.Network.APIServerPort = 6443
	}
	if c.SSH != nil {
		if c.SSH.Port == 0 {
			c.SSH.Port = 22
		}
		if c.SSH.CommandTimeout.Duration == 0 {
			c.SSH.CommandTimeout.Duration = 60 * time.Second
		}
	}
	if c.Storage != nil && c.Storage.History.Host != "" {
		if c.Storage.History.Port == 0 {
			c.Storage.History.Port = 2379
		}
		if c.Storage.History.DataDir == "" {
			c.Storage.History.DataDir = "/var/lib/faultline-history"
		}
	}
	if c.Storage != nil && c.Storage.ReaderImage == "" {
		c.Storage.ReaderImage = DefaultReaderImage
	}
	if c.StateDir == "" && c.Name != "" {
		c.StateDir = filepath.Join(StateRoot(), c.Name)
	}
	if b, ok := backendOf(c.Kind); ok && b.Defaults != nil {
		b.Defaults(c)
	}
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// Validate checks the config and returns every problem, each naming the
// field it is about: first what every lab file must satisfy, then what the
// backend of its kind requires.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.Name == "" {
		bad("name", "is required")
	} else if !dnsLabel.MatchString(c.Name) {
		bad("name", "%q must be a lower-case DNS label", c.Name)
	}
	own, known := backendOf(c.Kind)
	switch {
	case c.Kind == "":
		bad("kind", "is required (registered: %s)", strings.Join(Kinds(), ", "))
	case !known:
		errs = append(errs, fmt.Errorf("kind: %w", unknownKind(c.Kind)))
	}
	switch c.Kubernetes.TimerProfile {
	case "", ProfileKubernetesDefaults, ProfileFast:
	default:
		bad("kubernetes.timerProfile", "%q is not a timer profile (kubernetes-defaults or fast)", c.Kubernetes.TimerProfile)
	}
	switch c.Kubernetes.ProxyMode {
	case "", ProxyModeIPTables, ProxyModeNFTables:
	default:
		bad("kubernetes.proxyMode", "%q is not a kube-proxy mode the lab reads (iptables or nftables)", c.Kubernetes.ProxyMode)
	}
	switch c.Kubernetes.Agents {
	case "", AgentsAsServices, AgentsAsPods:
	default:
		bad("kubernetes.agents", "%q is not how node agents run (%s or %s)", c.Kubernetes.Agents, AgentsAsServices, AgentsAsPods)
	}
	for _, agent := range slices.Sorted(maps.Keys(c.Kubernetes.AgentKubeconfigs)) {
		path := c.Kubernetes.AgentKubeconfigs[agent]
		switch {
		case agent != ServiceKubeProxy && agent != ServicePolicyAgent:
			bad("kubernetes.agentKubeconfigs", "%q is not a node agent (%s or %s)", agent, ServiceKubeProxy, ServicePolicyAgent)
		case c.Kubernetes.AgentsLayout() == AgentsAsPods:
			bad("kubernetes.agentKubeconfigs."+agent, "is for agents run as services: with agents: pods they read their configuration from the cluster")
		case !strings.HasPrefix(path, "/"):
			bad("kubernetes.agentKubeconfigs."+agent, "%q is not an absolute path on the host", path)
		}
	}
	if a := c.Kubernetes.PolicyAgent; a != "" && !slices.Contains(PolicyAgents, a) {
		bad("kubernetes.policyAgent", "%q is not a NetworkPolicy agent whose rules faultline reads (%s)", a, strings.Join(PolicyAgents, ", "))
	}
	if c.Kubernetes.RuntimeEndpoint != "" {
		if _, err := runtimeEndpointPath(c.Kubernetes.RuntimeEndpoint); err != nil {
			bad("kubernetes.runtimeEndpoint", "%v", err)
		}
	}

	if c.Network.Management == "" {
		bad("network.management", "is required (a CIDR such as 10.66.0.0/24)")
	} else if _, err := netip.ParsePrefix(c.Network.Management); err != nil {
		bad("network.management", "%q is not a CIDR: %v", c.Network.Management, err)
	}
	for _, f := range []struct{ name, val string }{{"network.pods", c.Network.Pods}, {"network.services", c.Network.Services}} {
		if f.val == "" {
			continue
		}
		if _, err := netip.ParsePrefix(f.val); err != nil {
			bad(f.name, "%q is not a CIDR: %v", f.val, err)
		}
	}
	if c.Network.APIServerPort < 1 || c.Network.APIServerPort > 65535 {
		bad("network.apiServerPort", "%d is not a port", c.Network.APIServerPort)
	}
	addrs := map[netip.Addr]string{}
	if c.Network.VirtualIP != "" {
		if a, err := netip.ParseAddr(c.Network.VirtualIP); err != nil {
			bad("network.virtualIP", "%q is not an IP address", c.Network.VirtualIP)
		} else {
			addrs[a] = "network.virtualIP"
		}
	}

	if len(c.Hosts) == 0 {
		bad("hosts", "at least one host is required")
	}
	names := map[string]int{}
	roles := map[Role]int{}
	for i, h := range c.Hosts {
		f := fmt.Sprintf("hosts[%d]", i)
		if h.Name == "" {
			bad(f+".name", "is required")
		} else if !dnsLabel.MatchString(h.Name) {
			bad(f+".name", "%q must be a lower-case DNS label", h.Name)
		} else if j, dup := names[h.Name]; dup {
			bad(f+".name", "%q is already the name of hosts[%d]", h.Name, j)
		} else {
			names[h.Name] = i
		}
		if len(h.Roles) == 0 {
			bad(f+".roles", "at least one of etcd, control-plane, worker, storage is required")
		}
		seen := map[Role]bool{}
		for k, r := range h.Roles {
			switch r {
			case RoleEtcd, RoleControlPlane, RoleWorker:
			case RoleStorage:
				if len(h.Roles) > 1 {
					bad(fmt.Sprintf("%s.roles[%d]", f, k), "storage takes no other role on its host (the stored data must outlive every cluster host)")
				}
			default:
				bad(fmt.Sprintf("%s.roles[%d]", f, k), "%q is not a role (etcd, control-plane, worker, storage)", r)
				continue
			}
			if seen[r] {
				bad(fmt.Sprintf("%s.roles[%d]", f, k), "%q is listed twice", r)
			}
			seen[r] = true
			roles[r]++
		}
		if h.Address == "" {
			bad(f+".address", "is required")
		} else if a, err := netip.ParseAddr(h.Address); err == nil {
			// A host may be named by a DNS name where its backend allows.
			if other, dup := addrs[a]; dup {
				bad(f+".address", "%s is already used by %s", a, other)
			}
			addrs[a] = f + ".address"
		}
	}
	if roles[RoleControlPlane] == 0 && len(c.Hosts) > 0 {
		bad("hosts", "no host has the control-plane role")
	}
	if roles[RoleStorage] > 1 {
		bad("hosts", "%d hosts have the storage role; a lab has at most one", roles[RoleStorage])
	}

	if c.Storage != nil {
		errs = append(errs, c.Storage.problems(c)...)
	}
	if c.Etcd != nil {
		errs = append(errs, c.Etcd.problems(c)...)
	}
	if k := c.Kubelet; k != nil {
		for _, f := range []struct{ name, val string }{{"caFile", k.CAFile}, {"certFile", k.CertFile}, {"keyFile", k.KeyFile}} {
			if f.val == "" {
				bad("kubelet."+f.name, "is required")
			}
		}
		if k.Port < 0 || k.Port > 65535 {
			bad("kubelet.port", "%d is not a port", k.Port)
		}
	}
	if c.SSH != nil {
		if c.SSH.User == "" {
			bad("ssh.user", "is required")
		}
		if c.SSH.KnownHosts == "" {
			bad("ssh.knownHosts", "is required (host keys are always verified)")
		}
		if c.SSH.IdentityFile == "" && !c.SSH.UseAgent {
			bad("ssh.identityFile", "is required unless ssh.useAgent is true")
		}
		if c.SSH.Port < 1 || c.SSH.Port > 65535 {
			bad("ssh.port", "%d is not a port", c.SSH.Port)
		}
		if c.SSH.Jump != "" && !strings.Contains(c.SSH.Jump, "@") {
			bad("ssh.jump", "%q must be user@host[:port]", c.SSH.Jump)
		}
	}
	if known {
		if own.Section == "" && c.section != nil {
			bad("kind", "%s has no section of its own, yet the config carries one", c.Kind)
		}
		if own.Validate != nil {
			errs = append(errs, own.Validate(c)...)
		}
	}
	return errors.Join(errs...)
}

// problems are what is wrong with a storage section, each naming its
// field.
func (s *StorageSettings) problems(c *Config) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("storage.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if s.SharedClass == "" && s.BlockClass == "" && s.BlockMMPClass == "" && s.BlockFencedClass == "" {
		bad("sharedClass", "at least one StorageClass is required (sharedClass, blockClass, blockMMPClass, blockFencedClass)")
	}
	h := s.History
	switch {
	case len(h.Endpoints) > 0 && h.Host != "":
		bad("history", "names both endpoints and a host: either a store that runs already or one faultline runs")
	case len(h.Endpoints) == 0 && h.Host == "":
		bad("history", "is required: endpoints of a store that runs, or a host (with the storage role) faultline runs one on")
	}
	for i, e := range h.Endpoints {
		if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
			bad(fmt.Sprintf("history.endpoints[%d]", i), "%q is not an etcd client URL (http://10.0.0.40:2379)", e)
		}
	}
	if h.Host != "" {
		hc, ok := c.HostConfig(h.Host)
		switch {
		case !ok:
			bad("history.host", "%q is not a host of the lab", h.Host)
		case len(hc.Roles) != 1 || hc.Roles[0] != RoleStorage:
			bad("history.host", "%s does not have the storage role alone: the store must run where no scenario reaches", h.Host)
		}
		if !filepath.IsAbs(h.Etcd) {
			bad("history.etcd", "%q is not an absolute path of the etcd binary on %s", h.Etcd, h.Host)
		}
		if !filepath.IsAbs(h.DataDir) {
			bad("history.dataDir", "%q is not an absolute path", h.DataDir)
		}
		if h.Port < 1 || h.Port > 65534 {
			bad("history.port", "%d is not a port (the next one must be too)", h.Port)
		}
	} else if h.Etcd != "" || h.DataDir != "" || h.Port != 0 {
		bad("history", "etcd, dataDir and port are for a store faultline runs on history.host")
	}
	return errs
}

// RemoteProblems are the checks every backend that runs no cluster of its
// own makes: it reaches the hosts over SSH and the cluster through the
// kubeconfig the file names.
func RemoteProblems(c *Config) []error {
	var errs []error
	if c.SSH == nil {
		errs = append(errs, fmt.Errorf("ssh: is required for a %s lab", c.Kind))
	}
	if c.Kubeconfig == "" {
		errs = append(errs, fmt.Errorf("kubeconfig: is required for a %s lab", c.Kind))
	}
	return errs
}

// HostConfig returns the named host's config.
func (c *Config) HostConfig(name string) (HostConfig, bool) {
	for _, h := range c.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return HostConfig{}, false
}

// ResolveConfigPath turns a --lab argument into a file: an existing path is
// used as it is; a relative path that does not exist here is looked up in
// the parent directories (ginkgo runs a suite in its package directory,
// so FAULTLINE_LAB=testdata/labs/lab11.yaml given at the repository's
// root is found from suites/disagree); a bare name such as "lab11" is
// looked up as testdata/labs/<name>.yaml in the current directory and its
// parents.
func ResolveConfigPath(arg string) (string, error) {
	if arg == "" {
		return "", errors.New("no lab given (a lab file, or a topology name such as lab11)")
	}
	return ResolveTestdataFile(arg, "lab", "labs")
}

// ResolveTestdataFile finds a file of the kind named (what: "lab",
// "pool"): an existing file as given; a relative path found here or in a
// parent directory (ginkgo runs a suite in its package directory); a bare
// name as testdata/<dir>/<name>.yaml here or in a parent directory.
func ResolveTestdataFile(arg, what, dir string) (string, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return arg, nil
	}
	rel := arg
	missing := fmt.Sprintf("%s file %q does not exist here or under a parent directory", what, arg)
	if !strings.ContainsAny(arg, "/.") {
		rel = filepath.Join("testdata", dir, arg+".yaml")
		missing = fmt.Sprintf("unknown %s %q: no file testdata/%s/%s.yaml here or in a parent directory", what, arg, dir, arg)
	} else if filepath.IsAbs(arg) {
		return "", fmt.Errorf("%s file %q does not exist", what, arg)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(cwd, rel)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(cwd)
		if parent == cwd {
			return "", errors.New(missing)
		}
		cwd = parent
	}
}
