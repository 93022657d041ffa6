package source

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/source/iptables"
	"github.com/faultline/faultline/framework/evidence/source/nft"
)

// The reader of what kube-proxy programmed in nftables mode (Kubernetes
// v1.36's pkg/proxy/nftables), from `nft -j list table ip kube-proxy`
// (or `nft -j list ruleset`, which holds that table where kube-proxy
// runs; `list table` of a table that does not exist fails with "No such
// file or directory", which the caller reads as nothing programmed).
//
//   - map service-ips: "<ip> . <proto> . <port> : goto <chain>" per
//     service IP and port with endpoints; cluster IPs (those in set
//     cluster-ips) go to the port's service-<h>-<ns>/<name>/<proto>/<port>
//     chain (local-<h>-... for internalTrafficPolicy Local);
//   - that chain DNATs with "numgen random mod N map { i : ip . port }",
//     or, with session affinity, picks an endpoint-<h>-...__<ip>/<port>
//     chain that DNATs "to ip:port";
//   - map no-endpoint-services: "<ip> . <proto> . <port> comment
//     "<ns>/<name>:<port>" : goto reject-chain" for a port without
//     endpoints, ": drop" for one without an endpoint on this node under
//     internalTrafficPolicy Local.
//
// h is the first 8 characters of the base32 of the SHA-256 of the rest of
// the chain's name; the reader checks it, so a chain of another layout is
// an error rather than a port.

const kubeProxyTable = "kube-proxy"

// ProxyServicesFromNFT reads every service port kube-proxy programmed in
// nftables mode from one nft JSON listing, as ProxyServicesFromIPTables
// reads the iptables mode: the same value for the same services. A
// listing without kube-proxy's table (or no output at all) is
// NothingProgrammed; output that is not nft's JSON, or a table whose
// chains and maps do not fit together, is an error.
func ProxyServicesFromNFT(out string) (evidence.ProxyBackendsValue, error) {
	none := evidence.ProxyBackendsValue{Ports: []evidence.ProxyPort{}, NothingProgrammed: true}
	if strings.TrimSpace(out) == "" {
		return none, nil
	}
	rs, err := nft.Parse(out)
	if err != nil {
		return evidence.ProxyBackendsValue{}, err
	}
	ports := map[string]*evidence.ProxyPort{}
	found := false
	for _, family := range []string{"ip", "ip6"} {
		t := rs.Tables[nft.TableID{Family: family, Name: kubeProxyTable}]
		if t == nil {
			continue
		}
		found = true
		if err := readKubeProxyTable(t, family, ports); err != nil {
			return evidence.ProxyBackendsValue{}, fmt.Errorf("table %s %s: %w", family, kubeProxyTable, err)
		}
	}
	if !found {
		return none, nil
	}
	return sortedProxyPorts(ports), nil
}

// ProxyBackendsFromNFT is ProxyServicesFromNFT kept to one service's
// ports; a listing without kube-proxy's table is an error, as in
// ProxyBackendsFromIPTables.
func ProxyBackendsFromNFT(out, namespace, name string) (evidence.ProxyBackendsValue, error) {
	v, err := ProxyServicesFromNFT(out)
	if err != nil {
		return evidence.ProxyBackendsValue{}, err
	}
	if v.NothingProgrammed {
		return evidence.ProxyBackendsValue{}, fmt.Errorf("no %s table in the nft listing (kube-proxy not in nftables mode, or not running)", kubeProxyTable)
	}
	return v.Service(namespace, name), nil
}

func readKubeProxyTable(t *nft.Table, family string, ports map[string]*evidence.ProxyPort) error {
	clusterIPs := map[string]bool{}
	if s := t.Sets["cluster-ips"]; s != nil {
		ips, err := s.SetElems()
		if err != nil {
			return err
		}
		for _, ip := range ips {
			clusterIPs[ip] = true
		}
	}
	port := func(name, ip, proto, svcPort string) *evidence.ProxyPort {
		p := ports[name]
		if p == nil {
			p = &evidence.ProxyPort{Port: name, Backends: []string{}}
			ports[name] = p
		}
		p.ClusterIP = ip
		p.ServicePort = svcPort + "/" + proto
		return p
	}
	if m := t.Sets["service-ips"]; m != nil {
		elems, err := m.MapElems()
		if err != nil {
			return err
		}
		for _, e := range elems {
			if len(e.Key) != 3 {
				return fmt.Errorf("map service-ips: key %v is not ip . proto . port", e.Key)
			}
			if !clusterIPs[e.Key[0]] {
				continue // an external or load-balancer IP
			}
			v, ok := nft.DecodeVerdict(e.Value)
			if !ok || v.Target == "" {
				return fmt.Errorf("map service-ips: %s maps to %s, not a chain", strings.Join(e.Key, " . "), iptables.Truncate(string(e.Value), 80))
			}
			name, err := kubeProxyPortName(v.Target)
			if err != nil {
				return err
			}
			backends, err := kubeProxyBackends(t, family, v.Target)
			if err != nil {
				return err
			}
			p := port(name, e.Key[0], e.Key[1], e.Key[2])
			p.Backends = append(p.Backends, backends...)
		}
	}
	if m := t.Sets["no-endpoint-services"]; m != nil {
		elems, err := m.MapElems()
		if err != nil {
			return err
		}
		for _, e := range elems {
			if len(e.Key) != 3 {
				return fmt.Errorf("map no-endpoint-services: key %v is not ip . proto . port", e.Key)
			}
			if !clusterIPs[e.Key[0]] {
				continue
			}
			if e.Comment == "" {
				return fmt.Errorf("map no-endpoint-services: %s has no comment naming its service port", strings.Join(e.Key, " . "))
			}
			v, ok := nft.DecodeVerdict(e.Value)
			if !ok {
				return fmt.Errorf("map no-endpoint-services: %s maps to %s, not a verdict", strings.Join(e.Key, " . "), iptables.Truncate(string(e.Value), 80))
			}
			p := port(e.Comment, e.Key[0], e.Key[1], e.Key[2])
			switch {
			case v.Kind == "drop":
				p.Dropped = true
			case v.Target == "reject-chain":
				p.Rejected = true
			default:
				return fmt.Errorf("map no-endpoint-services: %s maps to %s %s, neither drop nor reject-chain", e.Comment, v.Kind, v.Target)
			}
		}
	}
	return nil
}

// kubeProxyPortName is the service port a service-, local- or external-
// chain is for ("ns/name:port", "ns/name" for an unnamed port), after
// checking the chain name's hash.
func kubeProxyPortName(chain string) (string, error) {
	var rest string
	for _, prefix := range []string{"service-", "local-", "external-", "endpoint-"} {
		if r, ok := strings.CutPrefix(chain, prefix); ok {
			rest = r
			break
		}
	}
	hash, base, ok := strings.Cut(rest, "-")
	if !ok || len(hash) != 8 {
		return "", fmt.Errorf("chain %s is not named as kube-proxy names a service chain", chain)
	}
	sum := sha256.Sum256([]byte(base))
	if want := base32.StdEncoding.EncodeToString(sum[:])[:8]; hash != want {
		return "", fmt.Errorf("chain %s: hash %s is not that of %q (%s)", chain, hash, base, want)
	}
	svc, _, _ := strings.Cut(base, "__")
	parts := strings.Split(svc, "/")
	if len(parts) != 4 {
		return "", fmt.Errorf("chain %s: %q is not namespace/name/protocol/port", chain, svc)
	}
	name := parts[0] + "/" + parts[1]
	if parts[3] != "" {
		name += ":" + parts[3]
	}
	return name, nil
}

// kubeProxyBackends are the DNAT destinations a service chain sends to:
// the entries of its numgen map, or those of the endpoint chains it goes
// to (session affinity).
func kubeProxyBackends(t *nft.Table, family, chain string) ([]string, error) {
	c := t.Chains[chain]
	if c == nil {
		return nil, fmt.Errorf("map service-ips goes to chain %s, which the table does not list", chain)
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range c.Rules {
		for _, e := range r.Expr {
			for kind, raw := range e {
				switch kind {
				case "dnat":
					ds, err := nftDNATTargets(raw, family)
					if err != nil {
						return nil, fmt.Errorf("chain %s: %w", chain, err)
					}
					out = append(out, ds...)
				case "goto", "jump":
					v, _ := nft.VerdictOf(kind, raw)
					if strings.HasPrefix(v.Target, "endpoint-") && !seen[v.Target] {
						seen[v.Target] = true
						ds, err := kubeProxyEndpoint(t, family, v.Target)
						if err != nil {
							return nil, err
						}
						out = append(out, ds...)
					}
				case "vmap":
					var vm struct {
						Data struct {
							Set [][]json.RawMessage `json:"set"`
						} `json:"data"`
					}
					if err := json.Unmarshal(raw, &vm); err != nil {
						return nil, fmt.Errorf("chain %s: a vmap kube-proxy does not write: %w", chain, err)
					}
					for _, pair := range vm.Data.Set {
						if len(pair) != 2 {
							return nil, fmt.Errorf("chain %s: a vmap entry that is not [key, verdict]", chain)
						}
						v, ok := nft.DecodeVerdict(pair[1])
						if !ok || !strings.HasPrefix(v.Target, "endpoint-") {
							return nil, fmt.Errorf("chain %s: a vmap entry to %s, not an endpoint chain", chain, iptables.Truncate(string(pair[1]), 80))
						}
						if !seen[v.Target] {
							seen[v.Target] = true
							ds, err := kubeProxyEndpoint(t, family, v.Target)
							if err != nil {
								return nil, err
							}
							out = append(out, ds...)
						}
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func kubeProxyEndpoint(t *nft.Table, family, chain string) ([]string, error) {
	if _, err := kubeProxyPortName(chain); err != nil {
		return nil, err
	}
	c := t.Chains[chain]
	if c == nil {
		return nil, fmt.Errorf("a service chain goes to %s, which the table does not list", chain)
	}
	var out []string
	for _, r := range c.Rules {
		for _, e := range r.Expr {
			if raw, ok := e["dnat"]; ok {
				ds, err := nftDNATTargets(raw, family)
				if err != nil {
					return nil, fmt.Errorf("chain %s: %w", chain, err)
				}
				out = append(out, ds...)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("endpoint chain %s has no dnat", chain)
	}
	return out, nil
}

// nftDNATTargets reads a dnat statement: {"addr": ip, "port": n}, or
// {"addr": {"map": {"key": {"numgen": …}, "data": {"set": [[i, {"concat":
// [ip, port]}], …]}}}}.
func nftDNATTargets(raw json.RawMessage, family string) ([]string, error) {
	var d struct {
		Addr json.RawMessage `json:"addr"`
		Port json.RawMessage `json:"port"`
	}
	if err := json.Unmarshal(raw, &d); err != nil || d.Addr == nil {
		return nil, fmt.Errorf("a dnat kube-proxy does not write: %s", iptables.Truncate(string(raw), 80))
	}
	join := func(ip, port string) string {
		if family == "ip6" {
			return net.JoinHostPort(ip, port)
		}
		return ip + ":" + port
	}
	var ip string
	if json.Unmarshal(d.Addr, &ip) == nil {
		port, err := nft.Scalar(d.Port)
		if err != nil {
			return nil, fmt.Errorf("dnat to %s without a port", ip)
		}
		return []string{join(ip, port)}, nil
	}
	var m struct {
		Map struct {
			Data struct {
				Set [][]json.RawMessage `json:"set"`
			} `json:"data"`
		} `json:"map"`
	}
	if err := json.Unmarshal(d.Addr, &m); err != nil || m.Map.Data.Set == nil {
		return nil, fmt.Errorf("a dnat address kube-proxy does not write: %s", iptables.Truncate(string(d.Addr), 80))
	}
	var out []string
	for _, pair := range m.Map.Data.Set {
		if len(pair) != 2 {
			return nil, fmt.Errorf("a dnat map entry that is not [key, value]")
		}
		parts, _, err := nft.DecodeKey(pair[1])
		if err != nil || len(parts) != 2 {
			return nil, fmt.Errorf("a dnat map value that is not ip . port: %s", iptables.Truncate(string(pair[1]), 80))
		}
		out = append(out, join(parts[0], parts[1]))
	}
	return out, nil
}
