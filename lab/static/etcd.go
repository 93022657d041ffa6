package static

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"slices"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/ssh"
)

var _ lab.EtcdAccess = (*Lab)(nil)

// EtcdClientConfig is the lab file's etcd client: its endpoints, the CA
// that verifies the members and the client certificate; an error wrapping
// lab.ErrUnsupported when the file has no etcd section.
func (l *Lab) EtcdClientConfig() ([]string, *tls.Config, error) {
	e := l.cfg.Etcd
	if e == nil {
		return nil, nil, lab.Unsupported(l.cfg.Kind, "etcd client", fmt.Sprintf("lab %s's file has no etcd section", l.cfg.Name))
	}
	pem, err := os.ReadFile(ssh.ExpandHome(e.CAFile))
	if err != nil {
		return nil, nil, fmt.Errorf("lab %s: reading etcd.caFile: %w", l.cfg.Name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("lab %s: etcd.caFile %s holds no certificate", l.cfg.Name, e.CAFile)
	}
	cert, err := tls.LoadX509KeyPair(ssh.ExpandHome(e.CertFile), ssh.ExpandHome(e.KeyFile))
	if err != nil {
		return nil, nil, fmt.Errorf("lab %s: loading etcd.certFile and etcd.keyFile: %w", l.cfg.Name, err)
	}
	return slices.Clone(e.Endpoints), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
