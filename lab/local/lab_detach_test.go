//go:build lab

package local

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

// provisionChild, run as a child test process, builds bare hosts for the
// state dir it is given and exits, leaving them running.
func TestProvisionChild(t *testing.T) {
	dir := os.Getenv("FAULTLINE_TEST_CHILD_STATE")
	if dir == "" {
		t.Skip("only run as the child of TestServicesOutliveTheCommand")
	}
	c := testConfig(t, "pair")
	c.StateDir = dir
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	l.bareHosts = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := l.provisionHosts(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestServicesOutliveTheCommand: a process builds the hosts and exits;
// another finds their services, reaches them and takes them down.
func TestServicesOutliveTheCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	c := testConfig(t, "pair")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	downAtCleanup(t, l, c)
	child := exec.Command(os.Args[0], "-test.run=^TestProvisionChild$", "-test.count=1")
	child.Env = append(os.Environ(), "FAULTLINE_TEST_CHILD_STATE="+c.StateDir)
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := l.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Up {
		t.Error("status does not say the lab is up")
	}
	for _, hs := range st.Hosts {
		if hs.Power != "on" {
			t.Errorf("host %s power %s", hs.Name, hs.Power)
		}
		for _, s := range hs.Services {
			if s.Name == "sshd" && (s.State != supervise.StateRunning || s.PID == 0) {
				t.Errorf("host %s: sshd %s (pid %d) after the command that started it exited", hs.Name, s.State, s.PID)
			}
		}
	}
	for _, h := range l.Hosts() {
		r, err := h.Run(ctx, "hostname")
		if err != nil || strings.TrimSpace(r.Stdout) != h.Name() {
			t.Errorf("host %s: hostname over SSH %q (%v)", h.Name(), r.Stdout, err)
		}
	}
	var _ lab.Lab = l
}
