package components

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/cgroups"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/supervise"
	"github.com/faultline/faultline/lab/local/pki"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func keepalivedService() Service {
	return Service{
		Name:  lab.ServiceKeepalived,
		Phase: PhaseAPIServer,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			run := c.Dirs.Runtime(h.Name)
			conf := filepath.Join(c.Dirs.Data(h.Name), "keepalived", "keepalived.conf")
			if err := writeFile(conf, c.keepalivedConfig(h)); err != nil {
				return supervise.Spec{}, err
			}
			argv := []string{cc.Bins.Keepalived,
				"--dont-fork", "--log-console", "--vrrp",
				"--use-file=" + conf,
				// Keepalived's pid files default to /run; other
				// instances on the machine must not collide.
				"--pid=" + filepath.Join(run, "keepalived.pid.main"),
				"--vrrp_pid=" + filepath.Join(run, "keepalived.pid.vrrp"),
				"--checkers_pid=" + filepath.Join(run, "keepalived.pid.checkers"),
			}
			return supervise.Spec{Argv: argv}, nil
		},
		StopGrace: 5 * time.Second,
	}
}

// keepalivedConfig is one control-plane host's VRRP instance: unicast to
// the other control-plane hosts on the management network, the virtual
// address on eth0, held only while the local API server answers.
func (c *Cluster) keepalivedConfig(h Host) string {
	cps := c.hostsWithRole(lab.RoleControlPlane)
	prio := 100
	var peers []string
	for i, o := range cps {
		if o.Name == h.Name {
			prio = 150 - i
			continue
		}
		peers = append(peers, "    "+o.Address)
	}
	vrid := 1 + int(layout.ShortHash(c.Config.Name)[0])%250
	port := c.Config.Network.APIServerPort
	return fmt.Sprintf(`global_defs {
  router_id fl_%[1]s
  enable_script_security
  script_user root
  max_auto_priority -1
}
vrrp_script apiserver {
  script "/usr/bin/curl -sfk --max-time 2 -o /dev/null https://%[2]s:%[3]d/livez"
  interval 1
  timeout 3
  fall 2
  rise 2
}
vrrp_instance apiserver {
  state BACKUP
  interface %[4]s
  virtual_router_id %[5]d
  priority %[6]d
  advert_int 1
  unicast_src_ip %[2]s
  unicast_peer {
%[7]s
  }
  virtual_ipaddress {
    %[8]s/%[9]d dev %[4]s
  }
  track_script {
    apiserver
  }
}
`, h.Name, h.Address, port, layout.HostManagementIf, vrid, prio, strings.Join(peers, "\n"),
		c.Config.Network.VirtualIP, c.Plan.Management.Bits())
}

func (c *Cluster) cniNetworkName() string { return "fl-" + c.Config.Name }

// containerdConfig follows what 1.36 clusters run, with what sharing one
// machine needs: every path per node, oom_score_adj restricted (no
// CAP_SYS_RESOURCE for a negative one), the sandbox image pinned (there is
// no registry), NRI off (its socket is machine-wide).
func (c *Cluster) containerdConfig(cc *Env, h Host, pause string) string {
	data, run := c.Dirs.Data(h.Name), c.Dirs.Runtime(h.Name)
	sock := c.Dirs.ContainerdSocket(h.Name)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`version = 3
root = %[1]s
state = %[2]s

[grpc]
  address = %[3]s

[ttrpc]
  address = %[4]s

[plugins]
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    disable_apparmor = true
    enable_selinux = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = %[5]s
          Root = %[6]s
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [%[7]s]
      conf_dir = %[8]s
  [plugins.'io.containerd.cri.v1.images']
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %[9]s
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`, q(filepath.Join(data, "containerd")), q(filepath.Join(run, "containerd-state")), q(sock), q(ttrpcSocket(sock)),
		q(cc.Bins.Runc), q(filepath.Join(run, "runc")), q(cc.Bins.CNIBinDir), q(filepath.Join(data, "cni", "net.d")), q(pause))
}

// cniConfig gives the node's pods its /24 on a bridge inside the node,
// with the node as their gateway and no masquerade: pod traffic leaves the
// node with the pod's own address, over the pod transport network.
func (c *Cluster) cniConfig(h Host) string {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       c.cniNetworkName(),
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      layout.HostCNIBridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": h.Node.PodSubnet.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": filepath.Join(c.Dirs.Runtime(h.Name), "cni-ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	return string(b)
}

func containerdService() Service {
	return Service{
		Name:  lab.ServiceContainerd,
		Phase: PhaseRuntime,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, err := c.Env(context.Background())
			if err != nil {
				return supervise.Spec{}, err
			}
			imgs, err := c.Images()
			if err != nil {
				return supervise.Spec{}, err
			}
			data := c.Dirs.Data(h.Name)
			conf := filepath.Join(data, "containerd.toml")
			if err := writeFile(conf, c.containerdConfig(cc, h, imgs.Pause)); err != nil {
				return supervise.Spec{}, err
			}
			if err := writeFile(filepath.Join(data, "cni", "net.d", "10-lab.conflist"), c.cniConfig(h)); err != nil {
				return supervise.Spec{}, err
			}
			return supervise.Spec{
				Argv: []string{cc.Bins.Containerd, "--config=" + conf, "--log-level=warn"},
				// containerd finds its shim, and the shim runc, by PATH.
				Env: []string{"PATH=" + cc.Bins.ContainerdDir() + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			conn, err := net.DialTimeout("unix", c.Dirs.ContainerdSocket(h.Name), time.Second)
			if err != nil {
				return err
			}
			return conn.Close()
		},
		ReadyWait: 30 * time.Second,
		StopGrace: 10 * time.Second,
	}
}

func (c *Cluster) kubeletConfig(cc *Env, h Host) (string, error) {
	node := cc.PKI.Nodes[h.Name]
	data := c.Dirs.Data(h.Name)
	cfg := map[string]any{
		"apiVersion":         "kubelet.config.k8s.io/v1beta1",
		"kind":               "KubeletConfiguration",
		"address":            h.Address,
		"port":               KubeletPort,
		"readOnlyPort":       0,
		"healthzBindAddress": h.Address,
		"healthzPort":        10248,
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": true},
			"x509":      map[string]any{"clientCAFile": cc.PKI.CA.Cert},
		},
		"authorization":            map[string]any{"mode": "Webhook"},
		"tlsCertFile":              node.Serving.Cert,
		"tlsPrivateKeyFile":        node.Serving.Key,
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               "/" + layout.CgroupName(c.Config.Name, h.Name),
		"failCgroupV1":             false,
		"failSwapOn":               false,
		"containerRuntimeEndpoint": "unix://" + c.Dirs.ContainerdSocket(h.Name),
		"podLogsDir":               c.Dirs.PodLogs(h.Name),
		"volumePluginDir":          filepath.Join(data, "volume-plugins"),
		"protectKernelDefaults":    true,
		"clusterDomain":            ClusterDomain,
		"clusterDNS":               []string{c.Plan.ServiceIP(DNSServiceIPIndex).String()},
		"resolvConf":               "/etc/resolv.conf",
		"rotateCertificates":       false,
		"serverTLSBootstrap":       false,
		// There is no registry: images the lab imported must never be
		// collected, and the shared disk must not evict the lab's pods.
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
		"evictionHard": map[string]string{
			"memory.available":  "100Mi",
			"nodefs.available":  "1%",
			"imagefs.available": "1%",
			"nodefs.inodesFree": "1%",
		},
	}
	if h.HasRole(lab.RoleControlPlane) {
		cfg["registerWithTaints"] = []map[string]string{{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}}
	}
	for k, v := range cc.Profile.KubeletConfig() {
		cfg[k] = v
	}
	b, err := yaml.Marshal(cfg)
	return string(b), err
}

func kubeletService() Service {
	return Service{
		Name:       lab.ServiceKubelet,
		Phase:      PhaseNode,
		StartAlone: startKubeletAlone,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, node, err := c.nodeEnv(h, "kubelet")
			if err != nil {
				return supervise.Spec{}, err
			}
			if err := cgroups.CreateNode(layout.CgroupName(c.Config.Name, h.Name)); err != nil {
				return supervise.Spec{}, err
			}
			data := c.Dirs.Data(h.Name)
			conf := filepath.Join(data, "kubelet.yaml")
			kc, err := c.kubeletConfig(cc, h)
			if err != nil {
				return supervise.Spec{}, err
			}
			if err := writeFile(conf, kc); err != nil {
				return supervise.Spec{}, err
			}
			argv := []string{cc.Bins.Kubelet,
				"--config=" + conf,
				"--kubeconfig=" + node.Kubeconfig,
				// Every kubelet on the machine shares one mount
				// namespace: the defaults under /var/lib/kubelet would
				// collide.
				"--root-dir=" + c.KubeletRoot(h.Name),
				"--cert-dir=" + filepath.Join(data, "kubelet-pki"),
				"--hostname-override=" + h.Name,
				"--node-ip=" + h.Address,
			}
			return supervise.Spec{Argv: argv, Env: cc.Profile.ClientEnv()}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return tcpReady(ctx, h.Address, KubeletPort)
		},
		StopGrace: 10 * time.Second,
	}
}

func kubeProxyService() Service {
	return Service{
		Name:  lab.ServiceKubeProxy,
		Phase: PhaseNode,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, node, err := c.nodeEnv(h, "kube-proxy")
			if err != nil {
				return supervise.Spec{}, err
			}
			cfg := map[string]any{
				"apiVersion":         "kubeproxy.config.k8s.io/v1alpha1",
				"kind":               "KubeProxyConfiguration",
				"clientConnection":   map[string]any{"kubeconfig": node.KubeProxyKubeconfig},
				"mode":               c.proxyMode(),
				"clusterCIDR":        c.Plan.Pods.String(),
				"hostnameOverride":   h.Name,
				"bindAddress":        "0.0.0.0",
				"healthzBindAddress": fmt.Sprintf("%s:%d", h.Address, kubeProxyHealthPort),
				"metricsBindAddress": fmt.Sprintf("%s:%d", h.Address, kubeProxyMetricsPort),
				// 0 leaves the machine-wide nf_conntrack_max alone.
				"conntrack": map[string]any{"maxPerCore": 0},
			}
			b, err := yaml.Marshal(cfg)
			if err != nil {
				return supervise.Spec{}, err
			}
			conf := filepath.Join(c.Dirs.Data(h.Name), "kube-proxy.yaml")
			if err := writeFile(conf, string(b)); err != nil {
				return supervise.Spec{}, err
			}
			return supervise.Spec{Argv: []string{cc.Bins.KubeProxy, "--config=" + conf}, Env: cc.Profile.ClientEnv()}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return tcpReady(ctx, h.Address, kubeProxyHealthPort)
		},
		StopGrace: 5 * time.Second,
	}
}

// kubeRouterService is the worker's NetworkPolicy agent: kube-router with
// only its firewall, beside kube-proxy, as its own node identity.
func kubeRouterService() Service {
	return Service{
		Name:  lab.ServicePolicyAgent,
		Phase: PhaseNode,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			cc, node, err := c.nodeEnv(h, "kube-router")
			if err != nil {
				return supervise.Spec{}, err
			}
			argv := []string{cc.Bins.KubeRouter,
				"--kubeconfig=" + node.KubeRouterKubeconfig,
				"--hostname-override=" + h.Name,
				"--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
				"--service-cluster-ip-range=" + c.Plan.Services.String(),
				fmt.Sprintf("--health-port=%d", KubeRouterHealthPort),
				fmt.Sprintf("--metrics-port=%d", KubeRouterMetricsPort),
			}
			env := append(cc.Profile.ClientEnv(), "PATH="+filepath.Dir(cc.Bins.Ipset)+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
			return supervise.Spec{Argv: argv, Env: env}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return httpOK(ctx, fmt.Sprintf("http://%s:%d/healthz", h.Address, KubeRouterHealthPort))
		},
		After:     afterKubeProxySynced,
		ReadyWait: 90 * time.Second,
		StopGrace: 5 * time.Second,
	}
}

// kubeProxySyncWait bounds how long kube-router's start waits for the
// host's kube-proxy to sync its rules once: its first sync comes as soon
// as it has listed the Services and EndpointSlices, within a second or
// two of its start on a reachable API server.
const kubeProxySyncWait = 30 * time.Second

// afterKubeProxySynced waits until the host's kube-proxy, where it runs,
// has synced its rules once. kube-router's policy controller saves the
// whole filter table and restores it (iptables-restore without
// --noflush), so a rule kube-proxy adds between the two is lost:
// kube-proxy's first sync adds its jumps from the built-in chains one
// iptables call at a time, and a kube-router starting beside it left a
// host powered on without them, which kube-proxy adds again only at its
// next full sync (an hour). Started after that first sync, kube-router
// saves them with the rest.
func afterKubeProxySynced(ctx context.Context, c *Cluster, h Host, running func(string) bool) error {
	if !running(lab.ServiceKubeProxy) {
		return nil
	}
	url := fmt.Sprintf("http://%s:%d/metrics", h.Address, kubeProxyMetricsPort)
	return lab.WaitFor(ctx, "kube-proxy on "+h.Name+" to sync its rules once", kubeProxySyncWait, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		at, err := kubeProxyLastSync(ctx, url)
		return err == nil && at > 0, err
	})
}

// kubeProxyLastSync reads kube-proxy's
// kubeproxy_sync_proxy_rules_last_timestamp_seconds, which it sets at
// the end of every sync that succeeded (0 before the first).
func kubeProxyLastSync(ctx context.Context, url string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var last float64
	err := httpRead(ctx, url, func(r io.Reader) (err error) {
		last, err = lastSyncOf(r)
		return err
	})
	return last, err
}

// lastSyncOf finds the last successful sync's time in kube-proxy's
// metrics (0 when it has none yet).
func lastSyncOf(r io.Reader) (float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return 0, fmt.Errorf("kube-proxy's metrics: %w", err)
	}
	f, ok := fams["kubeproxy_sync_proxy_rules_last_timestamp_seconds"]
	if !ok {
		return 0, nil
	}
	var last float64
	for _, m := range f.GetMetric() {
		last = max(last, m.GetGauge().GetValue())
	}
	return last, nil
}

// proxyMode is the kube-proxy mode the lab file asks for (iptables by
// default).
func (c *Cluster) proxyMode() string {
	if m := c.Config.Kubernetes.ProxyMode; m != "" {
		return m
	}
	return lab.ProxyModeIPTables
}

// nodeEnv is what a node service starts with: the cluster's binaries,
// certificates and timers, and the node's own certificates (an error
// naming the service when the node has none).
func (c *Cluster) nodeEnv(h Host, service string) (*Env, pki.Node, error) {
	cc, err := c.Env(context.Background())
	if err != nil {
		return nil, pki.Node{}, err
	}
	node, ok := cc.PKI.Nodes[h.Name]
	if !ok {
		return nil, pki.Node{}, fmt.Errorf("no %s certificates for %s", service, h.Name)
	}
	return cc, node, nil
}
