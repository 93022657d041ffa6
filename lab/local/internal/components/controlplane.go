package components

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

func etcdService() Service {
	return Service{
		Name:  lab.ServiceEtcd,
		Phase: PhaseEtcd,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			m, ok := cc.PKI.Etcd[h.Name]
			if !ok {
				return supervise.Spec{}, fmt.Errorf("no etcd certificates for %s", h.Name)
			}
			var initial []string
			for _, e := range c.hostsWithRole(lab.RoleEtcd) {
				initial = append(initial, fmt.Sprintf("%s=https://%s:%d", e.Name, e.Address, etcdPeerPort))
			}
			a := h.Address
			argv := []string{cc.Bins.Etcd,
				"--name=" + h.Name,
				"--data-dir=" + filepath.Join(c.Dirs.Data(h.Name), "etcd"),
				fmt.Sprintf("--listen-client-urls=https://%s:%d,https://127.0.0.1:%d", a, EtcdClientPort, EtcdClientPort),
				fmt.Sprintf("--advertise-client-urls=https://%s:%d", a, EtcdClientPort),
				fmt.Sprintf("--listen-peer-urls=https://%s:%d", a, etcdPeerPort),
				fmt.Sprintf("--initial-advertise-peer-urls=https://%s:%d", a, etcdPeerPort),
				"--initial-cluster=" + strings.Join(initial, ","),
				"--initial-cluster-state=new",
				"--initial-cluster-token=faultline-" + c.Config.Name,
				"--client-cert-auth", "--trusted-ca-file=" + cc.PKI.CA.Cert,
				"--cert-file=" + m.Server.Cert, "--key-file=" + m.Server.Key,
				"--peer-client-cert-auth", "--peer-trusted-ca-file=" + cc.PKI.CA.Cert,
				"--peer-cert-file=" + m.Peer.Cert, "--peer-key-file=" + m.Peer.Key,
				"--listen-metrics-urls=http://127.0.0.1:2381",
				"--log-level=warn",
			}
			argv = append(argv, cc.Profile.EtcdFlags()...)
			return supervise.Spec{Argv: argv}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return c.HTTPSOK(ctx, fmt.Sprintf("https://%s:%d/health", h.Address, EtcdClientPort), `"health":"true"`)
		},
		StopGrace: 10 * time.Second,
	}
}

func apiServerService() Service {
	return Service{
		Name:  lab.ServiceAPIServer,
		Phase: PhaseAPIServer,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			cp, ok := cc.PKI.ControlPlane[h.Name]
			if !ok {
				return supervise.Spec{}, fmt.Errorf("no API server certificates for %s", h.Name)
			}
			authzConf, err := c.writeAuthorizationConfig(h)
			if err != nil {
				return supervise.Spec{}, err
			}
			p := cc.PKI
			argv := []string{cc.Bins.KubeAPIServer,
				"--advertise-address=" + h.Address,
				// All addresses of the host: its own and the virtual
				// address when keepalived gives it to this host.
				"--bind-address=0.0.0.0",
				"--secure-port=" + strconv.Itoa(c.Config.Network.APIServerPort),
				"--etcd-servers=" + c.EtcdEndpoints(),
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
				"--service-cluster-ip-range=" + c.Plan.Services.String(),
				"--allow-privileged=true",
				"--requestheader-client-ca-file=" + p.FrontProxyCA.Cert,
				"--requestheader-username-headers=X-Remote-User",
				"--requestheader-group-headers=X-Remote-Group",
				"--requestheader-extra-headers-prefix=X-Remote-Extra-",
				"--proxy-client-cert-file=" + p.FrontProxyClient.Cert,
				"--proxy-client-key-file=" + p.FrontProxyClient.Key,
				"--profiling=false",
			}
			argv = append(argv, cc.Profile.APIServerFlags()...)
			return supervise.Spec{Argv: argv}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return c.HTTPSOK(ctx, fmt.Sprintf("https://%s:%d/readyz", h.Address, c.Config.Network.APIServerPort), "ok")
		},
		ReadyWait: 120 * time.Second,
		// An API server whose etcd is gone can take 20s and more to end
		// its graceful termination.
		StopGrace: 30 * time.Second,
	}
}

func controllerManagerService() Service {
	return Service{
		Name:  lab.ServiceControllerManager,
		Phase: PhaseControlPlane,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			cp := cc.PKI.ControlPlane[h.Name]
			kc := cp.ControllerManagerKubeconfig
			argv := []string{cc.Bins.KubeControllerManager,
				"--kubeconfig=" + kc,
				"--authentication-kubeconfig=" + kc,
				"--authorization-kubeconfig=" + kc,
				"--bind-address=" + h.Address,
				"--client-ca-file=" + cc.PKI.CA.Cert,
				"--requestheader-client-ca-file=" + cc.PKI.FrontProxyCA.Cert,
				"--cluster-name=" + c.Config.Name,
				"--cluster-signing-cert-file=" + cc.PKI.CA.Cert,
				"--cluster-signing-key-file=" + cc.PKI.CA.Key,
				"--root-ca-file=" + cc.PKI.CA.Cert,
				"--service-account-private-key-file=" + cc.PKI.ServiceAccountKey,
				"--use-service-account-credentials=true",
				"--controllers=*,bootstrapsigner,tokencleaner",
				// Each node's pod subnet is fixed by the lab's CNI
				// config, not allocated.
				"--allocate-node-cidrs=false",
				"--service-cluster-ip-range=" + c.Plan.Services.String(),
				"--profiling=false",
			}
			argv = append(argv, cc.Profile.ControllerManagerFlags()...)
			return supervise.Spec{Argv: argv, Env: cc.Profile.ClientEnv()}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return c.HTTPSOK(ctx, fmt.Sprintf("https://%s:%d/healthz", h.Address, controllerManagerPort), "ok")
		},
		StopGrace: 10 * time.Second,
		// It exits when it loses its leader lease, and expects to be
		// started again.
		RestartDelay: ComponentRestartDelay,
	}
}

func schedulerService() Service {
	return Service{
		Name:  lab.ServiceScheduler,
		Phase: PhaseControlPlane,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			kc := cc.PKI.ControlPlane[h.Name].SchedulerKubeconfig
			argv := []string{cc.Bins.KubeScheduler,
				"--kubeconfig=" + kc,
				"--authentication-kubeconfig=" + kc,
				"--authorization-kubeconfig=" + kc,
				"--bind-address=" + h.Address,
				"--client-ca-file=" + cc.PKI.CA.Cert,
				"--requestheader-client-ca-file=" + cc.PKI.FrontProxyCA.Cert,
				"--profiling=false",
			}
			argv = append(argv, cc.Profile.SchedulerFlags()...)
			return supervise.Spec{Argv: argv, Env: cc.Profile.ClientEnv()}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return c.HTTPSOK(ctx, fmt.Sprintf("https://%s:%d/healthz", h.Address, schedulerPort), "ok")
		},
		StopGrace: 10 * time.Second,
		// As the controller-manager.
		RestartDelay: ComponentRestartDelay,
	}
}
