package static

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/ssh"
)

// The clients of the cluster's etcd and kubelets a lab file may give:
// on a fleet, certificates its admin copies where faultline runs.

var (
	_ lab.EtcdAccess    = (*Lab)(nil)
	_ lab.KubeletAccess = (*Lab)(nil)
)

// EtcdClientConfig is the lab file's etcd client: its endpoints, the CA
// that verifies the members and the client certificate; an error wrapping
// lab.ErrUnsupported when the file has no etcd section.
func (l *Lab) EtcdClientConfig() ([]string, *tls.Config, error) {
	e := l.cfg.Etcd
	if e == nil {
		return nil, nil, lab.Unsupported(l.cfg.Kind, "etcd client", fmt.Sprintf("lab %s's file has no etcd section", l.cfg.Name))
	}
	tc, err := clientTLS(e.CAFile, e.CertFile, e.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("lab %s: etcd: %w", l.cfg.Name, err)
	}
	return slices.Clone(e.Endpoints), tc, nil
}

// KubeletClientConfig is the lab file's kubelet client for a worker's
// kubelet at the host's address; an error wrapping lab.ErrUnsupported
// when the file has no kubelet section.
func (l *Lab) KubeletClientConfig(host string) (string, *tls.Config, error) {
	k := l.cfg.Kubelet
	if k == nil {
		return "", nil, lab.Unsupported(l.cfg.Kind, "kubelet client", fmt.Sprintf("lab %s's file has no kubelet section", l.cfg.Name))
	}
	hc, ok := l.cfg.HostConfig(host)
	if !ok {
		return "", nil, fmt.Errorf("lab %s has no host %q", l.cfg.Name, host)
	}
	if !slices.Contains(hc.Roles, lab.RoleWorker) {
		return "", nil, fmt.Errorf("lab %s: host %s is not a worker and runs no kubelet", l.cfg.Name, host)
	}
	tc, err := clientTLS(k.CAFile, k.CertFile, k.KeyFile)
	if err != nil {
		return "", nil, fmt.Errorf("lab %s: kubelet: %w", l.cfg.Name, err)
	}
	port := k.Port
	if port == 0 {
		port = 10250
	}
	return "https://" + net.JoinHostPort(hc.Address, strconv.Itoa(port)), tc, nil
}

// clientTLS verifies servers with the CA in caFile and presents the
// certificate in certFile and keyFile.
func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(ssh.ExpandHome(caFile))
	if err != nil {
		return nil, fmt.Errorf("reading caFile: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("caFile %s holds no certificate", caFile)
	}
	cert, err := tls.LoadX509KeyPair(ssh.ExpandHome(certFile), ssh.ExpandHome(keyFile))
	if err != nil {
		return nil, fmt.Errorf("loading certFile and keyFile: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
