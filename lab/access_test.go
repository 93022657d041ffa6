package lab

import (
	"errors"
	"strings"
	"testing"
)

// endpointLab is a Lab that says only its config and, when sockets is set,
// its nodes' CRI sockets.
type endpointLab struct {
	Lab
	cfg *Config
}

func (l endpointLab) Config() *Config { return l.cfg }

type socketLab struct{ endpointLab }

func (socketLab) RuntimeEndpoint(host string) (string, error) {
	if host != "worker1" {
		return "", errors.New("host " + host + " runs no container runtime")
	}
	return "/run/lab/worker1/containerd.sock", nil
}

func TestRuntimeSocketIsTheLabsOwnElseTheFilesElseNone(t *testing.T) {
	c := &Config{Kubernetes: KubernetesSettings{RuntimeEndpoint: "unix:///run/containerd/containerd.sock"}}
	if p, ok, err := RuntimeSocket(endpointLab{cfg: c}, "worker1"); p != "/run/containerd/containerd.sock" || !ok || err != nil {
		t.Errorf("from the lab file: %q %v %v", p, ok, err)
	}
	if p, ok, err := RuntimeSocket(socketLab{endpointLab{cfg: c}}, "worker1"); p != "/run/lab/worker1/containerd.sock" || !ok || err != nil {
		t.Errorf("the lab's own before the file's: %q %v %v", p, ok, err)
	}
	if _, ok, err := RuntimeSocket(socketLab{endpointLab{cfg: c}}, "cp1"); !ok || err == nil {
		t.Errorf("a host without a runtime: %v %v, want the lab's error", ok, err)
	}
	if p, ok, err := RuntimeSocket(endpointLab{cfg: &Config{}}, "worker1"); p != "" || ok || err != nil {
		t.Errorf("neither says: %q %v %v, want none and no error", p, ok, err)
	}
}

func TestRuntimeEndpointMustBeAUnixSocketPath(t *testing.T) {
	for _, ep := range []string{"/run/containerd/containerd.sock", "unix://run/containerd.sock", "tcp://10.0.0.1:1234"} {
		_, err := ParseConfig([]byte("kind: beta\nkubernetes: {runtimeEndpoint: \"" + ep + "\"}\n" + commonFile))
		if err == nil || !strings.Contains(err.Error(), "kubernetes.runtimeEndpoint: ") {
			t.Errorf("runtimeEndpoint %q: %v, want it refused", ep, err)
		}
	}
	c, err := ParseConfig([]byte("kind: beta\nkubernetes: {runtimeEndpoint: unix:///run/crio/crio.sock}\n" + commonFile))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok, err := RuntimeSocket(endpointLab{cfg: c}, "cp"); p != "/run/crio/crio.sock" || !ok || err != nil {
		t.Errorf("RuntimeSocket of the parsed file: %q %v %v", p, ok, err)
	}
}

func TestProxyModeIsIPTablesOrNFTables(t *testing.T) {
	for _, mode := range []string{"iptables", "nftables"} {
		c, err := ParseConfig([]byte("kind: beta\nkubernetes: {proxyMode: " + mode + "}\n" + commonFile))
		if err != nil || c.Kubernetes.ProxyMode != mode {
			t.Errorf("proxyMode %s: %v, %+v", mode, err, c)
		}
	}
	_, err := ParseConfig([]byte("kind: beta\nkubernetes: {proxyMode: ipvs}\n" + commonFile))
	if err == nil || !strings.Contains(err.Error(), `kubernetes.proxyMode: "ipvs" is not a kube-proxy mode`) {
		t.Errorf("proxyMode ipvs: %v, want it refused by name", err)
	}
}

func TestPolicyAgentIsOneWhoseRulesAreRead(t *testing.T) {
	for _, agent := range []string{"calico", "kube-router", "kube-network-policies"} {
		c, err := ParseConfig([]byte("kind: beta\nkubernetes: {policyAgent: " + agent + "}\n" + commonFile))
		if err != nil || c.Kubernetes.PolicyAgent != agent {
			t.Errorf("policyAgent %s: %v, %+v", agent, err, c)
		}
	}
	_, err := ParseConfig([]byte("kind: beta\nkubernetes: {policyAgent: cilium}\n" + commonFile))
	if err == nil || !strings.Contains(err.Error(), `kubernetes.policyAgent: "cilium" is not a NetworkPolicy agent`) {
		t.Errorf("policyAgent cilium: %v, want it refused by name", err)
	}
}

// kubernetes.agentKubeconfigs names node agents and absolute paths, and
// only where the agents run as services.
func TestAgentKubeconfigsNameAgentsAndAbsolutePaths(t *testing.T) {
	c, err := ParseConfig([]byte("kind: beta\nkubernetes: {agentKubeconfigs: {kube-proxy: '/etc/kubernetes/{host}/kube-proxy.conf'}}\n" + commonFile))
	if err != nil || c.Kubernetes.AgentKubeconfigs[ServiceKubeProxy] != "/etc/kubernetes/{host}/kube-proxy.conf" {
		t.Errorf("a kube-proxy kubeconfig: %v, %+v", err, c)
	}
	for file, want := range map[string]string{
		"kubernetes: {agentKubeconfigs: {coredns: /etc/c.conf}}":                  `kubernetes.agentKubeconfigs: "coredns" is not a node agent`,
		"kubernetes: {agentKubeconfigs: {kube-router: etc/kr.conf}}":              `kubernetes.agentKubeconfigs.kube-router: "etc/kr.conf" is not an absolute path`,
		"kubernetes: {agents: pods, agentKubeconfigs: {kube-proxy: /etc/k.conf}}": "kubernetes.agentKubeconfigs.kube-proxy: is for agents run as services",
	} {
		if _, err := ParseConfig([]byte("kind: beta\n" + file + "\n" + commonFile)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}
