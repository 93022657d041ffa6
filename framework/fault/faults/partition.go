package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindPartition is the kind of Partition faults.
const KindPartition = "partition"

// ClassPartition is management-network traffic dropped between hosts.
const ClassPartition fault.Class = "partition"

type partitionParams struct {
	// Groups are lists of selectors (see groups.go).
	Groups [][]string `json:"groups"`
	// OneWay drops only what the first group sends to the others.
	OneWay bool   `json:"oneWay,omitempty"`
	Tag    string `json:"tag"`
}

func (p partitionParams) check() error {
	if err := checkGroups(p.Groups); err != nil {
		return err
	}
	return checkTag(p.Tag)
}

// Partition drops management-network traffic between every two groups of
// hosts, in both directions, with iptables rules in a chain of the fault's
// own on each host involved.
func Partition(groups ...[]string) fault.Fault {
	return &partition{p: partitionParams{Groups: groups, Tag: newTag()}}
}

// OneWayPartition drops only what the first group sends to the others. TCP
// needs both directions, so connections either way stall; datagrams from
// the other groups still arrive.
func OneWayPartition(from []string, to ...[]string) fault.Fault {
	return &partition{p: partitionParams{Groups: append([][]string{from}, to...), OneWay: true, Tag: newTag()}}
}

// Isolate cuts host from every other host of the lab.
func Isolate(host string) fault.Fault { return Partition([]string{host}, []string{selectorRest}) }

// HostFromControlPlane cuts host from every control-plane host (and the
// virtual address in front of them).
func HostFromControlPlane(host string) fault.Fault {
	return Partition([]string{host}, []string{"role:" + string(lab.RoleControlPlane)})
}

// EtcdSplit splits the etcd hosts, in config order, into the first `first`
// and the rest (EtcdSplit(3) on five members is "etcd 3|2").
func EtcdSplit(first int) fault.Fault {
	return Partition([]string{"role:etcd[:" + strconv.Itoa(first) + "]"}, []string{"role:etcd[" + strconv.Itoa(first) + ":]"})
}

// EtcdLeaderFromPeers cuts etcd's leader (found at inject time) from the
// other members.
func EtcdLeaderFromPeers() fault.Fault {
	return Partition([]string{selectorEtcdLeader}, []string{"role:etcd"})
}

// APIServerFromEtcd cuts a control-plane host from every etcd host.
func APIServerFromEtcd(host string) fault.Fault {
	return Partition([]string{host}, []string{"role:etcd"})
}

// RackFromRest cuts the hosts of a rack from every other host.
func RackFromRest(rack string) fault.Fault {
	return Partition([]string{"rack:" + rack}, []string{selectorRest})
}

type partition struct {
	p   partitionParams
	inj struct {
		groups [][]lab.Host
	}
}

func (f *partition) Kind() string            { return KindPartition }
func (f *partition) Class() fault.Class      { return ClassPartition }
func (f *partition) Params() json.RawMessage { return mustJSON(f.p) }
func (f *partition) chain() string           { return chainName(f.p.Tag) }

func (f *partition) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("partition: %w", err)
	}
	groups, err := resolveGroups(ctx, l, f.p.Groups)
	if err != nil {
		return fmt.Errorf("partition %v: %w", f.p.Groups, err)
	}
	f.inj.groups = groups
	vipAt, err := virtualAddressGroup(ctx, l, groups)
	if err != nil {
		return fmt.Errorf("partition %v: %w", f.p.Groups, err)
	}
	for _, hr := range partitionRules(l, groups, vipAt, f.p.OneWay, f.chain()) {
		if _, err := run(ctx, hr.host, hr.rules.installScript(hr.host.Address())); err != nil {
			return fmt.Errorf("partition %v: %w", f.p.Groups, err)
		}
		crashpoint.Reach("partition/inject/host")
	}
	return nil
}

// Heal removes the fault's chain from every host of the lab: who was in
// which group (the etcd leader, say) was found at inject time and is not
// in the parameters.
func (f *partition) Heal(ctx context.Context, l lab.Lab) error {
	if err := removeChainEverywhere(ctx, l, f.chain(), "partition/heal/host"); err != nil {
		return fmt.Errorf("healing partition %v: %w", f.p.Groups, err)
	}
	f.inj.groups = nil
	return nil
}

// Probe tries a TCP connection from a host of the first group to the SSH
// port of a host of the second: the partition holds when it times out.
// A refusal or a connection means packets got through.
func (f *partition) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	groups := f.inj.groups
	if groups == nil {
		var err error
		if groups, err = resolveGroups(ctx, l, f.p.Groups); err != nil {
			return fault.Effect{}, err
		}
	}
	from, to := groups[0][0], groups[1][0]
	port := sshPort(l)
	res, err := tcpConnect(ctx, from, to.Address(), port, connectProbeTimeout)
	if err != nil {
		return fault.Effect{}, err
	}
	return connectEffect(res, fmt.Sprintf("TCP from %s to %s (%s:%d): %s", from.Name(), to.Name(), to.Address(), port, res)), nil
}

// virtualAddressGroup is the index of the group the lab's virtual address
// belongs to: the group holding every control-plane host, else the group of
// the control-plane host that holds the address now (asked on each, at
// inject time; if it moves during the fault the rules do not follow). -1
// when the lab has no virtual address or no involved host holds it.
func virtualAddressGroup(ctx context.Context, l lab.Lab, groups [][]lab.Host) (int, error) {
	vip := l.Config().Network.VirtualIP
	if vip == "" {
		return -1, nil
	}
	cps := lab.HostsWithRole(l, lab.RoleControlPlane)
	for i, g := range groups {
		if len(cps) > 0 && containsAll(g, cps) {
			return i, nil
		}
	}
	for i, g := range groups {
		for _, h := range g {
			if !h.HasRole(lab.RoleControlPlane) {
				continue
			}
			out, err := run(ctx, h, "ip -o -4 addr show")
			if err != nil {
				return -1, err
			}
			if _, err := interfaceWithAddress(out, vip); err == nil {
				return i, nil
			}
		}
	}
	return -1, nil
}

func containsAll(group, hosts []lab.Host) bool {
	in := map[string]bool{}
	for _, h := range group {
		in[h.Name()] = true
	}
	for _, h := range hosts {
		if !in[h.Name()] {
			return false
		}
	}
	return true
}

type hostRules struct {
	host  lab.Host
	rules chainRules
}

// partitionRules are the rules each involved host gets. A host drops what
// it receives from, and what it sends to, the addresses of every group it
// is cut from; one-way, the first group only drops what it sends and the
// others only what they receive from it.
// The virtual address goes with the group at index vipAt (-1: none).
func partitionRules(l lab.Lab, groups [][]lab.Host, vipAt int, oneWay bool, chain string) []hostRules {
	addrs := make([][]string, len(groups))
	for i, g := range groups {
		for _, h := range g {
			addrs[i] = append(addrs[i], h.Address())
		}
		if i == vipAt {
			addrs[i] = append(addrs[i], l.Config().Network.VirtualIP)
		}
	}
	var out []hostRules
	for i, g := range groups {
		for _, h := range g {
			var rules []string
			for j := range groups {
				if j == i || (oneWay && i != 0 && j != 0) {
					continue
				}
				for _, a := range addrs[j] {
					if !oneWay || i != 0 {
						rules = append(rules, "-s "+a+" -j DROP")
					}
					if !oneWay || i == 0 {
						rules = append(rules, "-d "+a+" -j DROP")
					}
				}
			}
			hooks := []string{"INPUT", "OUTPUT"}
			out = append(out, hostRules{host: h, rules: chainRules{chain: chain, hooks: hooks, rules: rules}})
		}
	}
	return out
}

func init() {
	register(KindPartition, func(p partitionParams) fault.Fault { return &partition{p: p} })
}
