// Package lab describes where a cluster lives and how its hosts are reached.
//
// A Lab resets to a clean state and hands out Hosts. Faults are written only
// against these interfaces, so every fault works on every lab that can do
// what it needs and says clearly (ErrUnsupported) when a lab cannot.
// Backends live in sub-packages (local, static, proxmox, vsphere; lab/ssh
// is their shared SSH client), never import the framework or the fixtures,
// and register their kind, lab-file section and checks (Register); this
// package knows none of them, and lab/backends links them all.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Role is what a host does in the cluster.
type Role string

const (
	RoleEtcd         Role = "etcd"
	RoleControlPlane Role = "control-plane"
	RoleWorker       Role = "worker"
	// RoleStorage is a host that holds the lab's stored data outside the
	// cluster: the volumes' backing files and an external key-value store
	// (the stored-data workloads). It runs no kubelet and takes no other role.
	RoleStorage Role = "storage"
)

// Well-known service names a Host can stop, start and signal.
const (
	ServiceEtcd              = "etcd"
	ServiceAPIServer         = "kube-apiserver"
	ServiceControllerManager = "kube-controller-manager"
	ServiceScheduler         = "kube-scheduler"
	ServiceKubelet           = "kubelet"
	ServiceContainerd        = "containerd"
	ServiceKubeProxy         = "kube-proxy"
	// ServicePolicyAgent is a worker's NetworkPolicy agent (on the local
	// lab kube-router's firewall; the service name is what a lab runs it
	// as).
	ServicePolicyAgent = "kube-router"
	ServiceKeepalived  = "keepalived"
	// The storage host's services and the workers' CSI node driver (the
	// local lab's names; see lab/local/csidriver).
	ServiceHistoryStore  = "history-etcd"
	ServiceCSIController = "csi-controller"
	ServiceCSIAttacher   = "csi-attacher"
	ServiceCSINode       = "csi-node"
)

// ErrUnsupported is wrapped by every error that says a lab cannot do an
// operation at all (as opposed to trying and failing).
var ErrUnsupported = errors.New("not supported by this lab")

// ErrNotConnectedByHost is wrapped by a Host.Dial error when the host was
// reached and did not make the connection asked for: the target refused
// or did not answer, not the host.
var ErrNotConnectedByHost = errors.New("the host did not make the connection")

// Unsupported returns an error wrapping ErrUnsupported that names the lab
// kind and the operation.
func Unsupported(kind, op, why string) error {
	if why == "" {
		return fmt.Errorf("%s lab: %s: %w", kind, op, ErrUnsupported)
	}
	return fmt.Errorf("%s lab: %s: %w: %s", kind, op, ErrUnsupported, why)
}

// ProgressReporter is a lab that says what it is doing during its long
// operations (up, reset, down): a line per step, with the time since the
// operation began.
type ProgressReporter interface {
	SetProgress(w io.Writer)
}

// Result is the outcome of a command run on a host.
type Result struct {
	Stdout   string
	Stderr   string
	ExitCode int
}

// ServiceState is what a host reports about one of its services.
type ServiceState struct {
	Name  string `json:"name"`
	PID   int    `json:"pid,omitempty"`
	State string `json:"state"` // running, stopped, frozen, exited, unknown
	// Started is when the current process started, where the lab knows.
	Started time.Time `json:"started,omitzero"`
	// Restarts counts the times the host's supervisor started the
	// service again after it exited on its own or was killed (since the
	// host booted); LastRestart is the latest. Zero where the lab does not
	// restart the service or cannot tell.
	Restarts    int       `json:"restarts,omitempty"`
	LastRestart time.Time `json:"lastRestart,omitzero"`
}

// Host is one machine of a lab.
type Host interface {
	Name() string
	Roles() []Role
	HasRole(Role) bool
	// Address is the host's management address (no port).
	Address() string
	// Run runs a shell command on the host. A non-zero exit is not an
	// error: it is reported in Result.ExitCode. Errors mean the command
	// could not be run (unreachable, timeout, auth).
	Run(ctx context.Context, cmd string) (Result, error)
	// Dial opens a connection that starts on the host, without running a
	// command there: network "tcp" to address (host:port) as the host
	// routes it, or "unix" to the socket at path address on the host.
	// Over SSH it is a channel of the host's connection (port
	// forwarding), opened as the SSH user (the lab's sudo does not
	// apply). An error wraps ErrNotConnectedByHost when the host was
	// reached and did not make the connection (a refusal, which wraps the
	// matching syscall error where the host says it, such as
	// syscall.ECONNREFUSED for a refused port or a socket nobody listens
	// on; or no answer yet when ctx ended); any other error means the
	// host itself was not reached. ctx bounds the dial, not the
	// connection.
	Dial(ctx context.Context, network, address string) (net.Conn, error)
	StopService(ctx context.Context, name string) error
	StartService(ctx context.Context, name string) error
	// Signal sends sig to the main process of the named service.
	Signal(ctx context.Context, name string, sig syscall.Signal) error
	Services(ctx context.Context) ([]ServiceState, error)
	// PowerOff is a hard power off: every process of the host, its
	// containers included, stops at once and its links go down.
	PowerOff(ctx context.Context) error
	// PowerOn boots the host: links up, services started as at boot.
	PowerOn(ctx context.Context) error
}

// ResetKind says how a lab returns to a clean state; reports record it.
type ResetKind string

const (
	// ResetColdSnapshot restores every host from one copy taken with the
	// whole fleet stopped.
	ResetColdSnapshot ResetKind = "cold-snapshot"
	// ResetCleanup only removes what faultline created and waits for a
	// clean start: state from earlier runs can survive.
	ResetCleanup ResetKind = "cleanup-only"
)

// Info is what every run record says about the lab it ran on.
type Info struct {
	Name              string            `json:"name"`
	Kind              string            `json:"kind"`
	Topology          string            `json:"topology"`
	ResetKind         ResetKind         `json:"resetKind"`
	KubernetesVersion string            `json:"kubernetesVersion,omitempty"`
	EtcdVersion       string            `json:"etcdVersion,omitempty"`
	TimerProfile      string            `json:"timerProfile,omitempty"`
	Timers            map[string]string `json:"timers,omitempty"`
}

// HostStatus is one host's line in `faultline lab status`.
type HostStatus struct {
	Name     string         `json:"name"`
	Roles    []Role         `json:"roles"`
	Address  string         `json:"address"`
	Power    string         `json:"power"` // on, off, unknown
	Services []ServiceState `json:"services,omitempty"`
	Detail   string         `json:"detail,omitempty"`
}

// Status is what `faultline lab status` prints.
type Status struct {
	Info  Info         `json:"info"`
	Up    bool         `json:"up"`
	Hosts []HostStatus `json:"hosts"`
}

// Lab is where a cluster lives.
type Lab interface {
	Info() Info
	Config() *Config
	// Timers are the timers the lab's cluster runs with: those the lab
	// ran it with where it built the cluster, else those its lab file
	// declares; an error says why neither is known.
	Timers() (Timers, error)
	Hosts() []Host
	// Host returns the named host or an error naming the unknown host.
	Host(name string) (Host, error)
	// Kubeconfig returns the path of an admin kubeconfig. An empty target
	// means the address a user's kubectl would use (the virtual address
	// where there is one); otherwise target names a control-plane host and
	// the kubeconfig points at that host's API server alone.
	Kubeconfig(target string) (string, error)
	// StateDir is where the lab keeps its state, the heal ledger included.
	StateDir() string
	Reset(ctx context.Context) error
	Status(ctx context.Context) (Status, error)
	Close() error
}

// Provisioner is a Lab that can also be built and torn down (the local lab).
type Provisioner interface {
	Lab
	Up(ctx context.Context) error
	Down(ctx context.Context) error
}

// HostsWithRole returns the hosts of l that have role r, in config order.
func HostsWithRole(l Lab, r Role) []Host {
	var out []Host
	for _, h := range l.Hosts() {
		if h.HasRole(r) {
			out = append(out, h)
		}
	}
	return out
}

// WaitFor polls cond every interval until it returns true, an error, or ctx
// or timeout ends; what it was waiting for is named in the error.
func WaitFor(ctx context.Context, what string, timeout, interval time.Duration, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(interval):
		}
	}
}

// ColdSnapshotter is a Lab that can take its own cold snapshot: the whole
// fleet powered off, one snapshot of every host. replace allows an existing
// snapshot of the same name to be replaced.
type ColdSnapshotter interface {
	ColdSnapshot(ctx context.Context, replace bool) error
}
