package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/faultline/faultline/lab"
)

// ErrAuth is wrapped when the server refused every credential offered.
var ErrAuth = errors.New("authentication refused")

// Client is a connection to one SSH server that is dialled on first use and
// again after it breaks. It is safe for concurrent use.
type Client struct {
	opts     Options
	target   string
	identity xssh.Signer
	jump     *Client
	ownsJump bool
	sessions chan struct{}

	// mu is held while dialling, so that callers arriving during a
	// reconnect wait for that one dial instead of each dialling.
	mu     sync.Mutex
	conn   *connection
	closed bool

	// pending counts the forwarded channels asked for and not yet
	// answered by the server, in all and per address (see Dial).
	pendingMu sync.Mutex
	pending   map[string]int
	pendingN  int
}

// connection is one live SSH connection; dead is closed when it ends.
type connection struct {
	client *xssh.Client
	dead   chan struct{}
}

func (c *connection) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// New checks the options and reads the identity file (unless it is to be
// read on each dial); it does not connect.
func New(opts Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	target, _ := o.target()
	c := &Client{opts: o, target: target, sessions: make(chan struct{}, o.MaxSessions)}
	if o.IdentityFile != "" && !o.ReadIdentityOnDial {
		s, err := loadIdentity(o.IdentityFile)
		if err != nil {
			return nil, fmt.Errorf("ssh to %s: %w", o.Name, err)
		}
		c.identity = s
	}
	switch {
	case o.Via != nil:
		c.jump = o.Via
	case o.Jump != nil:
		j, err := New(*o.Jump)
		if err != nil {
			return nil, err
		}
		c.jump, c.ownsJump = j, true
	}
	return c, nil
}

// NewJump makes the client for a lab's jump host, to be shared by its
// hosts (WithJump); nil when the lab has none. It does not connect.
func NewJump(c *lab.SSHConfig) (*Client, error) {
	if c == nil || c.Jump == "" {
		return nil, nil
	}
	o, err := OptionsFor("jump", "unused", c)
	if err != nil {
		return nil, err
	}
	return New(*o.Jump)
}

// Dial is New followed by a connection, so that a wrong address, key or
// credential is reported at once.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	if _, err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Name is the server's name used in errors.
func (c *Client) Name() string { return c.opts.Name }

// Close ends the connection (and the jump host's); later use fails.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	var err error
	if conn != nil {
		err = conn.client.Close()
	}
	if c.jump != nil && c.ownsJump {
		c.jump.Close()
	}
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Disconnect drops the current connection without closing the Client: the
// next use dials again. Backends call it after powering a host off.
func (c *Client) Disconnect() {
	c.mu.Lock()
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	if conn != nil {
		conn.client.Close()
	}
}

// connect returns the live connection, dialling when there is none.
func (c *Client) connect(ctx context.Context) (*connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("ssh to %s: client is closed", c.opts.Name)
	}
	if c.conn != nil && c.conn.alive() {
		return c.conn, nil
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

func (c *Client) dial(ctx context.Context) (*connection, error) {
	o := &c.opts
	ctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()

	identity := c.identity
	if o.ReadIdentityOnDial {
		s, err := loadIdentity(o.IdentityFile)
		if err != nil {
			return nil, fmt.Errorf("ssh to %s: %w", o.Name, err)
		}
		identity = s
	}

	var nc net.Conn
	var err error
	if c.jump != nil {
		nc, err = c.jump.Dial(ctx, "tcp", c.target)
		if err != nil {
			return nil, fmt.Errorf("connecting to %s (%s) through %s: %w", o.Name, c.target, c.jump.opts.Name, err)
		}
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", c.target)
		if err != nil {
			return nil, fmt.Errorf("connecting to %s (%s): %w", o.Name, c.target, err)
		}
	}

	auth, agentConn, err := authMethod(identity, o.UseAgent)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("ssh to %s: %w", o.Name, err)
	}
	defer agentConn.Close()
	check := &hostKeyCheck{opts: o}
	cfg := &xssh.ClientConfig{
		User:              o.User,
		Auth:              []xssh.AuthMethod{auth},
		HostKeyCallback:   check.callback,
		HostKeyAlgorithms: knownKeyAlgorithms(o.KnownHosts, c.target),
		Timeout:           o.ConnectTimeout,
	}
	// The handshake takes no context; closing the socket is what stops it
	// (a connection through a jump host has no deadlines to set).
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	sc, chans, reqs, err := xssh.NewClientConn(nc, c.target, cfg)
	if !stop() {
		if err == nil {
			sc.Close()
		}
		return nil, fmt.Errorf("ssh handshake with %s (%s): %w", o.Name, c.target, ctx.Err())
	}
	if err != nil {
		nc.Close()
		if check.refusal != nil {
			return nil, check.refusal
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("ssh to %s (%s) as %q: %w (offered: %s): %w",
				o.Name, c.target, o.User, ErrAuth, c.offered(), err)
		}
		return nil, fmt.Errorf("ssh handshake with %s (%s): %w", o.Name, c.target, err)
	}
	conn := &connection{client: xssh.NewClient(sc, chans, reqs), dead: make(chan struct{})}
	go func() {
		conn.client.Wait()
		close(conn.dead)
	}()
	go c.keepAlive(conn)
	return conn, nil
}

// offered names the kinds of credential tried, never their content.
func (c *Client) offered() string {
	var parts []string
	if c.opts.IdentityFile != "" {
		parts = append(parts, "key from "+c.opts.IdentityFile)
	}
	if c.opts.UseAgent {
		parts = append(parts, "keys of the SSH agent")
	}
	return strings.Join(parts, ", ")
}

// keepAlive closes conn when the server stops answering probes, so that a
// host that vanished without closing its connections is redialled.
func (c *Client) keepAlive(conn *connection) {
	t := time.NewTicker(c.opts.KeepAlive)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-conn.dead:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() {
			_, _, err := conn.client.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		select {
		case err := <-answered:
			if err != nil {
				conn.client.Close()
				return
			}
			misses = 0
		case <-time.After(c.opts.KeepAlive):
			misses++
			if misses >= keepAliveMisses {
				conn.client.Close()
				return
			}
		case <-conn.dead:
			return
		}
	}
}

// Dial opens a connection from the server: network "tcp" to address
// (host:port) as the server routes it (direct-tcpip, as ProxyJump uses),
// or "unix" to the socket at path address on the server
// (direct-streamlocal). The channel is opened as the SSH user. A dial on a
// connection that turned out to be broken redials once; a refusal by the
// server is returned at once, wrapping the matching syscall error where
// the server's message names one (see ChannelRefusal). ctx bounds the dial,
// not the connection.
//
// A dial that ctx ends once the channel is asked for is abandoned, not
// cancelled (its error wraps lab.ErrNotConnectedByHost and ctx's error):
// SSH cannot withdraw a channel request, so the server keeps trying
// (OpenSSH until the kernel gives up on the TCP connection, about two
// minutes for an address that drops packets), holding a socket meanwhile.
// At most MaxPendingDialsTo of those may wait for the server's answer per
// address and MaxPendingDials in all; past either, Dial fails at once with
// ErrTooManyPendingDials (and lab.ErrNotConnectedByHost).
func (c *Client) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
	default:
		return nil, fmt.Errorf("dialing %s %s from %s: network %q is neither tcp nor unix", network, address, c.opts.Name, network)
	}
	for attempt := 0; ; attempt++ {
		conn, err := c.connect(ctx)
		if err != nil {
			return nil, err
		}
		nc, err := c.openChannel(ctx, conn, network, address)
		if err == nil {
			return nc, nil
		}
		var refused *xssh.OpenChannelError
		if errors.As(err, &refused) {
			return nil, channelRefusal(network, refused)
		}
		if errors.Is(err, ErrTooManyPendingDials) || ctx.Err() != nil || attempt > 0 {
			return nil, err
		}
		// The connection broke since it was last used: drop it and dial
		// once more.
		c.drop(conn)
	}
}

// Bounds of the dials still waiting for the server's answer (see Dial):
// OpenSSH holds a socket for each, and by default may open 1024 files per
// connection. At one dial a second, an address that drops packets keeps
// about 127 waiting (Linux's SYN retries), so the bound per address
// leaves such an address one fresh attempt a second.
const (
	MaxPendingDialsTo = 160
	MaxPendingDials   = 480
)

// ErrTooManyPendingDials is wrapped by a dial refused because too many
// earlier ones still wait for the server's answer.
var ErrTooManyPendingDials = errors.New("too many dials still wait for the server's answer")

// openChannel asks the server for the channel, bounded by ctx; a channel
// granted after ctx ended is closed.
func (c *Client) openChannel(ctx context.Context, conn *connection, network, address string) (net.Conn, error) {
	key := network + " " + address
	c.pendingMu.Lock()
	if c.pending == nil {
		c.pending = map[string]int{}
	}
	if n := c.pending[key]; n >= MaxPendingDialsTo || c.pendingN >= MaxPendingDials {
		all := c.pendingN
		c.pendingMu.Unlock()
		return nil, fmt.Errorf("%w: %w: %d to %s, %d in all", lab.ErrNotConnectedByHost, ErrTooManyPendingDials, n, address, all)
	}
	c.pending[key]++
	c.pendingN++
	c.pendingMu.Unlock()
	type dialed struct {
		nc  net.Conn
		err error
	}
	res := make(chan dialed, 1)
	go func() {
		nc, err := conn.client.Dial(network, address)
		c.pendingMu.Lock()
		c.pendingN--
		if c.pending[key]--; c.pending[key] == 0 {
			delete(c.pending, key)
		}
		c.pendingMu.Unlock()
		res <- dialed{nc, err}
	}()
	select {
	case d := <-res:
		return d.nc, d.err
	case <-ctx.Done():
		go func() {
			if d := <-res; d.nc != nil {
				d.nc.Close()
			}
		}()
		return nil, fmt.Errorf("%w: no answer from %s yet: %w", lab.ErrNotConnectedByHost, c.opts.Name, ctx.Err())
	}
}

// PendingDials is how many dials still wait for the server's answer.
func (c *Client) PendingDials() int {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	return c.pendingN
}

func (c *Client) drop(conn *connection) {
	c.mu.Lock()
	if c.conn == conn {
		c.conn = nil
	}
	c.mu.Unlock()
	conn.client.Close()
}

// session opens a session, redialling once if the connection turned out
// to be broken.
func (c *Client) session(ctx context.Context) (*xssh.Session, error) {
	for attempt := 0; ; attempt++ {
		conn, err := c.connect(ctx)
		if err != nil {
			return nil, err
		}
		s, err := newSession(ctx, conn)
		if err == nil {
			return s, nil
		}
		var refused *xssh.OpenChannelError
		if errors.As(err, &refused) {
			// OpenSSH counts a closed session against MaxSessions until
			// our close reaches it, so a refusal right after other
			// sessions ended is retried: opening a session has no effect.
			if waitErr := sleepCtx(ctx, sessionRetryDelay(attempt)); waitErr != nil {
				return nil, fmt.Errorf("opening a session on %s: %w", c.opts.Name, err)
			}
			continue
		}
		if ctx.Err() != nil || attempt > 0 {
			return nil, fmt.Errorf("opening a session on %s: %w", c.opts.Name, err)
		}
		c.drop(conn)
	}
}

func sessionRetryDelay(attempt int) time.Duration {
	d := 20 * time.Millisecond << min(attempt, 5)
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// newSession is NewSession bounded by ctx: on a connection whose peer has
// vanished, opening a channel blocks until the keepalive gives up.
func newSession(ctx context.Context, conn *connection) (*xssh.Session, error) {
	type opened struct {
		s   *xssh.Session
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		s, err := conn.client.NewSession()
		ch <- opened{s, err}
	}()
	select {
	case o := <-ch:
		return o.s, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.s != nil {
				o.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Run runs cmd through the server's shell until it ends or ctx does. A
// non-zero exit is reported in the Result, not as an error.
func (c *Client) Run(ctx context.Context, cmd string) (lab.Result, error) {
	select {
	case c.sessions <- struct{}{}:
		defer func() { <-c.sessions }()
	case <-ctx.Done():
		return lab.Result{}, fmt.Errorf("waiting for a free session on %s: %w", c.opts.Name, ctx.Err())
	}
	s, err := c.session(ctx)
	if err != nil {
		return lab.Result{}, err
	}
	defer s.Close()
	var stdout, stderr bytes.Buffer
	s.Stdout, s.Stderr = &stdout, &stderr
	if err := s.Start(cmd); err != nil {
		return lab.Result{}, fmt.Errorf("starting a command on %s: %w", c.opts.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Not waiting for the server to confirm: if the host is gone it
		// never will.
		s.Signal(xssh.SIGKILL)
		s.Close()
		// The output buffers may still be written to: none is returned.
		return lab.Result{ExitCode: -1}, fmt.Errorf("command on %s did not finish: %w", c.opts.Name, ctx.Err())
	}
	res := lab.Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *xssh.ExitError
	var missing *xssh.ExitMissingError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitStatus()
		if exit.Signal() != "" && exit.ExitStatus() == 0 {
			res.ExitCode = -1
		}
	case errors.As(err, &missing):
		res.ExitCode = -1
		return res, fmt.Errorf("command on %s ended without an exit status (connection lost?): %w", c.opts.Name, err)
	default:
		res.ExitCode = -1
		return res, fmt.Errorf("command on %s: %w", c.opts.Name, err)
	}
	return res, nil
}
