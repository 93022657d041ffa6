package local

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/faultline/faultline/lab/local/internal/hostssh"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

// phase is a step of a boot: every host's services of one phase are
// started and ready before the next phase starts (etcd before the API
// servers before the nodes), as a fleet powered on in order would.
type phase int

const (
	phaseSSH phase = iota
	phaseEtcd
	phaseAPIServer
	phaseControlPlane
	phaseRuntime
	phaseNode
)

func (p phase) String() string {
	return [...]string{"sshd", "etcd", "API servers", "controller-managers and schedulers", "container runtimes", "kubelets and kube-proxies"}[p]
}

var allPhases = []phase{phaseSSH, phaseEtcd, phaseAPIServer, phaseControlPlane, phaseRuntime, phaseNode}

// service is one process a host runs.
type service struct {
	name  string
	phase phase
	spec  func(h *Host) (supervise.Spec, error)
	// ready returns nil once the service serves.
	ready     func(ctx context.Context, h *Host) error
	readyWait time.Duration
	stopGrace time.Duration
	// restartDelay, when set, restarts the service that long after it
	// exits, until it is stopped (see keeper.go).
	restartDelay time.Duration
	// startAlone, when set, wraps the launch of the service: the
	// kubelets' start-up races for a machine-wide socket (see
	// deviceplugin.go).
	startAlone func(ctx context.Context, h *Host, launch func() (int, error)) (int, error)
}

// componentRestartDelay is how long an exited controller-manager or
// scheduler stays down before it is started again: about what the
// kubelet takes to restart a static pod's container after its first exit,
// short enough that a component that lost its lease is back within a
// lease period.
const componentRestartDelay = 2 * time.Second

func (s service) readyTimeout() time.Duration {
	if s.readyWait > 0 {
		return s.readyWait
	}
	return 60 * time.Second
}

// services lists what a host runs, in boot order.
func (h *Host) services() []service {
	out := []service{sshdService()}
	if h.lab.bareHosts {
		return out
	}
	return append(out, h.lab.clusterServices(h)...)
}

func sshdService() service {
	return service{
		name:  "sshd",
		phase: phaseSSH,
		spec: func(h *Host) (supervise.Spec, error) {
			f := h.lab.ssh
			env := h.lab.sshSessionEnv(h)
			if err := os.WriteFile(f.SSHDConfigFile(h.cfg.Name), []byte(hostssh.SSHDConfig(f, h.cfg.Name, h.cfg.Address, env)), 0o644); err != nil {
				return supervise.Spec{}, fmt.Errorf("writing sshd config: %w", err)
			}
			// sshd needs its privilege separation directory, which
			// Debian creates only when its own sshd is started.
			if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
				return supervise.Spec{}, err
			}
			return supervise.Spec{
				Argv: []string{"/usr/sbin/sshd", "-D", "-e", "-f", f.SSHDConfigFile(h.cfg.Name)},
			}, nil
		},
		ready: func(ctx context.Context, h *Host) error {
			return tcpReady(ctx, h.cfg.Address, 22)
		},
		readyWait: 15 * time.Second,
		stopGrace: 5 * time.Second,
	}
}

func tcpReady(ctx context.Context, addr string, port int) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addr, fmt.Sprint(port)))
	if err != nil {
		return err
	}
	return c.Close()
}

func mustPrefix(addr string, bits int) netip.Prefix {
	return netip.PrefixFrom(netip.MustParseAddr(addr), bits)
}
