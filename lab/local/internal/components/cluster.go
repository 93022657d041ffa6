// Package components builds a local lab's services: for each of etcd,
// the API server, keepalived, the controller-manager, the scheduler,
// containerd, kubelet, kube-proxy and sshd, how it is started on a host
// (its command line, environment and config files), when it is ready, and
// how it is stopped and restarted. It works from a Cluster value, the lab
// as its components see it, and knows nothing of the lab's life cycle.
package components

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/binpaths"
	"github.com/faultline/faultline/lab/local/internal/addressing"
	"github.com/faultline/faultline/lab/local/internal/hostssh"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/supervise"
	"github.com/faultline/faultline/lab/local/pki"
	"github.com/faultline/faultline/lab/timers"
)

// Ports the lab's components listen on, inside each host's namespace.
const (
	EtcdClientPort        = 2379
	etcdPeerPort          = 2380
	KubeletPort           = 10250
	controllerManagerPort = 10257
	schedulerPort         = 10259
	kubeProxyHealthPort   = 10256
	kubeProxyMetricsPort  = 10249
	// KubeRouterHealthPort and KubeRouterMetricsPort are the policy
	// agent's (kube-router's defaults are 20244 and off).
	KubeRouterHealthPort  = 20244
	KubeRouterMetricsPort = 20245
)

// ClusterDomain is the cluster's DNS domain, and DNSServiceIPIndex the
// address of the service CIDR the kube-dns Service takes (the tenth, as
// kubeadm's default).
const (
	ClusterDomain     = "cluster.local"
	DNSServiceIPIndex = 10
)

// Cluster is one lab as its components see it: its config, the layout of
// its state dir, its address plan, its SSH material and its supervisor,
// and what is resolved once, when first needed (binaries, certificates,
// timers, node images, the admin's HTTP client).
type Cluster struct {
	Config *lab.Config
	Dirs   layout.State
	Plan   *addressing.Plan
	SSH    hostssh.Files
	Sup    *supervise.Supervisor

	env *Env

	imagesOnce sync.Once
	images     Images
	imagesErr  error

	httpOnce   sync.Once
	httpClient *http.Client
	httpErr    error

	csiOnce sync.Once
	csiPath string
	csiErr  error
}

// Host is one host as its components see it.
type Host struct {
	lab.HostConfig
	Node *addressing.Node // nil for hosts that run no kubelet
}

// HasRole says whether the host has role r.
func (h Host) HasRole(r lab.Role) bool { return slices.Contains(h.Roles, r) }

// Env is what the cluster's services need, resolved once per Cluster:
// the binaries, the certificates, the timer profile.
type Env struct {
	Bins    binpaths.Paths
	PKI     *pki.Files
	Profile timers.Profile
}

var envMu sync.Mutex

// Env resolves binaries, certificates and timers; it is what `up`
// calls first, so missing binaries are named before anything starts.
func (c *Cluster) Env(ctx context.Context) (*Env, error) {
	envMu.Lock()
	defer envMu.Unlock()
	if c.env != nil {
		return c.env, nil
	}
	bins, err := binpaths.Locate(c.Config)
	if err != nil {
		return nil, err
	}
	prof, err := timers.Get(c.Config.Kubernetes.TimerProfile)
	if err != nil {
		return nil, err
	}
	files, err := pki.Ensure(ctx, c.Config, c.Dirs.PKI())
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	c.env = &Env{Bins: bins, PKI: files, Profile: prof}
	return c.env, nil
}

// SetEnv makes the cluster run with e instead of what Env would resolve:
// for tests that start some services with binaries of their choosing.
func (c *Cluster) SetEnv(e *Env) {
	envMu.Lock()
	defer envMu.Unlock()
	c.env = e
}

// binDirs are the directories of the lab's built binaries, for PATH.
func (c *Cluster) binDirs() []string {
	p, err := binpaths.Locate(c.Config)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, b := range []string{p.Kubectl, p.Crictl, p.Etcdctl, p.Kubelet, p.Containerd} {
		d := filepath.Dir(b)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// hostsWithRole are the hosts with role r, in config order.
func (c *Cluster) hostsWithRole(r lab.Role) []lab.HostConfig {
	var out []lab.HostConfig
	for _, h := range c.Config.Hosts {
		if slices.Contains(h.Roles, r) {
			out = append(out, h)
		}
	}
	return out
}

// EtcdEndpoints are every etcd member's client URL, comma-separated, in
// config order.
func (c *Cluster) EtcdEndpoints() string {
	var eps []string
	for _, h := range c.hostsWithRole(lab.RoleEtcd) {
		eps = append(eps, fmt.Sprintf("https://%s:%d", h.Address, EtcdClientPort))
	}
	return strings.Join(eps, ",")
}

// ForHost lists the Kubernetes and etcd services of a host, in boot
// order.
func ForHost(c *Cluster, h Host) []Service {
	var out []Service
	if h.HasRole(lab.RoleEtcd) {
		out = append(out, etcdService())
	}
	if h.HasRole(lab.RoleControlPlane) {
		out = append(out, apiServerService())
		if c.Config.Network.VirtualIP != "" {
			out = append(out, keepalivedService())
		}
		out = append(out, controllerManagerService(), schedulerService())
	}
	if h.Node != nil {
		out = append(out, containerdService(), kubeletService())
		if !c.AgentsAsPods() {
			// As pods, the node agents are the kubelet's to run.
			out = append(out, kubeProxyService())
			if RunsAgent(h, lab.ServicePolicyAgent) {
				out = append(out, kubeRouterService())
			}
		}
		if h.HasRole(lab.RoleWorker) {
			if _, ok := c.StorageHost(); ok {
				out = append(out, csiNodeService())
			}
		}
	}
	if h.HasRole(lab.RoleStorage) {
		out = append(out, historyStoreService(), csiControllerService(), csiAttacherService())
	}
	return out
}

// writeFile writes a generated config file, creating its directory.
func writeFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
