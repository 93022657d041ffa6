package ssh_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/lab/internal/sshdtest"
	"github.com/faultline/faultline/lab/ssh"
)

func TestOptionsRefuseBadSessionAndIdentitySettings(t *testing.T) {
	base := ssh.Options{Name: "node1", Address: "127.0.0.1", User: "root", KnownHosts: "/k", IdentityFile: "/id"}
	for _, tc := range []struct {
		name   string
		change func(*ssh.Options)
		want   string
	}{
		{"negative max sessions", func(o *ssh.Options) { o.MaxSessions = -1 }, "max sessions -1"},
		{"identity on dial without a file", func(o *ssh.Options) { o.IdentityFile, o.UseAgent, o.ReadIdentityOnDial = "", true, true }, "needs an identity file"},
	} {
		o := base
		tc.change(&o)
		_, err := ssh.New(o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "node1") {
			t.Errorf("%s: New = %v, want an error naming node1 and saying %q", tc.name, err, tc.want)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A lab that makes its key when it is brought up builds its clients
// before the key exists, and makes the key anew when brought up again.
func TestIdentityReadOnDialMayBeMadeAfterTheClient(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	o := mustOptions(t, f)
	later := filepath.Join(t.TempDir(), "id_later")
	o.IdentityFile, o.ReadIdentityOnDial = later, true
	c, err := ssh.New(o)
	if err != nil {
		t.Fatalf("New before the key exists: %v", err)
	}
	defer c.Close()
	ctx := testContext(t)
	if _, err := c.Run(ctx, "true"); err == nil || !strings.Contains(err.Error(), later) || !strings.Contains(err.Error(), "node1") {
		t.Fatalf("Run before the key exists: %v, want an error naming the host and the key file", err)
	}

	copyFile(t, f.client.Path, later)
	res, err := c.Run(ctx, "echo in")
	if err != nil || res.Stdout != "in\n" {
		t.Fatalf("Run once the key exists = %+v, %v", res, err)
	}

	// The key made anew (here one the server does not authorize) is the
	// one offered at the next dial; the live connection is not affected.
	copyFile(t, sshdtest.NewKey(t, t.TempDir(), "stranger").Path, later)
	if _, err := c.Run(ctx, "true"); err != nil {
		t.Fatalf("Run on the live connection after the key changed: %v", err)
	}
	c.Disconnect()
	if _, err := c.Run(ctx, "true"); !errors.Is(err, ssh.ErrAuth) {
		t.Fatalf("Run after a redial with an unauthorized key: %v, want %v", err, ssh.ErrAuth)
	}
}

// runConcurrently runs n commands at once; each sleeps with a file of its
// own in dir, then prints how many such files there are.
func runConcurrently(t *testing.T, c *ssh.Client, n int, sleep time.Duration) (peak int) {
	t.Helper()
	dir := t.TempDir()
	ctx := testContext(t)
	counts := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.Run(ctx, fmt.Sprintf(`touch %[1]s/$$; sleep %[2]g; ls %[1]s | wc -l; rm %[1]s/$$`, dir, sleep.Seconds()))
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			if err == nil {
				counts[i], err = strconv.Atoi(strings.TrimSpace(res.Stdout))
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		peak = max(peak, counts[i])
	}
	return peak
}

func TestMaxSessionsBoundsConcurrentCommands(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	o := mustOptions(t, f)
	o.MaxSessions = 2
	c, err := ssh.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n, sleep = 6, 300 * time.Millisecond
	start := time.Now()
	peak := runConcurrently(t, c, n, sleep)
	if peak > 2 {
		t.Errorf("%d commands ran at once, want at most MaxSessions (2)", peak)
	}
	// Two at a time, six commands take three sleeps at least.
	if took := time.Since(start); took < n/2*sleep {
		t.Errorf("%d commands took %s, less than %s: more than two ran at once", n, took, n/2*sleep)
	}
}

// A server configured for more sessions than OpenSSH's default is used to
// the full: more than DefaultMaxSessions commands run at once.
func TestMaxSessionsAboveTheDefault(t *testing.T) {
	f := newFixture(t, sshdtest.Config{Extra: []string{"MaxSessions 40"}})
	o := mustOptions(t, f)
	o.MaxSessions = 16
	c, err := ssh.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peak := runConcurrently(t, c, 16, 1500*time.Millisecond)
	if peak <= ssh.DefaultMaxSessions || peak > 16 {
		t.Errorf("%d commands ran at once, want more than %d and at most 16", peak, ssh.DefaultMaxSessions)
	}
}
