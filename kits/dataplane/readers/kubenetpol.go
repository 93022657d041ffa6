package readers

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/framework/evidence/source/iptables"
	"github.com/faultline/faultline/framework/evidence/source/nft"
)

// The reader of what sigs.k8s.io/kube-network-policies (v0.8.0) put in
// the kernel, from `nft -j list table inet kube-network-policies` (or
// `nft -j list ruleset`). It keeps no policy there: its table holds sets
// podips-v4 and podips-v6 (the node's pods some NetworkPolicy selects)
// and rules that queue those pods' new connections (nfqueue 100 unless
// configured) to its process, which allows or drops each against the
// policies it holds in memory. With admin network policies enabled it
// queues every new connection and keeps no sets. So the value says which
// pods are handed over and how (Decided userspace), never what is allowed.

const kubeNetworkPoliciesTable = "kube-network-policies"

// PolicyRulesFromKubeNetworkPolicies reads a kube-network-policies table
// from an nft JSON listing. A listing without the table (or no output at
// all) is NothingProgrammed; output that is not nft's JSON, or queue
// rules that disagree on their queue, is an error. A table without any
// queue rule has a nil Queue: nothing is handed over, nothing enforced.
func PolicyRulesFromKubeNetworkPolicies(out string) (dataplane.PolicyRulesValue, error) {
	v := dataplane.PolicyRulesValue{Agent: "kube-network-policies", Decided: dataplane.DecidedInUserspace, Targets: []dataplane.PolicyTarget{}}
	if strings.TrimSpace(out) == "" {
		v.NothingProgrammed = true
		return v, nil
	}
	rs, err := nft.Parse(out)
	if err != nil {
		return dataplane.PolicyRulesValue{}, err
	}
	t := rs.Tables[nft.TableID{Family: "inet", Name: kubeNetworkPoliciesTable}]
	if t == nil {
		v.NothingProgrammed = true
		return v, nil
	}
	var ips []string
	for _, name := range []string{"podips-v4", "podips-v6"} {
		s := t.Sets[name]
		if s == nil {
			continue
		}
		elems, err := s.SetElems()
		if err != nil {
			return dataplane.PolicyRulesValue{}, err
		}
		ips = append(ips, elems...)
	}
	sort.Strings(ips)
	for _, ip := range ips {
		v.Targets = append(v.Targets, dataplane.PolicyTarget{PodIP: ip, Ingress: dataplane.PolicyDirection{Policies: []dataplane.AppliedPolicy{}}, Egress: dataplane.PolicyDirection{Policies: []dataplane.AppliedPolicy{}}})
	}

	chains := make([]string, 0, len(t.Chains))
	for name := range t.Chains {
		chains = append(chains, name)
	}
	sort.Strings(chains)
	for _, name := range chains {
		for _, r := range t.Chains[name].Rules {
			q, ok, err := nftQueue(r)
			if err != nil {
				return dataplane.PolicyRulesValue{}, fmt.Errorf("chain %s: %w", name, err)
			}
			if !ok {
				continue
			}
			if v.Queue == nil {
				v.Queue = &dataplane.PolicyQueue{Num: q.Num, FailOpen: q.FailOpen}
			} else if v.Queue.Num != q.Num || v.Queue.FailOpen != q.FailOpen {
				return dataplane.PolicyRulesValue{}, fmt.Errorf("chain %s queues to %d (fail open %t), another rule to %d (fail open %t)", name, q.Num, q.FailOpen, v.Queue.Num, v.Queue.FailOpen)
			}
			if !nftMatchesSet(r) {
				v.Queue.All = true
			}
		}
	}
	return v, nil
}

// nftQueue reads a rule's queue statement: {"queue": {"num": 100,
// "flags": "bypass"}} (flags a string for one flag, a list for more;
// {"queue": null} for queue 0 without flags).
func nftQueue(r nft.Rule) (dataplane.PolicyQueue, bool, error) {
	for _, e := range r.Expr {
		raw, ok := e["queue"]
		if !ok {
			continue
		}
		var q struct {
			Num   *json.RawMessage `json:"num"`
			Flags json.RawMessage  `json:"flags"`
		}
		if string(raw) != "null" {
			if err := json.Unmarshal(raw, &q); err != nil {
				return dataplane.PolicyQueue{}, false, fmt.Errorf("a queue statement nft does not write: %s", iptables.Truncate(string(raw), 80))
			}
		}
		out := dataplane.PolicyQueue{}
		if q.Num != nil {
			var n int
			if err := json.Unmarshal(*q.Num, &n); err != nil {
				return dataplane.PolicyQueue{}, false, fmt.Errorf("a queue number that is not one: %s", iptables.Truncate(string(*q.Num), 80))
			}
			out.Num = n
		}
		var flags []string
		if len(q.Flags) > 0 {
			var one string
			if json.Unmarshal(q.Flags, &one) == nil {
				flags = []string{one}
			} else if err := json.Unmarshal(q.Flags, &flags); err != nil {
				return dataplane.PolicyQueue{}, false, fmt.Errorf("queue flags that are neither a string nor a list: %s", iptables.Truncate(string(q.Flags), 80))
			}
		}
		for _, f := range flags {
			if f == "bypass" {
				out.FailOpen = true
			}
		}
		return out, true, nil
	}
	return dataplane.PolicyQueue{}, false, nil
}

// nftMatchesSet reports whether one of the rule's matches looks its value
// up in a set ("right": "@name").
func nftMatchesSet(r nft.Rule) bool {
	for _, e := range r.Expr {
		raw, ok := e["match"]
		if !ok {
			continue
		}
		var m struct {
			Right json.RawMessage `json:"right"`
		}
		var s string
		if json.Unmarshal(raw, &m) == nil && json.Unmarshal(m.Right, &s) == nil && strings.HasPrefix(s, "@") {
			return true
		}
	}
	return false
}
