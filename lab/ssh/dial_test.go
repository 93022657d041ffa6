package ssh_test

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/internal/sshdtest"
	"github.com/faultline/faultline/lab/ssh"
)

// echoServer answers each line it reads with the same line, on l.
func echoServer(t *testing.T, l net.Listener) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
}

func roundTrip(t *testing.T, c net.Conn, line string) string {
	t.Helper()
	defer c.Close()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatalf("writing through the forwarded connection: %v", err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading through the forwarded connection: %v", err)
	}
	return strings.TrimSuffix(got, "\n")
}

func TestDialReachesSocketsAndPortsOfTheHost(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t)
	ctx := testContext(t)
	sock := filepath.Join(t.TempDir(), "runtime.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, ul)
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, tl)

	c, err := h.Dial(ctx, "unix", sock)
	if err != nil {
		t.Fatalf("Dial unix: %v", err)
	}
	if got := roundTrip(t, c, "over the socket"); got != "over the socket" {
		t.Errorf("unix echo = %q", got)
	}
	c, err = h.Dial(ctx, "tcp", tl.Addr().String())
	if err != nil {
		t.Fatalf("Dial tcp: %v", err)
	}
	if got := roundTrip(t, c, "over tcp"); got != "over tcp" {
		t.Errorf("tcp echo = %q", got)
	}
	if _, err := h.Dial(ctx, "udp", "127.0.0.1:53"); err == nil || !strings.Contains(err.Error(), "neither tcp nor unix") {
		t.Errorf("Dial udp: %v, want it refused before asking the server", err)
	}
}

func TestDialRefusalsSayWhatTheyStandFor(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t)
	ctx := testContext(t)
	dir := t.TempDir()
	// A socket file nobody listens on any more, as a runtime killed
	// leaves it, and a path with no socket at all.
	dead := filepath.Join(dir, "dead.sock")
	l, err := net.Listen("unix", dead)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := tl.Addr().String()
	tl.Close()
	for _, c := range []struct{ network, address string }{
		{"unix", dead}, {"unix", filepath.Join(dir, "absent.sock")}, {"tcp", closedPort},
	} {
		_, err := h.Dial(ctx, c.network, c.address)
		var refusal *xssh.OpenChannelError
		if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &refusal) || !errors.Is(err, lab.ErrNotConnectedByHost) {
			t.Errorf("Dial %s %s: %v, want the server's refusal wrapping ECONNREFUSED", c.network, c.address, err)
			continue
		}
		for _, want := range []string{"node1", c.address} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Dial %s %s: %q does not name %q", c.network, c.address, err, want)
			}
		}
	}
}

func TestDialRedialsAfterTheServerRestarts(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t)
	ctx := testContext(t)
	sock := filepath.Join(t.TempDir(), "runtime.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	echoServer(t, l)
	c, err := h.Dial(ctx, "unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "before")
	f.server.Stop()
	if _, err := h.Dial(ctx, "unix", sock); err == nil || errors.Is(err, lab.ErrNotConnectedByHost) {
		t.Fatalf("Dial while the server is down: %v, want an error that says the host was not reached", err)
	}
	f.server.Restart()
	c, err = h.Dial(ctx, "unix", sock)
	if err != nil {
		t.Fatalf("Dial after the server came back: %v", err)
	}
	if got := roundTrip(t, c, "after"); got != "after" {
		t.Errorf("echo after the restart = %q", got)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatal(err)
	}
}

// silentServer is an SSH server that lets any key in and never answers a
// request for a channel until release is closed, then refuses them all:
// what a server trying to reach an address that drops packets looks like
// from the client.
func silentServer(t *testing.T) (addr string, hostKey xssh.PublicKey, release func()) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := xssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &xssh.ServerConfig{PublicKeyCallback: func(xssh.ConnMetadata, xssh.PublicKey) (*xssh.Permissions, error) { return nil, nil }}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(done) }); l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_, chans, reqs, err := xssh.NewServerConn(nc, cfg)
				if err != nil {
					return
				}
				go xssh.DiscardRequests(reqs)
				for ch := range chans {
					go func() {
						<-done
						ch.Reject(xssh.ConnectionFailed, "Connection timed out")
					}()
				}
			}()
		}
	}()
	return l.Addr().String(), signer.PublicKey(), func() { once.Do(func() { close(done) }) }
}

func TestAbandonedDialsAreCountedUntilTheServerAnswers(t *testing.T) {
	addr, hostKey, release := silentServer(t)
	dir := t.TempDir()
	key := sshdtest.NewKey(t, dir, "id_ed25519")
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	known := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(known, []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, hostKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ssh.New(ssh.Options{Name: "silent", Address: host, Port: port, User: "root", IdentityFile: key.Path, KnownHosts: known})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dial := func(address string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		_, err := c.Dial(ctx, "tcp", address)
		return err
	}
	// The first dial also connects; give it the time to.
	ctx, cancel := context.WithTimeout(testContext(t), 200*time.Millisecond)
	if _, err := c.Dial(ctx, "tcp", "10.9.9.9:80"); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lab.ErrNotConnectedByHost) {
		t.Fatalf("a dial the server does not answer: %v, want its context's end, the server reached", err)
	}
	cancel()
	for i := 1; i < ssh.MaxPendingDialsTo; i++ {
		if err := dial("10.9.9.9:80"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial %d: %v", i, err)
		}
	}
	waitFor(t, func() bool { return c.PendingDials() == ssh.MaxPendingDialsTo })
	start := time.Now()
	if err := dial("10.9.9.9:80"); !errors.Is(err, ssh.ErrTooManyPendingDials) || !errors.Is(err, lab.ErrNotConnectedByHost) || !strings.Contains(err.Error(), "10.9.9.9:80") {
		t.Fatalf("one dial more to the address: %v, want it refused", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("the refused dial took %s, want it refused at once", d)
	}
	// Another address still gets its attempts, up to the bound in all.
	for i := ssh.MaxPendingDialsTo; i < ssh.MaxPendingDials; i++ {
		if err := dial(fmt.Sprintf("10.9.%d.%d:80", 10+i/200, i%200)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial %d to another address: %v", i, err)
		}
	}
	waitFor(t, func() bool { return c.PendingDials() == ssh.MaxPendingDials })
	if err := dial("10.9.200.1:80"); !errors.Is(err, ssh.ErrTooManyPendingDials) {
		t.Fatalf("a dial past the bound in all: %v", err)
	}
	// Once the server answers them, dials go out again.
	release()
	waitFor(t, func() bool { return c.PendingDials() == 0 })
	ctx, cancel = context.WithTimeout(testContext(t), 5*time.Second)
	defer cancel()
	if _, err := c.Dial(ctx, "tcp", "10.9.9.9:80"); !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("a dial after the server answered the others: %v, want its refusal", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
