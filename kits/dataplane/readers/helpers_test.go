package readers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faultline/faultline/lab"
)

// agentsTestdata is a capture of what a node's agents applied
// (testdata/README.md).
func agentsTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// shellHost runs commands with this machine's sh, as an SSH session on a
// lab host would; it can do nothing else.
type shellHost struct{}

func (shellHost) Name() string          { return "worker2" }
func (shellHost) Roles() []lab.Role     { return []lab.Role{lab.RoleWorker} }
func (shellHost) HasRole(lab.Role) bool { return false }
func (shellHost) Address() string       { return "127.0.0.1" }
func (shellHost) Run(ctx context.Context, cmd string) (lab.Result, error) {
	var out, errb strings.Builder
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return lab.Result{Stdout: out.String(), Stderr: errb.String(), ExitCode: exit.ExitCode()}, nil
	}
	return lab.Result{Stdout: out.String(), Stderr: errb.String()}, err
}
func (shellHost) StopService(context.Context, string) error            { return lab.ErrUnsupported }
func (shellHost) StartService(context.Context, string) error           { return lab.ErrUnsupported }
func (shellHost) Signal(context.Context, string, syscall.Signal) error { return lab.ErrUnsupported }
func (shellHost) Services(context.Context) ([]lab.ServiceState, error) {
	return nil, lab.ErrUnsupported
}
func (shellHost) PowerOff(context.Context) error { return lab.ErrUnsupported }
func (shellHost) PowerOn(context.Context) error  { return lab.ErrUnsupported }

// Dial dials from this machine, as the worker would from its own; a
// connection it could not make is the target's failure, not the host's.
func (shellHost) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, fmt.Errorf("dialing %s %s from worker2: %w: %w", network, address, lab.ErrNotConnectedByHost, err)
	}
	return c, nil
}

func listen(t *testing.T, addr string) net.Listener {
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// unreachableWorker cannot be reached at all.
type unreachableWorker struct{ shellHost }

func (unreachableWorker) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, fmt.Errorf("connecting to worker2 (10.0.0.32:22): dial tcp: %w", syscall.EHOSTUNREACH)
}
