// Package pki makes the certificates, keys and kubeconfigs of a local lab:
// one lab CA that signs every etcd, API server, kubelet and client
// certificate, a separate front-proxy CA for the aggregation layer, the
// service-account signing key, and kubeconfigs for the admin and every
// component.
//
// Ensure is idempotent: a file that exists and still says what it must (its
// key matches, its subject and SANs are the ones the lab needs, it chains to
// the current CA and is not near expiry) is kept; only missing or wrong
// files are written. A new CA therefore replaces every certificate it
// signed, and a second run over a complete directory writes nothing.
//
// Keys are ECDSA P-256 (fast to generate), written 0600.
package pki

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/faultline/faultline/lab"
)

// Pair is a certificate and its key.
type Pair struct {
	Cert string
	Key  string
}

// EtcdMember is the certificates of one etcd member.
type EtcdMember struct {
	// Server is presented to clients; it also authenticates as a client
	// because etcd's gRPC gateway dials the member itself with it.
	Server Pair
	Peer   Pair
}

// Node is the files of one host that runs a kubelet.
type Node struct {
	// Client is the kubelet's identity, CN=system:node:<name>,
	// O=system:nodes, for the Node authorizer and NodeRestriction.
	Client Pair
	// Serving is the kubelet's HTTPS serving certificate (SANs: its address
	// and name), so API servers can verify the kubelet they talk to.
	Serving Pair
	// Kubeconfig points the kubelet at the virtual address (or the sole API
	// server) with its client certificate.
	Kubeconfig string
	// KubeProxyKubeconfig is the node's kube-proxy, with an identity of
	// its own (KubeProxyUser, in KubeProxyGroup) so a fault can refuse one
	// node's kube-proxy and no other's.
	KubeProxyKubeconfig string
	// KubeRouterKubeconfig is the node's NetworkPolicy agent
	// (KubeRouterUser, in KubeRouterGroup).
	KubeRouterKubeconfig string
}

// The node agents' identities: one user per node and agent, one group per
// agent, which the lab binds to the agent's ClusterRole. Real clusters
// often share one identity among a DaemonSet's pods; one per node lets a
// fault single out one node's agent, as the kubelets' system:node:<name>
// already does.
const (
	KubeProxyGroup  = "faultline:kube-proxies"
	KubeRouterGroup = "faultline:kube-routers"
)

// KubeProxyUser is the user node's kube-proxy authenticates as.
func KubeProxyUser(node string) string { return "faultline:kube-proxy:" + node }

// AgentKubeconfigFile is the name, in the lab's PKI directory, of the
// kubeconfig node's agent (lab.ServiceKubeProxy, lab.ServicePolicyAgent)
// reads.
func AgentKubeconfigFile(agent, node string) string { return agent + "-" + node + ".kubeconfig" }

// KubeRouterUser is the user node's NetworkPolicy agent authenticates as.
func KubeRouterUser(node string) string { return "faultline:kube-router:" + node }

// CSIControllerUser is the identity of the storage host's CSI controller
// (its provisioner) and of csi-attacher beside it.
const CSIControllerUser = "faultline:csi-controller"

// ControlPlaneHost is the files of one control-plane host.
type ControlPlaneHost struct {
	// APIServer is the API server's serving certificate.
	APIServer Pair
	// AdminKubeconfig reaches this host's API server directly as the admin.
	AdminKubeconfig string
	// ControllerManagerKubeconfig and SchedulerKubeconfig point at this
	// host's own API server.
	ControllerManagerKubeconfig string
	SchedulerKubeconfig         string
}

// Files is where Ensure put everything, by purpose.
type Files struct {
	Dir string

	CA               Pair
	FrontProxyCA     Pair
	FrontProxyClient Pair
	// ServiceAccountKey signs service-account tokens
	// (--service-account-signing-key-file); ServiceAccountPub verifies them
	// (--service-account-key-file, and the controller-manager's
	// --service-account-private-key-file takes ServiceAccountKey).
	ServiceAccountKey string
	ServiceAccountPub string

	// APIServerEtcdClient is how API servers authenticate to etcd.
	APIServerEtcdClient Pair
	// EtcdAdmin is faultline's own etcd client identity.
	EtcdAdmin Pair
	// APIServerKubeletClient is how API servers authenticate to kubelets
	// (O=system:masters).
	APIServerKubeletClient Pair
	// Admin is CN=faultline-admin, O=system:masters.
	Admin Pair
	// AdminKubeconfig reaches the cluster through the virtual address, or
	// the sole API server when the lab has no virtual address.
	AdminKubeconfig string

	Etcd         map[string]EtcdMember       // by host name
	ControlPlane map[string]ControlPlaneHost // by host name
	Nodes        map[string]Node             // by host name
	// CSIControllerKubeconfig is the storage host's CSI controller and
	// csi-attacher (CSIControllerUser) through the cluster's endpoint; empty
	// when the lab has no storage host.
	CSIControllerKubeconfig string

	// Written lists the files this call of Ensure wrote (empty when
	// everything was reused).
	Written []string
}

// Ensure makes every certificate, key and kubeconfig the lab described by
// cfg needs under dir, reusing whatever is already there and valid.
func Ensure(ctx context.Context, cfg *lab.Config, dir string) (*Files, error) {
	return ensure(ctx, cfg, dir, time.Now())
}

// clusterEndpoint is the address node components and the admin use: the
// virtual address, or the sole control-plane host's address.
func clusterEndpoint(cfg *lab.Config) (string, error) {
	if cfg.Network.VirtualIP != "" {
		return cfg.Network.VirtualIP, nil
	}
	var cps []string
	for _, h := range cfg.Hosts {
		if hasRole(h, lab.RoleControlPlane) {
			cps = append(cps, h.Address)
		}
	}
	if len(cps) != 1 {
		return "", fmt.Errorf("network.virtualIP is required with %d control-plane hosts", len(cps))
	}
	return cps[0], nil
}

func hasRole(h lab.HostConfig, r lab.Role) bool {
	for _, x := range h.Roles {
		if x == r {
			return true
		}
	}
	return false
}

func serverURL(addr string, port int) string {
	return "https://" + net.JoinHostPort(addr, strconv.Itoa(port))
}

// firstServiceIP is the address the "kubernetes" Service gets: the first
// address of the service CIDR.
func firstServiceIP(services string) (net.IP, error) {
	p, err := netip.ParsePrefix(services)
	if err != nil {
		return nil, fmt.Errorf("network.services %q: %w", services, err)
	}
	return net.IP(p.Masked().Addr().Next().AsSlice()), nil
}

func parseIP(field, s string) (net.IP, error) {
	ip := net.ParseIP(s)
	if ip == nil {
		return nil, fmt.Errorf("%s %q is not an IP address", field, s)
	}
	return ip, nil
}

var loopback = net.IPv4(127, 0, 0, 1).To4()

// issuer makes or reuses files under one directory and records what it
// wrote.
type issuer struct {
	ctx     context.Context
	dir     string
	now     time.Time
	written []string
}

func (is *issuer) pair(name string) Pair {
	return Pair{Cert: filepath.Join(is.dir, name+".crt"), Key: filepath.Join(is.dir, name+".key")}
}

// ensurePair returns the pair named name for spec signed by ca, reusing it
// when valid.
func (is *issuer) ensurePair(name string, spec certSpec, ca *authority) (Pair, *authority, error) {
	if err := is.ctx.Err(); err != nil {
		return Pair{}, nil, err
	}
	p := is.pair(name)
	cert, key, err := loadValid(spec, ca, p.Cert, p.Key, is.now)
	if err != nil {
		cert, key, err = issue(spec, ca, p.Cert, p.Key, is.now)
		if err != nil {
			return Pair{}, nil, fmt.Errorf("issuing %s (%s): %w", name, describe(spec), err)
		}
		is.written = append(is.written, p.Cert, p.Key)
	}
	return p, &authority{cert: cert, key: key}, nil
}

func (is *issuer) leaf(name string, spec certSpec, ca *authority) (Pair, error) {
	p, _, err := is.ensurePair(name, spec, ca)
	return p, err
}

var (
	serverAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	clientAuth = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	bothAuth   = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
)

func ensure(ctx context.Context, cfg *lab.Config, dir string, now time.Time) (*Files, error) {
	if cfg == nil {
		return nil, fmt.Errorf("making lab PKI: no lab config")
	}
	endpoint, err := clusterEndpoint(cfg)
	if err != nil {
		return nil, fmt.Errorf("making lab PKI: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making lab PKI directory: %w", err)
	}
	port := cfg.Network.APIServerPort
	if port == 0 {
		port = 6443
	}
	is := &issuer{ctx: ctx, dir: dir, now: now}
	f := &Files{
		Dir:          dir,
		Etcd:         map[string]EtcdMember{},
		ControlPlane: map[string]ControlPlaneHost{},
		Nodes:        map[string]Node{},
	}

	var ca, frontProxyCA *authority
	if f.CA, ca, err = is.ensurePair("ca", certSpec{commonName: cfg.Name + "-ca", organization: []string{"faultline"}, isCA: true}, nil); err != nil {
		return nil, err
	}
	if f.FrontProxyCA, frontProxyCA, err = is.ensurePair("front-proxy-ca", certSpec{commonName: cfg.Name + "-front-proxy-ca", organization: []string{"faultline"}, isCA: true}, nil); err != nil {
		return nil, err
	}
	if f.FrontProxyClient, err = is.leaf("front-proxy-client", certSpec{commonName: "front-proxy-client", extKeyUsage: clientAuth}, frontProxyCA); err != nil {
		return nil, err
	}
	if f.ServiceAccountKey, f.ServiceAccountPub, err = is.serviceAccountKey(); err != nil {
		return nil, err
	}

	clients := []struct {
		name string
		spec certSpec
		dest *Pair
	}{
		{"apiserver-etcd-client", certSpec{commonName: "kube-apiserver-etcd-client", extKeyUsage: clientAuth}, &f.APIServerEtcdClient},
		{"etcd-admin", certSpec{commonName: "faultline-etcd-admin", extKeyUsage: clientAuth}, &f.EtcdAdmin},
		{"apiserver-kubelet-client", certSpec{commonName: "kube-apiserver-kubelet-client", organization: []string{"system:masters"}, extKeyUsage: clientAuth}, &f.APIServerKubeletClient},
		{"admin", certSpec{commonName: "faultline-admin", organization: []string{"system:masters"}, extKeyUsage: clientAuth}, &f.Admin},
	}
	for _, c := range clients {
		if *c.dest, err = is.leaf(c.name, c.spec, ca); err != nil {
			return nil, err
		}
	}
	controllerManager, err := is.leaf("controller-manager", certSpec{commonName: "system:kube-controller-manager", extKeyUsage: clientAuth}, ca)
	if err != nil {
		return nil, err
	}
	scheduler, err := is.leaf("scheduler", certSpec{commonName: "system:kube-scheduler", extKeyUsage: clientAuth}, ca)
	if err != nil {
		return nil, err
	}

	var apiServerIPs []net.IP
	if cfg.Network.VirtualIP != "" {
		vip, err := parseIP("network.virtualIP", cfg.Network.VirtualIP)
		if err != nil {
			return nil, err
		}
		apiServerIPs = append(apiServerIPs, vip)
	}
	if cfg.Network.Services != "" {
		svc, err := firstServiceIP(cfg.Network.Services)
		if err != nil {
			return nil, err
		}
		apiServerIPs = append(apiServerIPs, svc)
	}

	kc := kubeconfigWriter{is: is, clusterName: cfg.Name, caFile: f.CA.Cert}
	if f.AdminKubeconfig, err = kc.write("admin.kubeconfig", serverURL(endpoint, port), "faultline-admin", f.Admin); err != nil {
		return nil, err
	}

	for i, h := range cfg.Hosts {
		addr, err := parseIP(fmt.Sprintf("hosts[%d].address", i), h.Address)
		if err != nil {
			return nil, err
		}
		hostSANs := certSpec{dnsNames: []string{h.Name, "localhost"}, ips: []net.IP{addr, loopback}}

		if hasRole(h, lab.RoleEtcd) {
			var m EtcdMember
			server, peer := hostSANs, hostSANs
			server.commonName, server.extKeyUsage = h.Name, bothAuth
			peer.commonName, peer.extKeyUsage = h.Name, bothAuth
			if m.Server, err = is.leaf("etcd-"+h.Name+"-server", server, ca); err != nil {
				return nil, err
			}
			if m.Peer, err = is.leaf("etcd-"+h.Name+"-peer", peer, ca); err != nil {
				return nil, err
			}
			f.Etcd[h.Name] = m
		}

		if hasRole(h, lab.RoleControlPlane) {
			var c ControlPlaneHost
			spec := certSpec{
				commonName:  "kube-apiserver",
				dnsNames:    []string{h.Name, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
				ips:         append([]net.IP{addr, loopback}, apiServerIPs...),
				extKeyUsage: serverAuth,
			}
			if c.APIServer, err = is.leaf("apiserver-"+h.Name, spec, ca); err != nil {
				return nil, err
			}
			own := serverURL(h.Address, port)
			if c.AdminKubeconfig, err = kc.write("admin-"+h.Name+".kubeconfig", own, "faultline-admin", f.Admin); err != nil {
				return nil, err
			}
			if c.ControllerManagerKubeconfig, err = kc.write("controller-manager-"+h.Name+".kubeconfig", own, "system:kube-controller-manager", controllerManager); err != nil {
				return nil, err
			}
			if c.SchedulerKubeconfig, err = kc.write("scheduler-"+h.Name+".kubeconfig", own, "system:kube-scheduler", scheduler); err != nil {
				return nil, err
			}
			f.ControlPlane[h.Name] = c
		}

		if hasRole(h, lab.RoleControlPlane) || hasRole(h, lab.RoleWorker) {
			var n Node
			user := "system:node:" + h.Name
			if n.Client, err = is.leaf("kubelet-"+h.Name+"-client", certSpec{commonName: user, organization: []string{"system:nodes"}, extKeyUsage: clientAuth}, ca); err != nil {
				return nil, err
			}
			serving := hostSANs
			serving.dnsNames = []string{h.Name}
			serving.ips = []net.IP{addr}
			serving.commonName, serving.extKeyUsage = h.Name, serverAuth
			if n.Serving, err = is.leaf("kubelet-"+h.Name+"-serving", serving, ca); err != nil {
				return nil, err
			}
			if n.Kubeconfig, err = kc.write("kubelet-"+h.Name+".kubeconfig", serverURL(endpoint, port), user, n.Client); err != nil {
				return nil, err
			}
			agents := []struct {
				agent, user, group string
				dest               *string
			}{
				{lab.ServiceKubeProxy, KubeProxyUser(h.Name), KubeProxyGroup, &n.KubeProxyKubeconfig},
				{lab.ServicePolicyAgent, KubeRouterUser(h.Name), KubeRouterGroup, &n.KubeRouterKubeconfig},
			}
			for _, a := range agents {
				pair, err := is.leaf(a.agent+"-"+h.Name, certSpec{commonName: a.user, organization: []string{a.group}, extKeyUsage: clientAuth}, ca)
				if err != nil {
					return nil, err
				}
				if *a.dest, err = kc.write(AgentKubeconfigFile(a.agent, h.Name), serverURL(endpoint, port), a.user, pair); err != nil {
					return nil, err
				}
			}
			f.Nodes[h.Name] = n
		}

		if hasRole(h, lab.RoleStorage) {
			pair, err := is.leaf("csi-controller", certSpec{commonName: CSIControllerUser, extKeyUsage: clientAuth}, ca)
			if err != nil {
				return nil, err
			}
			if f.CSIControllerKubeconfig, err = kc.write("csi-controller.kubeconfig", serverURL(endpoint, port), CSIControllerUser, pair); err != nil {
				return nil, err
			}
		}
	}
	f.Written = is.written
	return f, nil
}

// serviceAccountKey makes or reuses the key pair that signs service-account
// tokens.
func (is *issuer) serviceAccountKey() (keyPath, pubPath string, err error) {
	keyPath, pubPath = filepath.Join(is.dir, "sa.key"), filepath.Join(is.dir, "sa.pub")
	if key, err := readKey(keyPath); err == nil {
		pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			return "", "", fmt.Errorf("encoding service-account public key: %w", err)
		}
		want := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
		if old, err := os.ReadFile(pubPath); err != nil || string(old) != string(want) {
			if err := writeFileAtomic(pubPath, want, 0o644); err != nil {
				return "", "", err
			}
			is.written = append(is.written, pubPath)
		}
		return keyPath, pubPath, nil
	}
	// A missing or unreadable key is replaced, like any invalid file.
	key, err := newKey()
	if err != nil {
		return "", "", fmt.Errorf("generating service-account key: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("encoding service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(crypto.Signer(key).Public())
	if err != nil {
		return "", "", fmt.Errorf("encoding service-account public key: %w", err)
	}
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return "", "", err
	}
	is.written = append(is.written, keyPath, pubPath)
	return keyPath, pubPath, nil
}
