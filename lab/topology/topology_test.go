package topology_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
	// The shipped lab files are of every kind: read through the registry.
	_ "github.com/faultline/faultline/lab/backends"
	"github.com/faultline/faultline/lab/topology"
)

func load(t *testing.T, name string) *lab.Config {
	t.Helper()
	c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every shipped lab the suites run on lab11's scenarios with has its
// shape, whatever its kind.
func TestTheShippedLab11FilesHaveTheShape(t *testing.T) {
	for _, name := range []string{"lab11", "lab11b", "lab11-pods", "lab11s", "lab11s-pods", "lab11s-ssh", "lab11s-pods-ssh", "vsphere-fleet"} {
		if err := topology.Lab11.Check(load(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestALabWithoutTheShapeIsToldWhatItLacks(t *testing.T) {
	pair := load(t, "pair")
	err := topology.Lab11.Check(pair)
	if err == nil || !strings.Contains(err.Error(), "no host etcd5 (role etcd)") || !strings.Contains(err.Error(), "lab "+pair.Name+" does not have lab11's shape (5 etcd, 3 control-plane, 3 workers)") {
		t.Errorf("pair: err %v, want one naming the lab, the shape and the missing etcd5", err)
	}
	c := load(t, "lab11")
	for i, h := range c.Hosts {
		if h.Name == "worker3" {
			c.Hosts[i].Roles = []lab.Role{lab.RoleEtcd}
		}
	}
	if err := topology.Lab11.Check(c); err == nil || !strings.Contains(err.Error(), "host worker3 has roles [etcd], not worker") {
		t.Errorf("a worker without its role: err %v", err)
	}
	if err := topology.Lab11.Check(nil); err == nil || !strings.Contains(err.Error(), "lab11's shape") {
		t.Errorf("no config: err %v, want one naming the shape", err)
	}
}
