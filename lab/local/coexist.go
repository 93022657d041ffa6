package local

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/layout"
)

// coexist says what keeps two local labs from being up on this machine at
// once (lab.Backend.Coexist): one name or one state dir (one lab, and one
// heal ledger); a network of one that overlaps a network of the other
// (the root namespace would route one lab's addresses to the other's
// bridge, and a run's evidence could not tell the labs' addresses apart);
// and any kernel object both would name alike (layout.KernelNames: a
// namespace, cgroup, link or iptables comment taken, killed or removed as
// the other lab's).
func coexist(a, b *lab.Config) []error {
	var errs []error
	if a.Name == b.Name {
		errs = append(errs, fmt.Errorf("both are named %s, and a local lab names its namespaces, cgroups, bridges and rules after its name", a.Name))
	}
	if a.StateDir != "" && filepath.Clean(a.StateDir) == filepath.Clean(b.StateDir) {
		errs = append(errs, fmt.Errorf("both keep their state (and heal ledger) in %s", filepath.Clean(a.StateDir)))
	}
	errs = append(errs, overlappingNetworks(a, b)...)
	if a.Name != b.Name {
		errs = append(errs, sharedKernelNames(a, b)...)
	}
	return errs
}

// network is one of a local lab's address ranges and its field.
type network struct {
	field  string
	prefix netip.Prefix
}

// networks are a local lab's address ranges.
func networks(c *lab.Config) []network {
	var out []network
	for _, f := range []struct{ field, val string }{
		{"network.management", c.Network.Management},
		{"network.pods", c.Network.Pods},
		{"network.services", c.Network.Services},
	} {
		if p, err := netip.ParsePrefix(f.val); err == nil {
			out = append(out, network{f.field, p.Masked()})
		}
	}
	return out
}

// overlappingNetworks names every pair of ranges, one of each lab, that
// overlap.
func overlappingNetworks(a, b *lab.Config) []error {
	var errs []error
	for _, na := range networks(a) {
		for _, nb := range networks(b) {
			if na.prefix.Overlaps(nb.prefix) {
				errs = append(errs, fmt.Errorf("%s's %s %s overlaps %s's %s %s: two local labs up at once share no address", a.Name, na.field, na.prefix, b.Name, nb.field, nb.prefix))
			}
		}
	}
	return errs
}

// sharedKernelNames names every kernel object both labs would name alike.
func sharedKernelNames(a, b *lab.Config) []error {
	na, nb := layout.KernelNames(a.Name, hostNames(a)), layout.KernelNames(b.Name, hostNames(b))
	var shared []string
	for name := range na {
		if _, ok := nb[name]; ok {
			shared = append(shared, name)
		}
	}
	sort.Strings(shared)
	var errs []error
	for _, name := range shared {
		errs = append(errs, fmt.Errorf("%s would be both %s and %s", name, na[name], nb[name]))
	}
	return errs
}

func hostNames(c *lab.Config) []string {
	names := make([]string, len(c.Hosts))
	for i, h := range c.Hosts {
		names[i] = h.Name
	}
	return names
}

// checkCoexistsWithUp refuses to bring up a lab that could not be up
// beside a local lab that is up already (found under lab.StateRoot():
// lab.UpLabs), naming each.
func checkCoexistsWithUp(c *lab.Config) error {
	up, err := findUp(lab.StateRoot())
	if err != nil {
		return fmt.Errorf("listing the local labs that are up: %w", err)
	}
	var errs []error
	for _, u := range up {
		if u.Config == nil || filepath.Clean(u.StateDir) == filepath.Clean(c.StateDir) {
			continue
		}
		if err := lab.CheckCoexist(c, u.Config); err != nil {
			errs = append(errs, fmt.Errorf("lab %s is up (state dir %s): %w", u.Name, u.StateDir, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w\nbring it down first, or give this lab a name and networks of its own", err)
	}
	return nil
}
