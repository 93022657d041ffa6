package source

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) testCA {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return testCA{cert: cert, key: key, pool: pool}
}

func (ca testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// A kubelet stand-in on loopback that, like the kubelet, requires a
// client certificate from its CA and serves the captured /pods.
func TestKubeletReaderOverTLS(t *testing.T) {
	ca := newTestCA(t)
	pods := readTestdata(t, "kubelet", "pods-worker1.json")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/pods":
			w.Write(pods)
		case "/healthz":
			w.Write([]byte("ok"))
		default:
			http.NotFound(w, r)
		}
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.pool,
		Certificates: []tls.Certificate{ca.issue(t, "kubelet", x509.ExtKeyUsageServerAuth)}}
	srv.StartTLS()
	defer srv.Close()
	client := ca.issue(t, "apiserver-kubelet-client", x509.ExtKeyUsageClientAuth)
	ctx := context.Background()

	good := NewKubelet("worker1", srv.URL, &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{client}}, evidence.DefaultSubjects)
	ans := good.Read(ctx)
	var pod evidence.PodValue
	if err := ans[evidence.PodObject].Decode(&pod); err != nil || pod.UID != "d36dbb64-dc9f-4a2d-b622-c9ae57353339" {
		t.Errorf("pod %+v, %v", pod, err)
	}
	var h evidence.KubeletHealthValue
	if err := ans[evidence.KubeletHealth].Decode(&h); err != nil || h.StatusCode != 200 || h.Body != "ok" {
		t.Errorf("health %+v, %v", h, err)
	}

	other := newTestCA(t)
	for name, cfg := range map[string]*tls.Config{
		"a serving certificate from another CA": {RootCAs: other.pool, Certificates: []tls.Certificate{client}},
		"no client certificate":                 {RootCAs: ca.pool},
	} {
		ans := NewKubelet("worker1", srv.URL, cfg, evidence.DefaultSubjects).Read(ctx)
		for q, a := range ans {
			if a.State != evidence.Unreadable {
				t.Errorf("%s: %s answered %+v", name, q, a)
			}
		}
		if r := ans[evidence.PodObject].Reason; !strings.HasPrefix(r, "TLS: ") {
			t.Errorf("%s: reason %q, want TLS", name, r)
		}
	}

	srv.Close()
	ans = good.Read(ctx)
	if r := ans[evidence.PodObject].Reason; !strings.HasPrefix(r, "connection refused: ") {
		t.Errorf("closed kubelet: reason %q", r)
	}
}
