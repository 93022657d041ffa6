// Package topology names the lab topologies more than one suite runs on,
// by the hosts and roles their scenarios name. A topology is a fact about
// the lab, not about a paper: a lab of any name and kind with its hosts
// and roles will do (a copy of lab11 on other subnets, an SSH lab, the
// vSphere fleet).
package topology

import (
	"errors"
	"fmt"
	"slices"

	"github.com/faultline/faultline/lab"
)

// Hosts is a topology: the hosts a suite's faults and fixtures name, each
// with the role it must have.
type Hosts struct {
	// Name names the topology, as a scenario's topology: label does
	// ("lab11").
	Name string
	// Summary says the topology in a few words, for the error a lab
	// without it gets.
	Summary string
	// Roles is every host the topology names and the role it must have.
	Roles map[string]lab.Role
}

// Lab11 is the programme's standard lab: five etcd members, three
// control-plane hosts and three workers (testdata/labs/lab11.yaml).
// Papers 1 and 2 run on it, and paper 3's lab11s is it plus a storage
// host.
var Lab11 = Hosts{
	Name:    "lab11",
	Summary: "5 etcd, 3 control-plane, 3 workers",
	Roles: map[string]lab.Role{
		"etcd1": lab.RoleEtcd, "etcd2": lab.RoleEtcd, "etcd3": lab.RoleEtcd, "etcd4": lab.RoleEtcd, "etcd5": lab.RoleEtcd,
		"cp1": lab.RoleControlPlane, "cp2": lab.RoleControlPlane, "cp3": lab.RoleControlPlane,
		"worker1": lab.RoleWorker, "worker2": lab.RoleWorker, "worker3": lab.RoleWorker,
	},
}

// Check says what c lacks of the topology, naming every missing host or
// role, and nil when c has it.
func (t Hosts) Check(c *lab.Config) error {
	if c == nil {
		return fmt.Errorf("the lab has no config to check its hosts against %s's shape", t.Name)
	}
	var errs []error
	for _, name := range t.hosts() {
		role := t.Roles[name]
		h, ok := c.HostConfig(name)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("no host %s (role %s)", name, role))
		case !slices.Contains(h.Roles, role):
			errs = append(errs, fmt.Errorf("host %s has roles %v, not %s", name, h.Roles, role))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab %s does not have %s's shape (%s): %w", c.Name, t.Name, t.Summary, err)
	}
	return nil
}

// CheckLab checks l's config, for a scenario.Shape's Check.
func (t Hosts) CheckLab(l lab.Lab) error { return t.Check(l.Config()) }

// hosts are the topology's host names, sorted, so that a lab's errors
// come in one order.
func (t Hosts) hosts() []string {
	out := make([]string, 0, len(t.Roles))
	for n := range t.Roles {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
