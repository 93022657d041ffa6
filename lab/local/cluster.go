package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/internal/binpaths"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/supervise"
	"github.com/faultline/faultline/lab/local/pki"
	"github.com/faultline/faultline/lab/timers"
)

// Ports the lab's components listen on, inside each host's namespace.
const (
	etcdClientPort        = 2379
	etcdPeerPort          = 2380
	kubeletPort           = 10250
	controllerManagerPort = 10257
	schedulerPort         = 10259
	kubeProxyHealthPort   = 10256
)

// clusterCtx is what the cluster's services need, resolved once per Lab:
// the binaries, the certificates, the timer profile.
type clusterCtx struct {
	bins    binpaths.Paths
	pki     *pki.Files
	profile timers.Profile
}

var clusterMu sync.Mutex

// cluster resolves binaries, certificates and timers; it is what `up`
// calls first, so missing binaries are named before anything starts.
func (l *Lab) cluster(ctx context.Context) (*clusterCtx, error) {
	clusterMu.Lock()
	defer clusterMu.Unlock()
	if l.cc != nil {
		return l.cc, nil
	}
	bins, err := binpaths.Locate(l.cfg)
	if err != nil {
		return nil, err
	}
	prof, err := timers.Get(l.cfg.Kubernetes.TimerProfile)
	if err != nil {
		return nil, err
	}
	files, err := pki.Ensure(ctx, l.cfg, l.dirs.PKI())
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	l.cc = &clusterCtx{bins: bins, pki: files, profile: prof}
	return l.cc, nil
}

// binDirs are the directories of the lab's built binaries, for PATH.
func (l *Lab) binDirs() []string {
	p, err := binpaths.Locate(l.cfg)
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

func (l *Lab) timerValues() map[string]string {
	p, err := timers.Get(l.cfg.Kubernetes.TimerProfile)
	if err != nil {
		return nil
	}
	return p.Flat()
}

// hostsWithRole are the hosts with role r, in config order.
func (l *Lab) hostsWithRole(r lab.Role) []*Host {
	var out []*Host
	for _, h := range l.hosts {
		if h.HasRole(r) {
			out = append(out, h)
		}
	}
	return out
}

// etcdHosts are the hosts with the etcd role, in config order.
func (l *Lab) etcdHosts() []*Host { return l.hostsWithRole(lab.RoleEtcd) }

func (l *Lab) controlPlaneHosts() []*Host { return l.hostsWithRole(lab.RoleControlPlane) }

func (l *Lab) nodeHosts() []*Host {
	var out []*Host
	for _, h := range l.hosts {
		if h.node != nil {
			out = append(out, h)
		}
	}
	return out
}

func (l *Lab) etcdEndpoints() string {
	var eps []string
	for _, h := range l.etcdHosts() {
		eps = append(eps, fmt.Sprintf("https://%s:%d", h.cfg.Address, etcdClientPort))
	}
	return strings.Join(eps, ",")
}

// clusterServices are the Kubernetes and etcd services of a host, in boot
// order.
func (l *Lab) clusterServices(h *Host) []service {
	var out []service
	if h.HasRole(lab.RoleEtcd) {
		out = append(out, etcdService())
	}
	if h.HasRole(lab.RoleControlPlane) {
		out = append(out, apiServerService())
		if l.cfg.Network.VirtualIP != "" {
			out = append(out, keepalivedService())
		}
		out = append(out, controllerManagerService(), schedulerService())
	}
	if h.node != nil {
		out = append(out, containerdService(), kubeletService(), kubeProxyService())
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

func etcdService() service {
	return service{
		name:  lab.ServiceEtcd,
		phase: phaseEtcd,
		spec: func(h *Host) (supervise.Spec, error) {
			l := h.lab
			cc, err := l.cluster(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			m, ok := cc.pki.Etcd[h.cfg.Name]
			if !ok {
				return supervise.Spec{}, fmt.Errorf("no etcd certificates for %s", h.cfg.Name)
			}
			var initial []string
			for _, e := range l.etcdHosts() {
				initial = append(initial, fmt.Sprintf("%s=https://%s:%d", e.cfg.Name, e.cfg.Address, etcdPeerPort))
			}
			a := h.cfg.Address
			argv := []string{cc.bins.Etcd,
				"--name=" + h.cfg.Name,
				"--data-dir=" + filepath.Join(l.dirs.Data(h.cfg.Name), "etcd"),
				fmt.Sprintf("--listen-client-urls=https://%s:%d,https://127.0.0.1:%d", a, etcdClientPort, etcdClientPort),
				fmt.Sprintf("--advertise-client-urls=https://%s:%d", a, etcdClientPort),
				fmt.Sprintf("--listen-peer-urls=https://%s:%d", a, etcdPeerPort),
				fmt.Sprintf("--initial-advertise-peer-urls=https://%s:%d", a, etcdPeerPort),
				"--initial-cluster=" + strings.Join(initial, ","),
				"--initial-cluster-state=new",
				"--initial-cluster-token=faultline-" + l.cfg.Name,
				"--client-cert-auth", "--trusted-ca-file=" + cc.pki.CA.Cert,
				"--cert-file=" + m.Server.Cert, "--key-file=" + m.Server.Key,
				"--peer-client-cert-auth", "--peer-trusted-ca-file=" + cc.pki.CA.Cert,
				"--peer-cert-file=" + m.Peer.Cert, "--peer-key-file=" + m.Peer.Key,
				"--listen-metrics-urls=http://127.0.0.1:2381",
				"--log-level=warn",
			}
			argv = append(argv, cc.profile.EtcdFlags()...)
			return supervise.Spec{Argv: argv}, nil
		},
		ready: func(ctx context.Context, h *Host) error {
			return h.lab.httpsOK(ctx, fmt.Sprintf("https://%s:%d/health", h.cfg.Address, etcdClientPort), `"health":"true"`)
		},
		stopGrace: 10 * time.Second,
	}
}

func apiServerService() service {
	return service{
		name:  lab.ServiceAPIServer,
		phase: phaseAPIServer,
		spec: func(h *Host) (supervise.Spec, error) {
			l := h.lab
			cc, err := l.cluster(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			cp, ok := cc.pki.ControlPlane[h.cfg.Name]
			if !ok {
				return supervise.Spec{}, fmt.Errorf("no API server certificates for %s", h.cfg.Name)
			}
			authzConf, err := l.writeAuthorizationConfig(h)
			if err != nil {
				return supervise.Spec{}, err
			}
			p := cc.pki
			argv := []string{cc.bins.KubeAPIServer,
				"--advertise-address=" + h.cfg.Address,
				// All addresses of the host: its own and the virtual
				// address when keepalived gives it to this host.
				"--bind-address=0.0.0.0",
				"--secure-port=" + strconv.Itoa(l.cfg.Network.APIServerPort),
				"--etcd-servers=" + l.etcdEndpoints(),
				"--etcd-cafile=" + p.CA.Cert,
				"--etcd-certfile=" + p.APIServerEtcdClient.Cert,
				"--etcd-keyfile=" + p.APIServerEtcdClient.Key,
				"--client-ca-file=" + p.CA.Cert,
				"--tls-cert-file=" + cp.APIServer.Cert,
				"--tls-private-key-file=" + cp.APIServer.Key,
				"--kubelet-client-certificate=" + p.APIServerKubeletClient.Cert,
				"--kubelet-client-key=" + p.APIServerKubeletClient.Key,
				"--kubelet-certificate-authority=" + p.CA.Cert,
				"--kubelet-preferred-address-types=InternalIP",
				"--authorization-config=" + authzConf,
				"--enable-admission-plugins=NodeRestriction",
				"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
				"--service-account-key-file=" + p.ServiceAccountPub,
				"--service-account-signing-key-file=" + p.ServiceAccountKey,
				"--service-cluster-ip-range=" + l.plan.Services.String(),
				"--allow-privileged=true",
				"--requestheader-client-ca-file=" + p.FrontProxyCA.Cert,
				"--requestheader-username-headers=X-Remote-User",
				"--requestheader-group-headers=X-Remote-Group",
				"--requestheader-extra-headers-prefix=X-Remote-Extra-",
				"--proxy-client-cert-file=" + p.FrontProxyClient.Cert,
				"--proxy-client-key-file=" + p.FrontProxyClient.Key,
				"--profiling=false",
			}
			argv = append(argv, cc.profile.APIServerFlags()...)
			return supervise.Spec{Argv: argv}, nil
		},
		ready: func(ctx context.Context, h *Host) error {
			return h.lab.httpsOK(ctx, fmt.Sprintf("https://%s:%d/readyz", h.cfg.Address, h.lab.cfg.Network.APIServerPort), "ok")
		},
		readyWait: 120 * time.Second,
		// An API server whose etcd is gone can take 20s and more to end
		// its graceful termination.
		stopGrace: 30 * time.Second,
	}
}

func controllerManagerService() service {
	return service{
		name:  lab.ServiceControllerManager,
		phase: phaseControlPlane,
		spec: func(h *Host) (supervise.Spec, error) {
			cc, err := h.lab.cluster(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			cp := cc.pki.ControlPlane[h.cfg.Name]
			kc := cp.ControllerManagerKubeconfig
			argv := []string{cc.bins.KubeControllerManager,
				"--kubeconfig=" + kc,
				"--authentication-kubeconfig=" + kc,
				"--authorization-kubeconfig=" + kc,
				"--bind-address=" + h.cfg.Address,
				"--client-ca-file=" + cc.pki.CA.Cert,
				"--requestheader-client-ca-file=" + cc.pki.FrontProxyCA.Cert,
				"--cluster-name=" + h.lab.cfg.Name,
				"--cluster-signing-cert-file=" + cc.pki.CA.Cert,
				"--cluster-signing-key-file=" + cc.pki.CA.Key,
				"--root-ca-file=" + cc.pki.CA.Cert,
				"--service-account-private-key-file=" + cc.pki.ServiceAccountKey,
				"--use-service-account-credentials=true",
				"--controllers=*,bootstrapsigner,tokencleaner",
				// Each node's pod subnet is fixed by the lab's CNI
				// config, not allocated.
				"--allocate-node-cidrs=false",
				"--service-cluster-ip-range=" + h.lab.plan.Services.String(),
				"--profiling=false",
			}
			argv = append(argv, cc.profile.ControllerManagerFlags()...)
			return supervise.Spec{Argv: argv, Env: cc.profile.ClientEnv()}, nil
		},
		ready: func(ctx context.Context, h *Host) error {
			return h.lab.httpsOK(ctx, fmt.Sprintf("https://%s:%d/healthz", h.cfg.Address, controllerManagerPort), "ok")
		},
		stopGrace: 10 * time.Second,
		// It exits when it loses its leader lease, and expects to be
		// started again.
		restartDelay: componentRestartDelay,
	}
}

func schedulerService() service {
	return service{
		name:  lab.ServiceScheduler,
		phase: phaseControlPlane,
		spec: func(h *Host) (supervise.Spec, error) {
			cc, err := h.lab.cluster(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			kc := cc.pki.ControlPlane[h.cfg.Name].SchedulerKubeconfig
			argv := []string{cc.bins.KubeScheduler,
				"--kubeconfig=" + kc,
				"--authentication-kubeconfig=" + kc,
				"--authorization-kubeconfig=" + kc,
				"--bind-address=" + h.cfg.Address,
				"--client-ca-file=" + cc.pki.CA.Cert,
				"--requestheader-client-ca-file=" + cc.pki.FrontProxyCA.Cert,
				"--profiling=false",
			}
			argv = append(argv, cc.profile.SchedulerFlags()...)
			return supervise.Spec{Argv: argv, Env: cc.profile.ClientEnv()}, nil
		},
		ready: func(ctx context.Context, h *Host) error {
			return h.lab.httpsOK(ctx, fmt.Sprintf("https://%s:%d/healthz", h.cfg.Address, schedulerPort), "ok")
		},
		stopGrace: 10 * time.Second,
		// As the controller-manager.
		restartDelay: componentRestartDelay,
	}
}
