// Package hostssh is how a local lab's hosts are reached over SSH: the
// lab's client key, each host's key, the known_hosts file that pins them,
// each host's sshd config, and the client every SSH lab uses.
package hostssh

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/faultline/faultline/lab"
	labssh "github.com/faultline/faultline/lab/ssh"
)

// Sessions one host's sshd allows on a connection, and the client's bound
// on those it opens at once: below the server's, because OpenSSH counts a
// session that ended against the limit until the client's close reaches it.
const (
	sshdMaxSessions   = 100
	clientMaxSessions = 90
)

// ensureKey returns the ed25519 key at path, generating it (and its .pub)
// the first time.
func ensureKey(path, comment string) (ssh.Signer, error) {
	if b, err := os.ReadFile(path); err == nil {
		s, err := ssh.ParsePrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("reading key %s: %w", path, err)
		}
		return s, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading key %s: %w", path, err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key %s: %w", path, err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("encoding key %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(blk), 0o600); err != nil {
		return nil, fmt.Errorf("writing key %s: %w", path, err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey()))) + " " + comment + "\n"
	if err := os.WriteFile(path+".pub", []byte(pub), 0o644); err != nil {
		return nil, fmt.Errorf("writing key %s.pub: %w", path, err)
	}
	return s, nil
}

// Files is where the lab keeps its SSH material.
type Files struct {
	Dir string
	// SudoUser is the non-root login every host's sshd takes with a key
	// of its own (UserKey), once the machine has the user; empty: none.
	SudoUser string
}

// ClientKey is the private key every host accepts, AuthorizedKeys its
// public half as every sshd reads it, KnownHosts the file that pins every
// host's key, and Home the home dir of SSH sessions.
func (f Files) ClientKey() string      { return filepath.Join(f.Dir, "id_ed25519") }
func (f Files) AuthorizedKeys() string { return filepath.Join(f.Dir, "authorized_keys") }
func (f Files) KnownHosts() string     { return filepath.Join(f.Dir, "known_hosts") }
func (f Files) Home() string           { return filepath.Join(f.Dir, "home") }

// UserKey is the sudo user's private key, UserAuthorizedKeys its public
// half as every sshd reads it for that user alone.
func (f Files) UserKey() string { return filepath.Join(f.Dir, "users", f.SudoUser, "id_ed25519") }
func (f Files) UserAuthorizedKeys() string {
	return filepath.Join(f.Dir, "users", f.SudoUser, "authorized_keys")
}

// EnsureUserKey generates the sudo user's key, the first time, and the
// authorized_keys file sshd reads for it.
func EnsureUserKey(f Files, labName string) error {
	if f.SudoUser == "" {
		return errors.New("the lab has no sudo user")
	}
	s, err := ensureKey(f.UserKey(), "faultline-"+labName+"-"+f.SudoUser)
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.UserAuthorizedKeys(), ssh.MarshalAuthorizedKey(s.PublicKey()), 0o600); err != nil {
		return fmt.Errorf("writing the sudo user's authorized_keys: %w", err)
	}
	return nil
}

// HostKey is a host's private key, SSHDConfigFile its sshd's config.
func (f Files) HostKey(host string) string {
	return filepath.Join(f.Dir, "hosts", host, "ssh_host_ed25519_key")
}
func (f Files) SSHDConfigFile(host string) string {
	return filepath.Join(f.Dir, "hosts", host, "sshd_config")
}

// Client is the SSH client of one host, the one every SSH lab uses: root
// with the lab's key, the host's key checked against the lab's known_hosts.
// The lab is built before its key exists (Up makes it, and makes it anew
// after a Down), so the key is read at each dial.
func (f Files) Client(hc lab.HostConfig) (*labssh.Client, error) {
	return labssh.New(labssh.Options{
		Name:               hc.Name,
		Address:            hc.Address,
		User:               "root",
		IdentityFile:       f.ClientKey(),
		ReadIdentityOnDial: true,
		KnownHosts:         f.KnownHosts(),
		MaxSessions:        clientMaxSessions,
	})
}

// Ensure generates the client key, each host's key and the
// known_hosts file that pins every host key to its management address.
func Ensure(f Files, labName string, hosts map[string]string) error {
	if err := os.MkdirAll(f.Home(), 0o700); err != nil {
		return err
	}
	client, err := ensureKey(f.ClientKey(), "faultline-"+labName)
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.AuthorizedKeys(), ssh.MarshalAuthorizedKey(client.PublicKey()), 0o600); err != nil {
		return fmt.Errorf("writing authorized_keys: %w", err)
	}
	var kh strings.Builder
	for host, addr := range hosts {
		s, err := ensureKey(f.HostKey(host), "faultline-"+labName+"-"+host)
		if err != nil {
			return err
		}
		kh.WriteString(knownhosts.Line([]string{addr}, s.PublicKey()) + "\n")
	}
	if err := os.WriteFile(f.KnownHosts(), []byte(kh.String()), 0o644); err != nil {
		return fmt.Errorf("writing known_hosts: %w", err)
	}
	return nil
}

// SSHDConfig is one host's sshd: it listens on the host's management
// address only, accepts the lab's client key only, and gives sessions a
// PATH with the lab's binaries and crictl pointed at the host's runtime.
// It forwards TCP and unix sockets (the defaults, written out because
// lab.Host.Dial, and so the evidence read from the container runtime's
// socket and the endpoint probes, depends on them).
func SSHDConfig(f Files, host, addr string, env []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ListenAddress %s:22\n", addr)
	fmt.Fprintf(&b, "HostKey %s\n", f.HostKey(host))
	fmt.Fprintf(&b, "AuthorizedKeysFile %s\n", f.AuthorizedKeys())
	b.WriteString(`PidFile none
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
PrintLastLog no
UseDNS no
PermitUserEnvironment no
AllowTcpForwarding yes
AllowStreamLocalForwarding yes
MaxStartups 100:30:200
`)
	fmt.Fprintf(&b, "MaxSessions %d\n", sshdMaxSessions)
	if len(env) > 0 {
		fmt.Fprintf(&b, "SetEnv %s\n", strings.Join(env, " "))
	}
	if f.SudoUser != "" {
		// Last: a Match block runs to the end of the file. sshd reads an
		// AuthorizedKeysFile as the user, who may not traverse the lab's
		// state dir, so root reads it for sshd.
		fmt.Fprintf(&b, "Match User %s\n\tAuthorizedKeysFile none\n\tAuthorizedKeysCommand /usr/bin/cat %s\n\tAuthorizedKeysCommandUser root\n",
			f.SudoUser, f.UserAuthorizedKeys())
	}
	return b.String()
}
