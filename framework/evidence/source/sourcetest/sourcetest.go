// Package sourcetest holds the fakes the tests of evidence readers share:
// a lab host backed by this machine's sh and a listener to point it at.
// It is linked only into tests.
package sourcetest

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/labtest"
)

// ShellHost runs commands with this machine's sh, as an SSH session on a
// lab host would; it can do nothing else. It calls itself worker2.
type ShellHost struct{}

func (ShellHost) Name() string          { return "worker2" }
func (ShellHost) Roles() []lab.Role     { return []lab.Role{lab.RoleWorker} }
func (ShellHost) HasRole(lab.Role) bool { return false }
func (ShellHost) Address() string       { return "127.0.0.1" }
func (ShellHost) Run(ctx context.Context, cmd string) (lab.Result, error) {
	return labtest.Sh(ctx, cmd)
}
func (ShellHost) StopService(context.Context, string) error            { return lab.ErrUnsupported }
func (ShellHost) StartService(context.Context, string) error           { return lab.ErrUnsupported }
func (ShellHost) Signal(context.Context, string, syscall.Signal) error { return lab.ErrUnsupported }
func (ShellHost) Services(context.Context) ([]lab.ServiceState, error) {
	return nil, lab.ErrUnsupported
}
func (ShellHost) PowerOff(context.Context) error { return lab.ErrUnsupported }
func (ShellHost) PowerOn(context.Context) error  { return lab.ErrUnsupported }

// Dial dials from this machine, as the worker would from its own; a
// connection it could not make is the target's failure, not the host's.
func (ShellHost) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, address)
	if err != nil {
		return nil, fmt.Errorf("dialing %s %s from worker2: %w: %w", network, address, lab.ErrNotConnectedByHost, err)
	}
	return c, nil
}

// UnreachableWorker is a ShellHost that cannot be reached at all.
type UnreachableWorker struct{ ShellHost }

func (UnreachableWorker) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, fmt.Errorf("connecting to worker2 (10.0.0.32:22): dial tcp: %w", syscall.EHOSTUNREACH)
}

// Listen listens on a free TCP port of addr until the test ends; it skips
// the test when addr cannot be listened on.
func Listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
