package ssh_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	xssh "golang.org/x/crypto/ssh"

	"github.com/faultline/faultline/lab/internal/sshdtest"
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
		if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &refusal) {
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
	if _, err := h.Dial(ctx, "unix", sock); err == nil {
		t.Fatal("Dial while the server is down succeeded")
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
