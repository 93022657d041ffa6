package faults

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/faultline/faultline/lab"
)

// A selector names hosts of a lab:
//
//	worker1            the host of that name
//	role:etcd          every host with the role, in config order
//	role:etcd[0:3]     a slice of those (Go slice bounds; either may be empty)
//	rack:r1            every host of the rack
//	etcd-leader        etcd's raft leader when the fault is injected
//	rest               every host no other group names
//
// A group is a list of selectors; a host named by an earlier group is left
// out of the later ones, so [[etcd-leader], [role:etcd]] is "the leader
// against its peers".
const (
	selectorRest       = "rest"
	selectorEtcdLeader = "etcd-leader"
)

var (
	roleSelector = regexp.MustCompile(`^role:([a-z-]+)(?:\[(\d*):(\d*)\])?$`)
	rackSelector = regexp.MustCompile(`^rack:(.+)$`)
	hostSelector = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

func checkSelector(s string) error {
	switch {
	case s == selectorRest || s == selectorEtcdLeader:
		return nil
	case strings.HasPrefix(s, "role:"):
		m := roleSelector.FindStringSubmatch(s)
		if m == nil {
			return fmt.Errorf("selector %q: want role:<role> or role:<role>[from:to]", s)
		}
		switch lab.Role(m[1]) {
		case lab.RoleEtcd, lab.RoleControlPlane, lab.RoleWorker:
		default:
			return fmt.Errorf("selector %q: %q is not a role (etcd, control-plane, worker)", s, m[1])
		}
		if m[2] != "" && m[3] != "" {
			from, _ := strconv.Atoi(m[2])
			to, _ := strconv.Atoi(m[3])
			if from >= to {
				return fmt.Errorf("selector %q: empty slice", s)
			}
		}
		return nil
	case rackSelector.MatchString(s):
		return nil
	case hostSelector.MatchString(s):
		return nil
	}
	return fmt.Errorf("selector %q names no host, role:, rack:, etcd-leader or rest", s)
}

func checkGroups(groups [][]string) error {
	var errs []error
	if len(groups) < 2 {
		errs = append(errs, fmt.Errorf("%d group(s): a partition needs at least two", len(groups)))
	}
	rests := 0
	for i, g := range groups {
		if len(g) == 0 {
			errs = append(errs, fmt.Errorf("group %d is empty", i))
		}
		for _, s := range g {
			if err := checkSelector(s); err != nil {
				errs = append(errs, fmt.Errorf("group %d: %w", i, err))
			}
			if s == selectorRest {
				rests++
			}
		}
	}
	if rests > 1 {
		errs = append(errs, errors.New("rest is named more than once"))
	}
	return errors.Join(errs...)
}

// resolveGroups turns groups of selectors into groups of hosts. Every
// selector must name at least one host and every group must keep at least
// one host after earlier groups took theirs; otherwise the error names the
// selector or the group.
func resolveGroups(ctx context.Context, l lab.Lab, groups [][]string) ([][]lab.Host, error) {
	taken := map[string]bool{}
	out := make([][]lab.Host, len(groups))
	restAt := -1
	for i, g := range groups {
		for _, s := range g {
			if s == selectorRest {
				restAt = i
				continue
			}
			hosts, err := resolveSelector(ctx, l, s)
			if err != nil {
				return nil, fmt.Errorf("group %d: %w", i, err)
			}
			for _, h := range hosts {
				if !taken[h.Name()] {
					taken[h.Name()] = true
					out[i] = append(out[i], h)
				}
			}
		}
	}
	if restAt >= 0 {
		for _, h := range l.Hosts() {
			if !taken[h.Name()] {
				taken[h.Name()] = true
				out[restAt] = append(out[restAt], h)
			}
		}
	}
	for i, g := range out {
		if len(g) == 0 {
			return nil, fmt.Errorf("group %d %v names no host that an earlier group did not take", i, groups[i])
		}
	}
	return out, nil
}

func resolveSelector(ctx context.Context, l lab.Lab, s string) ([]lab.Host, error) {
	if s == selectorEtcdLeader {
		h, err := etcdLeaderHost(ctx, l)
		if err != nil {
			return nil, err
		}
		return []lab.Host{h}, nil
	}
	if m := roleSelector.FindStringSubmatch(s); m != nil {
		hosts := lab.HostsWithRole(l, lab.Role(m[1]))
		if len(hosts) == 0 {
			return nil, fmt.Errorf("selector %q: the lab has no %s host", s, m[1])
		}
		if m[0] == "role:"+m[1] {
			return hosts, nil
		}
		from, to := 0, len(hosts)
		if m[2] != "" {
			from, _ = strconv.Atoi(m[2])
		}
		if m[3] != "" {
			to, _ = strconv.Atoi(m[3])
		}
		if from >= to || to > len(hosts) {
			return nil, fmt.Errorf("selector %q: the lab has %d %s hosts", s, len(hosts), m[1])
		}
		return hosts[from:to], nil
	}
	if m := rackSelector.FindStringSubmatch(s); m != nil {
		var hosts []lab.Host
		for _, hc := range l.Config().Hosts {
			if hc.Rack == m[1] {
				h, err := hostByName(l, hc.Name)
				if err != nil {
					return nil, err
				}
				hosts = append(hosts, h)
			}
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("selector %q: the lab has no host on rack %q", s, m[1])
		}
		return hosts, nil
	}
	h, err := hostByName(l, s)
	if err != nil {
		return nil, err
	}
	return []lab.Host{h}, nil
}

// groupAddresses are the addresses traffic of a group's hosts carries: the
// hosts' management addresses, and the lab's virtual address when every
// control-plane host is in the group (whichever of them holds it).
func groupAddresses(l lab.Lab, group []lab.Host) []string {
	var addrs []string
	in := map[string]bool{}
	for _, h := range group {
		addrs = append(addrs, h.Address())
		in[h.Name()] = true
	}
	vip := l.Config().Network.VirtualIP
	cps := lab.HostsWithRole(l, lab.RoleControlPlane)
	if vip == "" || len(cps) == 0 {
		return addrs
	}
	for _, h := range cps {
		if !in[h.Name()] {
			return addrs
		}
	}
	return append(addrs, vip)
}
