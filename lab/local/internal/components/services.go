package components

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/hostssh"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

// Phase is a step of a boot: every host's services of one phase are
// started and ready before the next phase starts (etcd before the API
// servers before the nodes), as a fleet powered on in order would.
type Phase int

const (
	PhaseSSH Phase = iota
	PhaseEtcd
	PhaseAPIServer
	PhaseControlPlane
	PhaseRuntime
	PhaseNode
)

func (p Phase) String() string {
	return [...]string{"sshd", "etcd", "API servers", "controller-managers and schedulers", "container runtimes", "kubelets and kube-proxies"}[p]
}

// AllPhases are the phases of a boot, in order.
var AllPhases = []Phase{PhaseSSH, PhaseEtcd, PhaseAPIServer, PhaseControlPlane, PhaseRuntime, PhaseNode}

// Service is one process a host runs.
type Service struct {
	Name  string
	Phase Phase
	// Spec is how the service is started on h; it writes the config
	// files the service reads.
	Spec func(c *Cluster, h Host) (supervise.Spec, error)
	// Ready returns nil once the service serves.
	Ready     func(ctx context.Context, c *Cluster, h Host) error
	ReadyWait time.Duration
	StopGrace time.Duration
	// RestartDelay, when set, restarts the service that long after it
	// exits, until it is stopped (see the supervise package's keeper).
	RestartDelay time.Duration
	// StartAlone, when set, wraps the launch of the service: the
	// kubelets' start-up races for a machine-wide socket (see
	// deviceplugin.go).
	StartAlone func(ctx context.Context, c *Cluster, h Host, launch func() (int, error)) (int, error)
	// After, when set, is waited for before the service starts: what
	// another service of the host must have done first for the two not
	// to race. running says whether a service of the host runs. It
	// bounds its own wait; its error says what it gave up on, and the
	// service starts anyway.
	After func(ctx context.Context, c *Cluster, h Host, running func(service string) bool) error
}

// ComponentRestartDelay is how long an exited controller-manager or
// scheduler stays down before it is started again: about what the
// kubelet takes to restart a static pod's container after its first exit,
// short enough that a component that lost its lease is back within a
// lease period.
const ComponentRestartDelay = 2 * time.Second

// ReadyTimeout is how long the service is given to become ready.
func (s Service) ReadyTimeout() time.Duration {
	if s.ReadyWait > 0 {
		return s.ReadyWait
	}
	return 60 * time.Second
}

// StopOrder lists every service the lab may run, in the order a clean
// shutdown stops them.
var StopOrder = []string{
	lab.ServiceCSINode, lab.ServicePolicyAgent, "kube-proxy", "kubelet", "containerd",
	lab.ServiceCSIAttacher, lab.ServiceCSIController,
	"kube-scheduler", "kube-controller-manager", "keepalived", "kube-apiserver",
	"etcd", lab.ServiceHistoryStore, "sshd",
}

// SharedPaths are the fixed machine-wide paths the lab's components
// create whatever they are told.
var SharedPaths = []string{
	"/var/lib/kubelet",
	"/var/lib/cni",
	"/run/containerd",
	"/var/log/containers",
	"/var/log/pods",
	"/run/sshd",
	// The iptables lock both agents' DaemonSets mount from the host.
	xtablesLock,
}

// SSHD is the host's sshd, the first service of every host.
func SSHD() Service {
	return Service{
		Name:  "sshd",
		Phase: PhaseSSH,
		Spec: func(c *Cluster, h Host) (supervise.Spec, error) {
			f := c.SSH
			env := sessionEnv(c, h)
			if err := os.WriteFile(f.SSHDConfigFile(h.Name), []byte(hostssh.SSHDConfig(f, h.Name, h.Address, env)), 0o644); err != nil {
				return supervise.Spec{}, fmt.Errorf("writing sshd config: %w", err)
			}
			// sshd needs its privilege separation directory, which
			// Debian creates only when its own sshd is started.
			if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
				return supervise.Spec{}, err
			}
			return supervise.Spec{
				Argv: []string{"/usr/sbin/sshd", "-D", "-e", "-f", f.SSHDConfigFile(h.Name)},
			}, nil
		},
		Ready: func(ctx context.Context, c *Cluster, h Host) error {
			return tcpReady(ctx, h.Address, 22)
		},
		ReadyWait: 15 * time.Second,
		StopGrace: 5 * time.Second,
	}
}

// sessionEnv is the environment an SSH session on the host gets: the
// lab's binaries on PATH and, on nodes, crictl pointed at the host's own
// containerd (the machine may run others).
func sessionEnv(c *Cluster, h Host) []string {
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if dirs := c.binDirs(); len(dirs) > 0 {
		path = strings.Join(dirs, ":") + ":" + path
	}
	// A home of the lab's own: root's dotfiles on this machine (shell
	// setup of whoever uses it) are no part of a lab host, and can stall
	// or change every command.
	env := []string{"PATH=" + path, "HOME=" + c.SSH.Home()}
	if h.Node != nil {
		sock := "unix://" + c.Dirs.ContainerdSocket(h.Name)
		env = append(env, "CONTAINER_RUNTIME_ENDPOINT="+sock, "IMAGE_SERVICE_ENDPOINT="+sock,
			"CONTAINERD_ADDRESS="+c.Dirs.ContainerdSocket(h.Name), "CONTAINERD_NAMESPACE=k8s.io")
	}
	return env
}

func tcpReady(ctx context.Context, addr string, port int) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addr, fmt.Sprint(port)))
	if err != nil {
		return err
	}
	return c.Close()
}
