// Package static is the lab for any cluster faultline did not build: a
// kubeconfig and hosts reachable over SSH. It has no snapshot: Reset deletes
// what faultline created and waits for a clean start, and Info says so, so
// that every report carries it. Hosts cannot be powered off.
package static

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/cleanup"
	"github.com/faultline/faultline/lab/guard"
	"github.com/faultline/faultline/lab/ssh"
	"github.com/faultline/faultline/lab/timers"
)

// Kind is the lab file's kind this backend serves.
const Kind = "static"

func init() {
	lab.Register(lab.Backend{Kind: Kind, Validate: lab.RemoteProblems, Timers: timers.Declared, Open: Open})
}

// Open builds the static lab a config describes; it connects to nothing.
func Open(c *lab.Config) (lab.Lab, error) {
	if c.Kind != Kind {
		return nil, fmt.Errorf("lab %s: kind %q is not %q", c.Name, c.Kind, Kind)
	}
	jump, err := ssh.NewJump(c.SSH)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", c.Name, err)
	}
	hosts, err := NewHosts(c, jump)
	if err != nil {
		closeJump(jump)
		return nil, err
	}
	return New(c, Options{Hosts: hosts, Close: func() error { return closeJump(jump) }}), nil
}

// closeJump closes a lab's shared jump client, if it has one.
func closeJump(j *ssh.Client) error {
	if j == nil {
		return nil
	}
	return j.Close()
}

// NewHosts builds an SSH host for every host of the config; opts (such as
// power operations) are chosen per host.
// The hosts share jump, which may be nil (see ssh.NewJump).
func NewHosts(c *lab.Config, jump *ssh.Client, opts ...func(lab.HostConfig) ([]ssh.HostOption, error)) ([]*ssh.Host, error) {
	var hosts []*ssh.Host
	for i, hc := range c.Hosts {
		hostOpts := []ssh.HostOption{ssh.WithLabKind(c.Kind)}
		if jump != nil {
			hostOpts = append(hostOpts, ssh.WithJump(jump))
		}
		for _, o := range opts {
			more, err := o(hc)
			if err != nil {
				closeAll(hosts)
				return nil, fmt.Errorf("lab %s: hosts[%d] (%s): %w", c.Name, i, hc.Name, err)
			}
			hostOpts = append(hostOpts, more...)
		}
		h, err := ssh.NewHost(hc, c.SSH, hostOpts...)
		if err != nil {
			closeAll(hosts)
			return nil, fmt.Errorf("lab %s: hosts[%d]: %w", c.Name, i, err)
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

func closeAll(hosts []*ssh.Host) {
	for _, h := range hosts {
		h.Close()
	}
}

// Options complete a Lab built by New.
type Options struct {
	Hosts []*ssh.Host
	// Power reports a host's power state for Status; nil reports "on" for a
	// host that answers over SSH and "unknown" otherwise.
	Power func(ctx context.Context, h *ssh.Host) (string, error)
	// Close releases what the backend holds besides the hosts.
	Close func() error
}

// Lab is a cluster reached by kubeconfig and SSH. Backends without a
// snapshot of their own (proxmox) build on it.
type Lab struct {
	cfg  *lab.Config
	opts Options

	kubeOnce sync.Once
	kube     kubernetes.Interface
	kubeErr  error

	mu            sync.Mutex
	serverVersion string

	// volumes serialises the reads of each volume and keeps what was
	// read of quiesced claims.
	volumes volumeLocks
	// clock is whether the hosts share a wall clock, once asked.
	clock wallClock
	// testHosts, when set, stand in for the SSH hosts in the storage
	// code's commands.
	testHosts []lab.Host
}

var _ lab.Lab = (*Lab)(nil)

// New builds a Lab over hosts already made.
func New(c *lab.Config, opts Options) *Lab {
	return &Lab{cfg: c, opts: opts}
}

// Info describes the lab for run records. The cluster is not faultline's:
// its timers are whatever its owner set, so the profile is marked as
// declared, and the Kubernetes version is the API server's own once a
// Reset has asked it (the lab file's until then).
func (l *Lab) Info() lab.Info {
	version := l.cfg.Kubernetes.Version
	l.mu.Lock()
	if l.serverVersion != "" {
		version = l.serverVersion
	}
	l.mu.Unlock()
	return lab.Info{
		Name:              l.cfg.Name,
		Kind:              l.cfg.Kind,
		Topology:          l.cfg.Name,
		ResetKind:         lab.ResetCleanup,
		KubernetesVersion: version,
		EtcdVersion:       l.cfg.Kubernetes.EtcdVersion,
		TimerProfile:      l.cfg.Kubernetes.TimerProfile,
		Timers: map[string]string{
			"profileSource": "declared in the lab file; faultline neither sets nor checks this cluster's timers",
		},
	}
}

func (l *Lab) Config() *lab.Config { return l.cfg }

// Timers are those of the profile the lab file declares: the lab neither
// sets nor reads its cluster's timers.
func (l *Lab) Timers() (lab.Timers, error) { return timers.Declared(l.cfg) }

func (l *Lab) Hosts() []lab.Host {
	out := make([]lab.Host, len(l.opts.Hosts))
	for i, h := range l.opts.Hosts {
		out[i] = h
	}
	return out
}

// SSHHosts are the lab's hosts with their SSH-specific methods.
func (l *Lab) SSHHosts() []*ssh.Host { return l.opts.Hosts }

func (l *Lab) Host(name string) (lab.Host, error) {
	for _, h := range l.opts.Hosts {
		if h.Name() == name {
			return h, nil
		}
	}
	return nil, fmt.Errorf("lab %s has no host %q", l.cfg.Name, name)
}

// Kubeconfig returns the config's kubeconfig for an empty target, and for a
// control-plane host a copy of it that points at that host's API server
// alone (written to the state directory).
func (l *Lab) Kubeconfig(target string) (string, error) {
	if target == "" {
		return l.kubeconfigPath(), nil
	}
	hc, ok := l.cfg.HostConfig(target)
	if !ok {
		return "", fmt.Errorf("lab %s has no host %q", l.cfg.Name, target)
	}
	h, _ := l.Host(target)
	if !h.HasRole(lab.RoleControlPlane) {
		return "", fmt.Errorf("lab %s: host %s is not a control-plane host and runs no API server", l.cfg.Name, target)
	}
	raw, err := clientcmd.LoadFromFile(l.kubeconfigPath())
	if err != nil {
		return "", fmt.Errorf("lab %s: loading kubeconfig %s: %w", l.cfg.Name, l.cfg.Kubeconfig, err)
	}
	server := fmt.Sprintf("https://%s", joinHostPort(hc.Address, l.cfg.Network.APIServerPort))
	for _, cluster := range raw.Clusters {
		cluster.Server = server
	}
	if err := os.MkdirAll(l.cfg.StateDir, 0o700); err != nil {
		return "", fmt.Errorf("lab %s: creating state directory: %w", l.cfg.Name, err)
	}
	path := filepath.Join(l.cfg.StateDir, "kubeconfig-"+target)
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		return "", fmt.Errorf("lab %s: writing kubeconfig for %s: %w", l.cfg.Name, target, err)
	}
	return path, nil
}

func joinHostPort(host string, port int) string {
	if port == 0 {
		port = 6443
	}
	return fmt.Sprintf("%s:%d", bracketIPv6(host), port)
}

func bracketIPv6(h string) string {
	for _, r := range h {
		if r == ':' {
			return "[" + h + "]"
		}
	}
	return h
}

func (l *Lab) kubeconfigPath() string { return ssh.ExpandHome(l.cfg.Kubeconfig) }

func (l *Lab) StateDir() string { return l.cfg.StateDir }

// Kube is a client for the config's kubeconfig.
func (l *Lab) Kube() (kubernetes.Interface, error) {
	l.kubeOnce.Do(func() {
		l.kube, l.kubeErr = guard.Client(l.kubeconfigPath())
	})
	if l.kubeErr != nil {
		return nil, fmt.Errorf("lab %s: %w", l.cfg.Name, l.kubeErr)
	}
	return l.kube, nil
}

// Reset checks that this is a marked lab, deletes faultline's namespaces
// and waits for a clean start, and empties the history store of a lab
// with storage (starting it first where faultline runs it). Nothing is
// restored: see Info().ResetKind.
func (l *Lab) Reset(ctx context.Context) error {
	if err := guard.CheckConfig(l.cfg); err != nil {
		return err
	}
	kube, err := l.Kube()
	if err != nil {
		return err
	}
	if err := guard.Check(ctx, l.cfg, kube); err != nil {
		return err
	}
	if err := cleanup.Reset(ctx, kube, cleanup.DefaultTimeout); err != nil {
		return fmt.Errorf("lab %s: reset (cleanup only, no snapshot): %w", l.cfg.Name, err)
	}
	l.volumes.forget()
	if l.cfg.Storage != nil {
		if err := l.emptyHistory(ctx); err != nil {
			return fmt.Errorf("lab %s: reset: %w", l.cfg.Name, err)
		}
	}
	v, err := kube.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("lab %s: asking the API server its version: %w", l.cfg.Name, err)
	}
	l.mu.Lock()
	l.serverVersion = v.GitVersion
	l.mu.Unlock()
	return nil
}

// statusTimeout bounds how long Status waits for one host.
const statusTimeout = 20 * time.Second

// Status asks every host, in parallel, for its services; a host that does
// not answer is reported with the reason. Up means every host answered and
// the API server did.
func (l *Lab) Status(ctx context.Context) (lab.Status, error) {
	st := lab.Status{Info: l.Info(), Hosts: make([]lab.HostStatus, len(l.opts.Hosts))}
	var wg sync.WaitGroup
	reachable := make([]bool, len(l.opts.Hosts))
	for i, h := range l.opts.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			hs := lab.HostStatus{Name: h.Name(), Roles: h.Roles(), Address: h.Address(), Power: "unknown"}
			if res, err := h.Run(ctx, "true"); err != nil {
				hs.Detail = "unreachable: " + err.Error()
			} else if res.ExitCode != 0 {
				hs.Detail = fmt.Sprintf("unusable: `true` exited %d: %s", res.ExitCode, res.Stderr)
			} else {
				hs.Power, reachable[i] = "on", true
				// A host without systemd is reachable all the same; its
				// services are then unknown, and the detail says why.
				if services, err := h.Services(ctx); err != nil {
					hs.Detail = "services: " + err.Error()
				} else {
					hs.Services = services
				}
			}
			if l.opts.Power != nil {
				if p, err := l.opts.Power(ctx, h); err != nil {
					hs.Detail = joinDetail(hs.Detail, "power state: "+err.Error())
				} else {
					hs.Power = p
				}
			}
			st.Hosts[i] = hs
		}()
	}
	apiErr := l.apiAnswers(ctx)
	wg.Wait()
	st.Up = apiErr == nil
	for _, ok := range reachable {
		st.Up = st.Up && ok
	}
	return st, nil
}

func (l *Lab) apiAnswers(ctx context.Context) error {
	kube, err := l.Kube()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	_, err = kube.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	return err
}

func joinDetail(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (l *Lab) Close() error {
	closeAll(l.opts.Hosts)
	if l.opts.Close != nil {
		return l.opts.Close()
	}
	return nil
}
