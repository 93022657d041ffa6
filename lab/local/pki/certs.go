package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	// validity of every certificate. Labs are reset from a cold snapshot
	// for a long time after they were made; a certificate that expires
	// under a running experiment would be a fault nobody injected.
	validity = 10 * 365 * 24 * time.Hour
	// backdate moves NotBefore into the past so that a clock-skew fault
	// that sets a host's clock back does not make every certificate not
	// yet valid.
	backdate = 30 * 24 * time.Hour
	// renewBefore is how close to expiry a certificate is replaced.
	renewBefore = 30 * 24 * time.Hour
)

// certSpec is what a certificate must say. An existing certificate is
// reused only if it says exactly this.
type certSpec struct {
	commonName   string
	organization []string
	dnsNames     []string
	ips          []net.IP
	extKeyUsage  []x509.ExtKeyUsage
	isCA         bool
}

// authority is a CA that signs certificates.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

func template(spec certSpec, now time.Time) (*x509.Certificate, error) {
	sn, err := serial()
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	t := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.organization},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(validity),
		DNSNames:     spec.dnsNames,
		IPAddresses:  spec.ips,
		ExtKeyUsage:  spec.extKeyUsage,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if spec.isCA {
		t.IsCA = true
		t.BasicConstraintsValid = true
		t.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	}
	return t, nil
}

// issue creates a key and a certificate for spec, signed by ca (self-signed
// when ca is nil), and writes them to certPath and keyPath.
func issue(spec certSpec, ca *authority, certPath, keyPath string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, fmt.Errorf("generating key for %s: %w", spec.commonName, err)
	}
	tmpl, err := template(spec, now)
	if err != nil {
		return nil, nil, err
	}
	parent, signer := tmpl, crypto.Signer(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, nil, fmt.Errorf("signing certificate for %s: %w", spec.commonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing new certificate for %s: %w", spec.commonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding key for %s: %w", spec.commonName, err)
	}
	// The key first: a certificate without its key is detected as invalid
	// on the next run, while a key without its certificate is simply
	// replaced.
	if err := writeFileAtomic(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, nil, err
	}
	if err := writeFileAtomic(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// loadValid reads certPath and keyPath and returns them if they form a pair
// that says what spec says, chains to ca (or is a valid self-signed CA when
// ca is nil), and is not near expiry. Any other state returns an error
// saying why it cannot be reused.
func loadValid(spec certSpec, ca *authority, certPath, keyPath string, now time.Time) (*x509.Certificate, crypto.Signer, error) {
	cert, err := readCert(certPath)
	if err != nil {
		return nil, nil, err
	}
	key, err := readKey(keyPath)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(cert.PublicKey) {
		return nil, nil, fmt.Errorf("%s does not belong to %s", keyPath, certPath)
	}
	if now.Before(cert.NotBefore) || now.Add(renewBefore).After(cert.NotAfter) {
		return nil, nil, fmt.Errorf("%s is valid only %s to %s", certPath, cert.NotBefore, cert.NotAfter)
	}
	if err := matches(cert, spec); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certPath, err)
	}
	roots := x509.NewCertPool()
	if ca == nil {
		roots.AddCert(cert)
	} else {
		roots.AddCert(ca.cert)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, nil, fmt.Errorf("%s does not verify against its CA: %w", certPath, err)
	}
	return cert, key, nil
}

// matches says how cert differs from spec, if it does.
func matches(cert *x509.Certificate, spec certSpec) error {
	if cert.Subject.CommonName != spec.commonName {
		return fmt.Errorf("CN is %q, want %q", cert.Subject.CommonName, spec.commonName)
	}
	if !sameStrings(cert.Subject.Organization, spec.organization) {
		return fmt.Errorf("O is %v, want %v", cert.Subject.Organization, spec.organization)
	}
	if !sameStrings(cert.DNSNames, spec.dnsNames) {
		return fmt.Errorf("DNS SANs are %v, want %v", cert.DNSNames, spec.dnsNames)
	}
	var got, want []string
	for _, ip := range cert.IPAddresses {
		got = append(got, ip.String())
	}
	for _, ip := range spec.ips {
		want = append(want, ip.String())
	}
	if !sameStrings(got, want) {
		return fmt.Errorf("IP SANs are %v, want %v", got, want)
	}
	if !slices.Equal(cert.ExtKeyUsage, spec.extKeyUsage) {
		return fmt.Errorf("extended key usages are %v, want %v", cert.ExtKeyUsage, spec.extKeyUsage)
	}
	if cert.IsCA != spec.isCA {
		return fmt.Errorf("IsCA is %v, want %v", cert.IsCA, spec.isCA)
	}
	return nil
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

func readKey(path string) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s holds no PEM key", path)
	}
	var key any
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%s holds a %s, not a private key", path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", path, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s holds a key that cannot sign", path)
	}
	return signer, nil
}

// writeFileAtomic replaces path with data, so that a crash never leaves a
// half-written file that a later run would try to reuse. It writes nothing
// when the file already holds exactly data with mode perm.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		if st, err := os.Stat(path); err == nil && st.Mode().Perm() == perm {
			return nil
		}
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// describe is a short, stable label for log and error messages.
func describe(spec certSpec) string {
	if len(spec.organization) == 0 {
		return "CN=" + spec.commonName
	}
	return "CN=" + spec.commonName + ", O=" + strings.Join(spec.organization, "+")
}
