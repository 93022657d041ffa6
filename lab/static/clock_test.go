package static

import (
	"context"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

// Hosts with one boot id share a wall clock, hosts with their own do not,
// and too few answers leave it unknown: shared, so nothing steps it.
func TestSharesWallClockByBootID(t *testing.T) {
	mounts := &mountTable{path: "/dev/null"}
	node := func(name string, down bool) lab.Host {
		return shellNode{name: name, roles: []lab.Role{lab.RoleWorker}, mounts: mounts, down: down}
	}
	cfg := &lab.Config{Name: "fleet", Kind: Kind}

	// Every shellNode runs on this machine: one kernel.
	l := New(cfg, Options{})
	l.testHosts = []lab.Host{node("w1", false), node("w2", false)}
	if shared, why := lab.SharesWallClock(l); !shared || !strings.Contains(why, "w1, w2 run on one kernel") {
		t.Errorf("two hosts of one kernel: %v %q", shared, why)
	}

	l = New(cfg, Options{})
	l.testHosts = []lab.Host{node("w1", false), node("w2", true)}
	if shared, why := l.SharesWallClock(); !shared || !strings.Contains(why, "too few to tell") {
		t.Errorf("one host answering: %v %q, want shared (cannot tell)", shared, why)
	}
	if l.clock.known {
		t.Errorf("an answer that could not tell was kept")
	}

	l = New(cfg, Options{})
	l.testHosts = []lab.Host{ownKernel{node("w1", false), "a"}, ownKernel{node("w2", false), "b"}}
	if shared, why := l.SharesWallClock(); shared {
		t.Errorf("hosts with their own kernels: shared (%s)", why)
	}
}

// ownKernel answers the boot id question with id.
type ownKernel struct {
	lab.Host
	id string
}

func (o ownKernel) Run(ctx context.Context, cmd string) (lab.Result, error) {
	if cmd == "cat /proc/sys/kernel/random/boot_id" {
		return lab.Result{Stdout: o.id + "\n"}, nil
	}
	return o.Host.Run(ctx, cmd)
}
