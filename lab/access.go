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
