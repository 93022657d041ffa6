package ssh_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/lab/internal/sshdtest"
	"github.com/faultline/faultline/lab/ssh"
)

// A host that is hard powered off sends nothing: its connections just go
// silent. Freezing the server's connection processes does the same.
func TestSilentConnectionIsDroppedAndRedialled(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	o := mustOptions(t, f)
	o.KeepAlive = 200 * time.Millisecond
	c, err := ssh.Dial(testContext(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testContext(t)
	before, err := c.Run(ctx, `echo "$SSH_CONNECTION"`)
	if err != nil {
		t.Fatal(err)
	}

	frozen := sshdtest.Descendants(f.server.Pid())
	for _, pid := range frozen {
		syscall.Kill(pid, syscall.SIGSTOP)
	}
	// Killed, not continued: the frozen connection must not come back.
	defer func() {
		for _, pid := range frozen {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()

	// Keepalives go unanswered; after a few the connection is closed and
	// the next command dials the (still listening) server again.
	time.Sleep(5 * o.KeepAlive)
	after, err := c.Run(ctx, `echo "$SSH_CONNECTION"`)
	if err != nil {
		t.Fatalf("Run after the connection went silent: %v", err)
	}
	if strings.Fields(before.Stdout)[1] == strings.Fields(after.Stdout)[1] {
		t.Fatalf("same client port %q: the silent connection was not replaced", after.Stdout)
	}
}

func TestAgentKeysAuthenticate(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Skipf("no ssh-agent: %v", err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i > 200 {
			t.Fatal("ssh-agent did not create its socket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	add := exec.Command("ssh-add", f.client.Path)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v: %s", err, out)
	}

	f.ssh.IdentityFile, f.ssh.UseAgent = "", true
	t.Setenv("SSH_AUTH_SOCK", sock)
	if _, err := f.newHost(t).Run(testContext(t), "true"); err != nil {
		t.Fatalf("Run with the agent's key: %v", err)
	}

	t.Setenv("SSH_AUTH_SOCK", "")
	_, err := f.newHost(t).Run(testContext(t), "true")
	if err == nil || !strings.Contains(err.Error(), "SSH_AUTH_SOCK") {
		t.Fatalf("Run with useAgent and no agent: %v, want an error naming SSH_AUTH_SOCK", err)
	}
}
