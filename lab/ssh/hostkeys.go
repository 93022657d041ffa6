package ssh

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// ErrHostKey is wrapped by every refusal of a server's host key (unknown,
// changed, revoked): waiting or retrying does not help.
var ErrHostKey = errors.New("host key refused")

// knownHostsWrites serialises appends to known_hosts files: the hosts of a
// lab are dialled concurrently and share one file.
var knownHostsWrites sync.Mutex

// hostKeyCheck verifies one server's key during one handshake and keeps
// the refusal, so that the handshake's generic error can be replaced by it.
type hostKeyCheck struct {
	opts    *Options
	refusal error
}

func (h *hostKeyCheck) callback(hostname string, remote net.Addr, key xssh.PublicKey) error {
	err := h.verify(hostname, remote, key)
	if err != nil {
		h.refusal = fmt.Errorf("%w: %w", ErrHostKey, err)
	}
	return err
}

func (h *hostKeyCheck) verify(hostname string, remote net.Addr, key xssh.PublicKey) error {
	o := h.opts
	knownKeys, err := loadKnownHosts(o.KnownHosts, o.AcceptNewHostKeys)
	if err != nil {
		return err
	}
	err = knownKeys(hostname, remote, key)
	if err == nil {
		return nil
	}
	var revoked *knownhosts.RevokedError
	if errors.As(err, &revoked) {
		return fmt.Errorf("host key of %s (%s) is marked @revoked in %s line %d: refusing to connect",
			o.Name, hostname, revoked.Revoked.Filename, revoked.Revoked.Line)
	}
	var keyErr *knownhosts.KeyError
	if !errors.As(err, &keyErr) {
		return fmt.Errorf("checking host key of %s (%s) against %s: %w", o.Name, hostname, o.KnownHosts, err)
	}
	if len(keyErr.Want) > 0 {
		w := keyErr.Want[0]
		return fmt.Errorf("host key of %s (%s) has CHANGED: %s line %d has %s %s, the server offered %s %s; "+
			"refusing to connect (the host was reinstalled, or something is in between: check, then replace that line)",
			o.Name, hostname, w.Filename, w.Line, w.Key.Type(), xssh.FingerprintSHA256(w.Key), key.Type(), xssh.FingerprintSHA256(key))
	}
	if !o.AcceptNewHostKeys {
		return fmt.Errorf("host key of %s (%s) is unknown: %s has no entry for it; check its fingerprint %s %s and add it "+
			"(ssh-keyscan), or set ssh.acceptNewHostKeys: true to add keys of new hosts",
			o.Name, hostname, o.KnownHosts, key.Type(), xssh.FingerprintSHA256(key))
	}
	return appendKnownHost(o.KnownHosts, hostname, key)
}

// loadKnownHosts reads the file afresh on every handshake so that a key
// added by another host's handshake (accept-new) or by hand is seen.
func loadKnownHosts(path string, createIfMissing bool) (xssh.HostKeyCallback, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && createIfMissing {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("creating the directory of known_hosts file %s: %w", path, err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("creating known_hosts file %s: %w", path, err)
		}
		f.Close()
	}
	cb, err := knownhosts.New(path)
	if err != nil {
		return nil, fmt.Errorf("reading known_hosts file %s: %w", path, err)
	}
	return cb, nil
}

func appendKnownHost(path, hostname string, key xssh.PublicKey) error {
	knownHostsWrites.Lock()
	defer knownHostsWrites.Unlock()
	// Another handshake may have added this host since the file was read.
	if cb, err := knownhosts.New(path); err == nil {
		var keyErr *knownhosts.KeyError
		if err := cb(hostname, placeholderAddr{}, key); err == nil {
			return nil
		} else if errors.As(err, &keyErr) && len(keyErr.Want) > 0 {
			return fmt.Errorf("host key of %s changed while connecting: %s now has a different key for it", hostname, path)
		}
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("adding the host key of %s to %s: %w", hostname, path, err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("adding the host key of %s to %s: %w", hostname, path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("adding the host key of %s to %s: %w", hostname, path, err)
	}
	return nil
}

// placeholderAddr stands for the remote address when only the host name is
// checked (knownhosts prefers the name when one is given).
type placeholderAddr struct{}

func (placeholderAddr) Network() string { return "tcp" }
func (placeholderAddr) String() string  { return "0.0.0.0:0" }

var probeKey = sync.OnceValue(func() xssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		panic(err)
	}
	k, err := xssh.NewPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return k
})

// knownKeyAlgorithms lists the host key algorithms of the keys known_hosts
// has for hostname. The client offers only these, because otherwise the
// server may present a key of another type than the one on file, and that
// would look like a changed key.
func knownKeyAlgorithms(path, hostname string) []string {
	cb, err := knownhosts.New(path)
	if err != nil {
		return nil
	}
	var keyErr *knownhosts.KeyError
	// A fresh random key matches nothing, so the error lists every key on
	// file for the host.
	if err := cb(hostname, placeholderAddr{}, probeKey()); !errors.As(err, &keyErr) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	add := func(a ...string) {
		for _, x := range a {
			if !seen[x] {
				seen[x] = true
				algos = append(algos, x)
			}
		}
	}
	for _, w := range keyErr.Want {
		switch t := w.Key.Type(); t {
		case xssh.KeyAlgoRSA:
			add(xssh.KeyAlgoRSASHA512, xssh.KeyAlgoRSASHA256, xssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	return algos
}
