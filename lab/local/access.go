package local

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/layout"
)

var (
	_ lab.EtcdAccess        = (*Lab)(nil)
	_ lab.NetworkInterfaces = (*Lab)(nil)
	_ lab.RuntimeEndpoints  = (*Lab)(nil)
)

// RuntimeEndpoint is the node's own containerd socket, the one its kubelet
// and its SSH sessions' crictl use (the machine may run other containerds).
func (l *Lab) RuntimeEndpoint(host string) (string, error) {
	h, ok := l.byName[host]
	if !ok {
		_, err := l.Host(host)
		return "", err
	}
	if h.node == nil {
		return "", fmt.Errorf("host %s runs no container runtime", host)
	}
	return l.dirs.ContainerdSocket(host), nil
}

// EtcdClientConfig gives faultline's own etcd client identity and the lab
// CA, and every etcd member's client URL.
func (l *Lab) EtcdClientConfig() ([]string, *tls.Config, error) {
	cc, err := l.comp.Env(context.Background())
	if err != nil {
		return nil, nil, err
	}
	pem, err := os.ReadFile(cc.PKI.CA.Cert)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the lab CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("the lab CA %s holds no certificate", cc.PKI.CA.Cert)
	}
	cert, err := tls.LoadX509KeyPair(cc.PKI.EtcdAdmin.Cert, cc.PKI.EtcdAdmin.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the etcd admin certificate: %w", err)
	}
	eps := l.comp.EtcdEndpoints()
	if eps == "" {
		return nil, nil, fmt.Errorf("lab %s has no etcd host", l.cfg.Name)
	}
	return strings.Split(eps, ","), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// ManagementInterface is eth0 inside every host's namespace.
func (l *Lab) ManagementInterface(host string) (string, error) {
	if _, err := l.Host(host); err != nil {
		return "", err
	}
	return layout.HostManagementIf, nil
}

// PodInterface is the pod transport link of a host that runs a kubelet.
func (l *Lab) PodInterface(host string) (string, error) {
	for _, h := range l.hosts {
		if h.cfg.Name != host {
			continue
		}
		if h.node == nil {
			return "", fmt.Errorf("host %s runs no pods", host)
		}
		return layout.HostPodIf, nil
	}
	_, err := l.Host(host)
	return "", err
}
