package vsphere

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/lab"
)

// The shipped lab file is the researcher's fleet: it must load, and hold
// 5 etcd, 3 control-plane and 3 worker hosts, each with its VM, behind a
// virtual address.
func TestShippedFleetFile(t *testing.T) {
	c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", "vsphere-fleet.yaml"))
	if err != nil {
		t.Fatalf("loading testdata/labs/vsphere-fleet.yaml: %v", err)
	}
	if c.Kind != Kind || !c.Lab {
		t.Errorf("kind %q lab %v, want vsphere and true", c.Kind, c.Lab)
	}
	count := map[lab.Role]int{}
	for _, h := range c.Hosts {
		if len(h.Roles) != 1 {
			t.Errorf("host %s has roles %v, want one", h.Name, h.Roles)
		}
		for _, r := range h.Roles {
			count[r]++
		}
		if h.VM == "" {
			t.Errorf("host %s has no vm", h.Name)
		}
	}
	if count[lab.RoleEtcd] != 5 || count[lab.RoleControlPlane] != 3 || count[lab.RoleWorker] != 3 {
		t.Errorf("roles %v, want 5 etcd, 3 control-plane, 3 worker", count)
	}
	if _, err := netip.ParseAddr(c.Network.VirtualIP); err != nil {
		t.Errorf("network.virtualIP %q: %v", c.Network.VirtualIP, err)
	}
	if sectionOf(c).ColdSnapshot == "" || sectionOf(c).CredentialsFile == "" {
		t.Errorf("vsphere block %+v lacks the cold snapshot or the credentials file", sectionOf(c))
	}
	var fleet []*fleetVM
	for _, h := range c.Hosts {
		fleet = append(fleet, &fleetVM{host: h})
	}
	groups := bootGroups(fleet)
	if len(groups) != 3 || groups[0].role != lab.RoleEtcd || len(groups[0].vms) != 5 ||
		groups[1].role != lab.RoleControlPlane || len(groups[1].vms) != 3 || groups[2].role != lab.RoleWorker || len(groups[2].vms) != 3 {
		t.Errorf("boot groups of the shipped fleet are not etcd(5), control-plane(3), worker(3)")
	}
}
