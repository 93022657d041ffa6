package readers

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/faultline/faultline/framework/evidence/source/iptables"
)

// ipSets is one `ipset save` (or `ipset list -o save`) output: every set
// by name. Hand-written for the reason iptables.go gives.
type ipSets map[string]*ipSet

type ipSet struct {
	name, Kind string // kind is the set type: "hash:ip", "hash:net", "hash:ip,port"
	members    []ipSetMember
}

// ipSetMember is one entry: its element ("10.244.1.5", "10.0.0.0/8",
// "10.244.1.5,tcp:8080") and whether it is a nomatch entry (an exception
// inside a hash:net set).
type ipSetMember struct {
	elem    string
	nomatch bool
}

// parseIPSetSave reads `ipset save` output: "create NAME TYPE OPTIONS..."
// and "add NAME ELEMENT OPTIONS..." lines. An entry of a set not created
// before it, a set created twice, or any other line is an error.
func parseIPSetSave(out string) (ipSets, error) {
	sets := ipSets{}
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case f[0] == "create" && len(f) >= 3:
			if sets[f[1]] != nil {
				return nil, fmt.Errorf("ipset save line %d: set %s created twice", n+1, f[1])
			}
			sets[f[1]] = &ipSet{name: f[1], Kind: f[2]}
		case f[0] == "add" && len(f) >= 3:
			s := sets[f[1]]
			if s == nil {
				return nil, fmt.Errorf("ipset save line %d: an entry of set %s, which is not created before it", n+1, f[1])
			}
			m := ipSetMember{elem: f[2]}
			for _, o := range f[3:] {
				if o == "nomatch" {
					m.nomatch = true
				}
			}
			s.members = append(s.members, m)
		default:
			return nil, fmt.Errorf("ipset save line %d: not a line ipset save writes: %q", n+1, iptables.Truncate(line, 80))
		}
	}
	return sets, nil
}

// contains reports whether ip is a plain member of the set (hash:ip), or
// in one of its networks and in none of its nomatch ones (hash:net).
func (s *ipSet) contains(ip string) bool {
	in := false
	for _, m := range s.members {
		host, _, _ := strings.Cut(m.elem, ",")
		if !cidrContains(host, ip) {
			continue
		}
		if m.nomatch {
			return false
		}
		in = true
	}
	return in
}

// cidrContains reports whether ip is the address or inside the network
// of elem ("10.0.0.1", "10.0.0.0/8").
func cidrContains(elem, ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	if p, err := netip.ParsePrefix(elem); err == nil {
		return p.Contains(a)
	}
	if e, err := netip.ParseAddr(elem); err == nil {
		return e == a
	}
	return false
}

// parsePolicyDumps parses the two dumps a kernel-side policy agent's rules
// are read from: iptables-save's filter table and ipset save. empty is
// true when iptables-save wrote nothing at all (nothing programmed).
func parsePolicyDumps(iptablesSave, ipsetSave string) (d iptables.Dump, sets ipSets, empty bool, err error) {
	if strings.TrimSpace(iptablesSave) == "" {
		return iptables.Dump{}, nil, true, nil
	}
	if d, err = iptables.Parse(iptablesSave); err != nil {
		return iptables.Dump{}, nil, false, err
	}
	if sets, err = parseIPSetSave(ipsetSave); err != nil {
		return iptables.Dump{}, nil, false, err
	}
	return d, sets, false, nil
}
