package local

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/components"
)

var _ lab.KubeletAccess = (*Lab)(nil)

// KubeletClientConfig reaches a node's kubelet API as the API servers do:
// with their kubelet client certificate, verifying the kubelet's serving
// certificate against the lab CA.
func (l *Lab) KubeletClientConfig(host string) (string, *tls.Config, error) {
	var node *Host
	for _, h := range l.hosts {
		if h.cfg.Name == host {
			node = h
		}
	}
	if node == nil {
		_, err := l.Host(host)
		return "", nil, err
	}
	if node.node == nil {
		return "", nil, fmt.Errorf("host %s runs no kubelet", host)
	}
	cc, err := l.comp.Env(context.Background())
	if err != nil {
		return "", nil, err
	}
	pem, err := os.ReadFile(cc.PKI.CA.Cert)
	if err != nil {
		return "", nil, fmt.Errorf("reading the lab CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return "", nil, fmt.Errorf("the lab CA %s holds no certificate", cc.PKI.CA.Cert)
	}
	cert, err := tls.LoadX509KeyPair(cc.PKI.APIServerKubeletClient.Cert, cc.PKI.APIServerKubeletClient.Key)
	if err != nil {
		return "", nil, fmt.Errorf("loading the kubelet client certificate: %w", err)
	}
	url := "https://" + net.JoinHostPort(node.cfg.Address, strconv.Itoa(components.KubeletPort))
	return url, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
