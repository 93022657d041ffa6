package lab

import "crypto/tls"

// The interfaces below are optional: a fault that needs one asserts it on
// the Lab and, when the lab lacks it, fails with ErrUnsupported naming it.
// Backends implement what they can reach.

// EtcdAccess is a lab whose etcd cluster a client can reach from the
// program running the faults.
type EtcdAccess interface {
	// EtcdClientConfig returns every etcd member's client URL and the TLS
	// configuration (CA and client certificate) to talk to them.
	EtcdClientConfig() (endpoints []string, tlsConfig *tls.Config, err error)
}

// NetworkInterfaces is a lab that knows the names of its hosts' network
// interfaces. Without it, faults ask the host's routing table.
type NetworkInterfaces interface {
	// ManagementInterface is the interface carrying the host's management
	// address.
	ManagementInterface(host string) (string, error)
	// PodInterface is the interface pod traffic between nodes leaves the
	// host by (the pod transport link, or the overlay device); an error if
	// the host runs no pods.
	PodInterface(host string) (string, error)
}

// KubeletAccess is a lab whose kubelets' own HTTPS API (port 10250) a
// client can call, authenticated with a client certificate the kubelets'
// authorizer accepts.
type KubeletAccess interface {
	// KubeletClientConfig returns the base URL of host's kubelet API
	// ("https://10.0.0.31:10250") and a TLS config that verifies the
	// kubelet's serving certificate and presents the client certificate.
	KubeletClientConfig(host string) (baseURL string, tlsConfig *tls.Config, err error)
}

// ClusterDNSAccess is a lab that runs a cluster DNS server.
type ClusterDNSAccess interface {
	// ClusterDNSServer returns the DNS server's address ("10.96.0.10:53")
	// and the cluster domain ("cluster.local"); an empty address means the
	// lab runs no cluster DNS.
	ClusterDNSServer() (address, domain string, err error)
}

// AuthorizationConfigFiles is a lab whose API servers take their
// authorizers from a structured authorization configuration file
// (kube-apiserver --authorization-config: an AuthorizationConfiguration of
// apiserver.config.k8s.io) and reload it when it changes.
type AuthorizationConfigFiles interface {
	// AuthorizationConfigFile returns the path, on the named control-plane
	// host, of the file its API server reads its authorizers from.
	AuthorizationConfigFile(host string) (string, error)
}
