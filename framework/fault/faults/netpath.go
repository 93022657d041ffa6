package faults

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/faultline/faultline/lab"
)

// targetAddresses resolves selectors to the addresses their hosts' traffic
// carries (the virtual address too when it takes the whole control plane).
func targetAddresses(ctx context.Context, l lab.Lab, self lab.Host, selectors []string) ([]string, []lab.Host, error) {
	if len(selectors) == 0 {
		return nil, nil, nil
	}
	groups, err := resolveGroups(ctx, l, [][]string{{self.Name()}, selectors})
	if err != nil {
		return nil, nil, err
	}
	return groupAddresses(l, groups[1]), groups[1], nil
}

var routeDev = regexp.MustCompile(`\bdev (\S+)`)

// egressInterface is the interface h sends traffic to addr by: the lab's
// management interface when it names one and addr is empty, else what the
// host's routing table says.
func egressInterface(ctx context.Context, l lab.Lab, h lab.Host, addr string) (string, error) {
	if addr == "" {
		if ni, ok := l.(lab.NetworkInterfaces); ok {
			return ni.ManagementInterface(h.Name())
		}
		out, err := run(ctx, h, "ip -o -4 addr show")
		if err != nil {
			return "", err
		}
		return interfaceWithAddress(out, h.Address())
	}
	out, err := run(ctx, h, "ip -o route get "+addr)
	if err != nil {
		return "", err
	}
	m := routeDev.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s: no interface in route to %s: %q", h.Name(), addr, out)
	}
	return m[1], nil
}

// interfaceWithAddress finds, in `ip -o -4 addr show` output, the
// interface holding addr.
func interfaceWithAddress(listing, addr string) (string, error) {
	for _, line := range strings.Split(listing, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "inet" && strings.HasPrefix(f[i+1], addr+"/") {
				return strings.TrimSuffix(f[1], ":"), nil
			}
		}
	}
	return "", fmt.Errorf("no interface holds %s", addr)
}
