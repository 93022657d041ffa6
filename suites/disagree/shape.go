package disagree

import (
	"errors"
	"fmt"
	"slices"

	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
)

// Lab11 is the shape every scenario of the paper needs, for the engine to
// check before it touches the lab (label topology:lab11).
var Lab11 = scenario.Shape{Name: "lab11", Check: func(l lab.Lab) error { return CheckShape(l.Config()) }}

// Shape is the topology the paper's scenarios name hosts of: lab11's five
// etcd members, three control-plane hosts and three workers. A lab of any
// name with these hosts and roles will do (a copy of lab11 on other
// subnets, the vSphere fleet).
var Shape = map[string]lab.Role{
	"etcd1": lab.RoleEtcd, "etcd2": lab.RoleEtcd, "etcd3": lab.RoleEtcd, "etcd4": lab.RoleEtcd, "etcd5": lab.RoleEtcd,
	"cp1": lab.RoleControlPlane, "cp2": lab.RoleControlPlane, "cp3": lab.RoleControlPlane,
	"worker1": lab.RoleWorker, "worker2": lab.RoleWorker, "worker3": lab.RoleWorker,
}

// CheckShape says what c lacks of Shape, naming every missing host or
// role, and nil when c has lab11's shape.
func CheckShape(c *lab.Config) error {
	if c == nil {
		return errors.New("the lab has no config to check its hosts against lab11's shape")
	}
	var errs []error
	for _, name := range sortedHosts() {
		role := Shape[name]
		h, ok := c.HostConfig(name)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("no host %s (role %s)", name, role))
		case !slices.Contains(h.Roles, role):
			errs = append(errs, fmt.Errorf("host %s has roles %v, not %s", name, h.Roles, role))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab %s does not have lab11's shape (5 etcd, 3 control-plane, 3 workers): %w", c.Name, err)
	}
	return nil
}

func sortedHosts() []string {
	var out []string
	for n := range Shape {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
