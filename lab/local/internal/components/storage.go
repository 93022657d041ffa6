package components

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/internal/gobuild"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/csidriver"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

// Ports of the storage host's services and of the workers' CSI node
// driver, inside each host's namespace.
const (
	// HistoryStorePort is the storage host's external etcd, plain HTTP:
	// the workloads' pods reach it with no certificates of their own.
	HistoryStorePort     = 2379
	historyStorePeerPort = 2380
	csiControllerHealth  = 20246
	csiAttacherHTTP      = 20247
	CSINodeHealthPort    = 20248
	csiBinaryName        = "faultline-csi"
)

// StorageHost is the lab's storage host, if it has one.
func (c *Cluster) StorageHost() (lab.HostConfig, bool) {
	hs := c.hostsWithRole(lab.RoleStorage)
	if len(hs) == 0 {
		return lab.HostConfig{}, false
	}
	return hs[0], true
}

// Export is the storage host's export path: the volumes' records, images
// and directories, reached by every host at the same path (the local lab's
// hosts share the machine's file system).
func (c *Cluster) Export() string { return ExportPath(c.Config, c.Dirs) }

// ExportPath is the export path of the lab cfg with state dirs, or ""
// when it has no storage host.
func ExportPath(cfg *lab.Config, dirs layout.State) string {
	for _, h := range cfg.Hosts {
		if slices.Contains(h.Roles, lab.RoleStorage) {
			return filepath.Join(dirs.Data(h.Name), "export")
		}
	}
	return ""
}

// HistoryEndpoint is the storage host's external etcd's client URL, or ""
// when the lab has no storage host.
func (c *Cluster) HistoryEndpoint() string {
	s, ok := c.StorageHost()
	if !ok {
		return ""
	}
	return fmt.Sprintf("http://%s:%d", s.Address, HistoryStorePort)
}

// KubeletRoot is a node's kubelet --root-dir.
func (c *Cluster) KubeletRoot(host string) string {
	return filepath.Join(c.Dirs.Data(host), "kubelet")
}

// csiBinary builds cmd/faultline-csi from the source tree the lab is
// brought up from, once per Cluster value, into the lab's state dir: the
// driver is the project's own code, so what runs is what is under test.
func (c *Cluster) csiBinary(ctx context.Context) (string, error) {
	c.csiOnce.Do(func() {
		dir, err := gobuild.FindModule()
		if err != nil {
			c.csiErr = fmt.Errorf("building the CSI driver: %w", err)
			return
		}
		out := filepath.Join(c.Dirs.Dir(), "bin", csiBinaryName)
		if err := gobuild.Static(ctx, dir, runtime.GOARCH, "cmd/faultline-csi", out); err != nil {
			c.csiErr = fmt.Errorf("building the CSI driver: %w", err)
			return
		}
		c.csiPath = out
	})
	return c.csiPath, c.csiErr
}

// historyStoreService is the storage host's standalone etcd: where every
// stored-data workload records its client history, off the volumes under
// test, so the history survives whatever the copies do to the volume.
// One member, the cluster's etcd binary, plain HTTP.
func historyStoreService() Service {
	return Service{
		Name:  lab.ServiceHistoryStore,
		Phase: PhaseEtcd,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			a := h.Address
			peer := fmt.Sprintf("http://%s:%d", a, historyStorePeerPort)
			argv := []string{cc.Bins.Etcd,
				"--name=history",
				"--data-dir=" + filepath.Join(c.Dirs.Data(h.Name), "history-etcd"),
				fmt.Sprintf("--listen-client-urls=http://%s:%d", a, HistoryStorePort),
				fmt.Sprintf("--advertise-client-urls=http://%s:%d", a, HistoryStorePort),
				"--listen-peer-urls=" + peer,
				"--initial-advertise-peer-urls=" + peer,
				"--initial-cluster=history=" + peer,
				"--initial-cluster-state=new",
				"--initial-cluster-token=faultline-history-" + c.Config.Name,
				"--listen-metrics-urls=http://127.0.0.1:2381",
				"--log-level=warn",
			}
			return supervise.Spec{Argv: argv}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return httpOKContaining(ctx, fmt.Sprintf("http://%s:%d/health", h.Address, HistoryStorePort), `"health":"true"`)
		},
		StopGrace: 10 * time.Second,
	}
}

// csiControllerService is both drivers' controller on the storage host:
// provisioning (it needs the API servers, so it starts with the
// controller-managers) and the block driver's attach records.
func csiControllerService() Service {
	return Service{
		Name:  lab.ServiceCSIController,
		Phase: PhaseControlPlane,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			if cc.PKI.CSIControllerKubeconfig == "" {
				return supervise.Spec{}, fmt.Errorf("no CSI controller kubeconfig for %s", h.Name)
			}
			bin, err := c.csiBinary(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			if err := os.MkdirAll(c.Export(), 0o755); err != nil {
				return supervise.Spec{}, err
			}
			argv := []string{bin, "controller",
				"--export=" + c.Export(),
				"--socket-dir=" + c.csiSocketDir(h),
				"--kubeconfig=" + cc.PKI.CSIControllerKubeconfig,
				fmt.Sprintf("--health-address=%s:%d", h.Address, csiControllerHealth),
			}
			return supervise.Spec{Argv: argv, Env: cc.Profile.ClientEnv()}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return httpOK(ctx, fmt.Sprintf("http://%s:%d/healthz", h.Address, csiControllerHealth))
		},
		StopGrace: 5 * time.Second,
	}
}

func (c *Cluster) csiSocketDir(h Host) string {
	return filepath.Join(c.Dirs.Runtime(h.Name), "csi")
}

// csiAttacherService is kubernetes-csi's csi-attacher beside the block
// driver's controller. It exits when it loses the driver's socket, so it
// is restarted as the controller-manager is.
func csiAttacherService() Service {
	return Service{
		Name:  lab.ServiceCSIAttacher,
		Phase: PhaseControlPlane,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			if cc.Bins.CSIAttacher == "" {
				return supervise.Spec{}, fmt.Errorf("csi-attacher is not in the binary cache (make bins)")
			}
			argv := []string{cc.Bins.CSIAttacher,
				"--csi-address=unix://" + csidriver.ControllerSocket(c.csiSocketDir(h), csidriver.BlockDriverName),
				"--kubeconfig=" + cc.PKI.CSIControllerKubeconfig,
				"--leader-election=false",
				"--timeout=15s",
				fmt.Sprintf("--http-endpoint=%s:%d", h.Address, csiAttacherHTTP),
			}
			return supervise.Spec{Argv: argv, Env: cc.Profile.ClientEnv()}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return httpOK(ctx, fmt.Sprintf("http://%s:%d/metrics", h.Address, csiAttacherHTTP))
		},
		StopGrace:    5 * time.Second,
		RestartDelay: ComponentRestartDelay,
	}
}

// csiNodeService is a worker's CSI node driver, a node agent beside
// kube-proxy and the policy agent: it registers both drivers with the
// node's kubelet, so it is ready once the kubelet has taken them.
func csiNodeService() Service {
	return Service{
		Name:  lab.ServiceCSINode,
		Phase: PhaseNode,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			bin, err := c.csiBinary(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			argv := []string{bin, "node",
				"--node-id=" + h.Name,
				"--export=" + c.Export(),
				"--kubelet-root=" + c.KubeletRoot(h.Name),
				fmt.Sprintf("--health-address=%s:%d", h.Address, CSINodeHealthPort),
			}
			return supervise.Spec{Argv: argv}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return httpOK(ctx, fmt.Sprintf("http://%s:%d/healthz", h.Address, CSINodeHealthPort))
		},
		ReadyWait: 90 * time.Second,
		StopGrace: 5 * time.Second,
	}
}

// httpOKContaining is httpOK that also wants want in the body.
func httpOKContaining(ctx context.Context, url, want string) error {
	body, err := httpGet(ctx, url)
	if err != nil {
		return err
	}
	if !strings.Contains(body, want) {
		return fmt.Errorf("GET %s: %q, want %s", url, strings.TrimSpace(body), want)
	}
	return nil
}
