package static

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faultline/faultline/lab"
)

// writeCert writes a self-signed certificate and its key under dir.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcd-client"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certFile, keyFile
}

// The lab file's etcd section is the lab's etcd client; without one the
// lab has none, which the etcd faults and sources report as unsupported.
func TestEtcdClientConfigFromTheLabFile(t *testing.T) {
	l := New(&lab.Config{Name: "fleet", Kind: Kind}, Options{})
	if _, _, err := l.EtcdClientConfig(); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("no etcd section: %v, want unsupported", err)
	}
	cert, key := writeCert(t, t.TempDir())
	eps := []string{"https://10.0.0.11:2379"}
	l = New(&lab.Config{Name: "fleet", Kind: Kind, Etcd: &lab.EtcdClientSettings{Endpoints: eps, CAFile: cert, CertFile: cert, KeyFile: key}}, Options{})
	got, tc, err := l.EtcdClientConfig()
	if err != nil || len(got) != 1 || got[0] != eps[0] || len(tc.Certificates) != 1 || tc.RootCAs == nil {
		t.Fatalf("EtcdClientConfig = %v, %+v, %v", got, tc, err)
	}
	l = New(&lab.Config{Name: "fleet", Kind: Kind, Etcd: &lab.EtcdClientSettings{Endpoints: eps, CAFile: key, CertFile: cert, KeyFile: key}}, Options{})
	if _, _, err := l.EtcdClientConfig(); err == nil || errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("a CA file without a certificate: %v, want a failure", err)
	}
}

// The lab file's kubelet section is the lab's kubelet client, at each
// worker's address; without one the lab has none.
func TestKubeletClientConfigFromTheLabFile(t *testing.T) {
	hosts := []lab.HostConfig{{Name: "w1", Roles: []lab.Role{lab.RoleWorker}, Address: "10.0.0.31"}, {Name: "cp1", Roles: []lab.Role{lab.RoleControlPlane}, Address: "10.0.0.21"}}
	l := New(&lab.Config{Name: "fleet", Kind: Kind, Hosts: hosts}, Options{})
	if _, _, err := l.KubeletClientConfig("w1"); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("no kubelet section: %v, want unsupported", err)
	}
	cert, key := writeCert(t, t.TempDir())
	l = New(&lab.Config{Name: "fleet", Kind: Kind, Hosts: hosts, Kubelet: &lab.KubeletClientSettings{CAFile: cert, CertFile: cert, KeyFile: key}}, Options{})
	url, tc, err := l.KubeletClientConfig("w1")
	if err != nil || url != "https://10.0.0.31:10250" || len(tc.Certificates) != 1 {
		t.Errorf("KubeletClientConfig(w1) = %s, %v", url, err)
	}
	if _, _, err := l.KubeletClientConfig("cp1"); err == nil {
		t.Errorf("a control-plane host's kubelet: want an error")
	}
}
