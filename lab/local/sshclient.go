package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/faultline/faultline/lab"
)

// sshRunner runs commands on one host over SSH, verifying its key against
// the lab's known_hosts. It is small on purpose: the local lab needs no
// agent or jump host, only what every fault uses (Run).
type sshRunner struct {
	host, addr string
	files      sshFiles

	mu     sync.Mutex
	client *ssh.Client
}

func (r *sshRunner) dial(ctx context.Context) (*ssh.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		return r.client, nil
	}
	keyb, err := os.ReadFile(r.files.clientKey())
	if err != nil {
		return nil, fmt.Errorf("ssh to %s: client key: %w", r.host, err)
	}
	signer, err := ssh.ParsePrivateKey(keyb)
	if err != nil {
		return nil, fmt.Errorf("ssh to %s: client key: %w", r.host, err)
	}
	hk, err := knownhosts.New(r.files.knownHosts())
	if err != nil {
		return nil, fmt.Errorf("ssh to %s: known_hosts: %w", r.host, err)
	}
	cfg := &ssh.ClientConfig{
		User:            "root",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: hk,
		Timeout:         10 * time.Second,
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	addr := net.JoinHostPort(r.addr, "22")
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh to %s (%s): %w", r.host, addr, err)
	}
	// Bound the handshake by ctx too: a frozen sshd would hang it.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	stop()
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh to %s (%s): %w", r.host, addr, err)
	}
	r.client = ssh.NewClient(c, chans, reqs)
	return r.client, nil
}

func (r *sshRunner) drop(c *ssh.Client) {
	r.mu.Lock()
	if r.client == c {
		r.client = nil
	}
	r.mu.Unlock()
	c.Close()
}

// Run runs cmd; a non-zero exit is a result, not an error.
func (r *sshRunner) Run(ctx context.Context, cmd string) (lab.Result, error) {
	c, err := r.dial(ctx)
	if err != nil {
		return lab.Result{}, err
	}
	sess, err := c.NewSession()
	if err != nil {
		// The connection went stale (host powered off and on): redial once.
		r.drop(c)
		if c, err = r.dial(ctx); err != nil {
			return lab.Result{}, err
		}
		if sess, err = c.NewSession(); err != nil {
			r.drop(c)
			return lab.Result{}, fmt.Errorf("ssh to %s: session: %w", r.host, err)
		}
	}
	defer sess.Close()
	var out, errb bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errb
	done := make(chan error, 1)
	go func() { done <- sess.Run(cmd) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		r.drop(c)
		return lab.Result{Stdout: out.String(), Stderr: errb.String()}, fmt.Errorf("ssh to %s: %q: %w", r.host, cmd, ctx.Err())
	}
	res := lab.Result{Stdout: out.String(), Stderr: errb.String()}
	var ee *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitStatus()
	default:
		r.drop(c)
		return res, fmt.Errorf("ssh to %s: %q: %w", r.host, cmd, err)
	}
	return res, nil
}

func (r *sshRunner) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client != nil {
		r.client.Close()
		r.client = nil
	}
}
