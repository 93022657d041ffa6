package backends_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
	"github.com/faultline/faultline/lab/local"
)

func TestEveryBackendIsRegistered(t *testing.T) {
	if got, want := lab.Kinds(), []string{"local", "proxmox", "static", "vsphere"}; !slices.Equal(got, want) {
		t.Errorf("registered kinds %v, want %v", got, want)
	}
}

// Every shipped lab file reads and validates through its backend's
// registration; no lab is opened.
func TestEveryShippedLabFileValidates(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "labs", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no lab files: %v", err)
	}
	kinds := map[string]bool{}
	for _, f := range files {
		c, err := lab.LoadConfig(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: validates once, not twice: %v", f, err)
		}
		kinds[c.Kind] = true
	}
	for _, k := range lab.Kinds() {
		if !kinds[k] {
			t.Errorf("no shipped lab file of kind %s", k)
		}
	}
}

func TestOnlySSHLabsTakeARuntimeEndpoint(t *testing.T) {
	for _, f := range []string{"pair.yaml", "static-example.yaml"} {
		c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", f))
		if err != nil {
			t.Fatal(err)
		}
		c.Kubernetes.RuntimeEndpoint = "unix:///run/containerd/containerd.sock"
		err = c.Validate()
		refused := err != nil && strings.Contains(err.Error(), "kubernetes.runtimeEndpoint: is not for a local lab")
		if local := c.Kind == "local"; local != refused || (!local && err != nil) {
			t.Errorf("%s lab with a runtimeEndpoint: %v", c.Kind, err)
		}
	}
}

// Every shipped local topology can be up beside every other (their names,
// networks and kernel objects apart), and labs of other kinds are no
// business of the local lab's check, whatever their networks.
func TestShippedLabsCanAllBeUpAtOnce(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "labs", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var configs []*lab.Config
	local := 0
	for _, f := range files {
		c, err := lab.LoadConfig(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Kind == "local" {
			local++
		}
		configs = append(configs, c)
	}
	if local < 4 {
		t.Fatalf("found %d local lab files", local)
	}
	if err := lab.CheckCoexist(configs...); err != nil {
		t.Error(err)
	}
	// The static example on lab11's management network is still no
	// conflict: its hosts are elsewhere.
	lab11, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", "lab11.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	static, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", "static-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	static.Network.Management = lab11.Network.Management
	if err := lab.CheckCoexist(lab11, static); err != nil {
		t.Errorf("a local and a static lab: %v", err)
	}
}

// The local lab runs kube-router and says so; an SSH lab's file says
// which agent its cluster runs, or none.
func TestPolicyAgentOfTheShippedLabs(t *testing.T) {
	for f, want := range map[string]string{"lab11.yaml": "kube-router", "static-example.yaml": "calico", "proxmox-pair.yaml": ""} {
		c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", f))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Kubernetes.PolicyAgent; got != want {
			t.Errorf("%s: policyAgent %q, want %q", f, got, want)
		}
	}
	c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", "pair.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c.Kubernetes.PolicyAgent = "calico"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `kubernetes.policyAgent: "calico" is not for a local lab`) {
		t.Errorf("a local lab naming calico: %v, want it refused", err)
	}
	c.Kubernetes.PolicyAgent = ""
	c.Kubernetes.AgentKubeconfigs = map[string]string{lab.ServiceKubeProxy: "/etc/kube-proxy.conf"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "kubernetes.agentKubeconfigs: is not for a local lab") {
		t.Errorf("a local lab naming its agents' kubeconfigs: %v, want it refused", err)
	}
}

// lab11s-ssh.yaml and lab11s-pods-ssh.yaml describe the local labs
// lab11s and lab11s-pods as the local lab makes them (with the default
// state root): their hosts, their sudo login and keys, each node's kubelet
// root, their storage and what it emulates, and how their node agents run.
func TestStaticFileOverTheLocalLabMatchesIt(t *testing.T) {
	t.Setenv("FAULTLINE_STATE_DIR", "/var/lib/faultline")
	for over, under := range map[string]string{"lab11s-ssh.yaml": "lab11s.yaml", "lab11s-pods-ssh.yaml": "lab11s-pods.yaml"} {
		t.Run(over, func(t *testing.T) { staticMatchesLocal(t, over, under) })
	}
}

func staticMatchesLocal(t *testing.T, overFile, underFile string) {
	read := func(f string) *lab.Config {
		c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", f))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	over, under := read(overFile), read(underFile)
	ll, err := local.New(under)
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	if over.Kind != "static" || over.Network.Management != under.Network.Management || over.Network.VirtualIP != under.Network.VirtualIP {
		t.Errorf("kind %s, network %+v; want static over %+v", over.Kind, over.Network, under.Network)
	}
	if len(over.Hosts) != len(under.Hosts) {
		t.Fatalf("%d hosts, the local lab has %d", len(over.Hosts), len(under.Hosts))
	}
	for i, h := range over.Hosts {
		u := under.Hosts[i]
		if h.Name != u.Name || h.Address != u.Address || !slices.Equal(h.Roles, u.Roles) {
			t.Errorf("host %d: %+v, the local lab's %+v", i, h, u)
		}
		if slices.Contains(h.Roles, lab.RoleWorker) && h.KubeletRootDir != ll.KubeletRootDir(h.Name) {
			t.Errorf("%s: kubeletRootDir %s, the local lab's %s", h.Name, h.KubeletRootDir, ll.KubeletRootDir(h.Name))
		}
		for _, agent := range []string{lab.ServiceKubeProxy, lab.ServicePolicyAgent} {
			if !slices.Contains(h.Roles, lab.RoleWorker) || under.Kubernetes.AgentsLayout() == lab.AgentsAsPods {
				continue
			}
			want, err := ll.AgentKubeconfig(h.Name, agent)
			if got := strings.ReplaceAll(over.Kubernetes.AgentKubeconfigs[agent], "{host}", h.Name); err != nil || got != want {
				t.Errorf("%s: %s's kubeconfig %q, the local lab's %q (%v)", h.Name, agent, got, want, err)
			}
		}
	}
	if over.SSH.User != local.SudoUserName(under.Name) || over.SSH.KnownHosts != ll.KnownHostsFile() || !over.SSH.Sudo ||
		over.SSH.IdentityFile != filepath.Join(filepath.Dir(ll.SSHKeyFile()), "users", over.SSH.User, "id_ed25519") {
		t.Errorf("ssh %+v: not the local lab's sudo login (%s, known hosts %s)", over.SSH, local.SudoUserName(under.Name), ll.KnownHostsFile())
	}
	info, err := ll.StorageInfo()
	if err != nil {
		t.Fatal(err)
	}
	s := over.Storage
	if s.SharedClass != info.SharedClass || s.BlockClass != info.BlockClass || s.BlockMMPClass != info.BlockMMPClass || s.BlockFencedClass != info.BlockFencedClass ||
		!slices.Equal(s.History.Endpoints, info.HistoryEndpoints) || !slices.Equal(s.Emulated, info.Emulated) {
		t.Errorf("storage %+v, the local lab's %+v", s, info)
	}
	if over.Kubernetes.PolicyAgent != under.Kubernetes.PolicyAgent || over.Kubernetes.TimerProfile != under.Kubernetes.TimerProfile ||
		over.Kubernetes.AgentsLayout() != under.Kubernetes.AgentsLayout() {
		t.Errorf("kubernetes %+v, the local lab's %+v", over.Kubernetes, under.Kubernetes)
	}
}

// lab11s-ssh.yaml's and lab11s-pods-ssh.yaml's etcd client is their local
// lab's etcd admin certificate and one endpoint per etcd host.
func TestStaticFileOverTheLocalLabReachesItsEtcd(t *testing.T) {
	for file, under := range map[string]string{"lab11s-ssh.yaml": "lab11s", "lab11s-pods-ssh.yaml": "lab11s-pods"} {
		c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", file))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, h := range c.Hosts {
			if slices.Contains(h.Roles, lab.RoleEtcd) {
				want = append(want, "https://"+h.Address+":2379")
			}
		}
		if !slices.Equal(c.Etcd.Endpoints, want) || !strings.HasPrefix(c.Etcd.CertFile, "/var/lib/faultline/"+under+"/pki/etcd-admin") {
			t.Errorf("%s: etcd %+v, want %v and %s's etcd admin certificate", file, c.Etcd, want, under)
		}
	}
}
