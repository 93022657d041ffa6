package backends_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
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
}
