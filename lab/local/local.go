// Package local is the embedded default lab: a real Kubernetes cluster on
// one Linux machine. Each host is a network namespace on a lab bridge with
// its own sshd; etcd, the control plane, containerd, kubelet and kube-proxy
// are real processes started in those namespaces by a small supervisor
// whose records live in the state dir, so any later process can find them.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/addressing"
	"github.com/faultline/faultline/lab/local/internal/components"
	"github.com/faultline/faultline/lab/local/internal/hostns"
	"github.com/faultline/faultline/lab/local/internal/hostssh"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/state"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

func init() {
	lab.Register(lab.Backend{
		Kind:     Kind,
		Defaults: defaults,
		Validate: validate,
		Timers:   profileTimers,
		Open:     func(c *lab.Config) (lab.Lab, error) { return New(c) },
		FindUp:   findUp,
		Coexist:  coexist,
	})
}

// Lab is a local lab. Open touches nothing; Up builds it, Down removes it.
type Lab struct {
	cfg *lab.Config
	// asked is the Kubernetes settings the opener asked for; cfg holds
	// those of the running lab when one is recorded (see New).
	asked  lab.KubernetesSettings
	dirs   layout.State
	plan   *addressing.Plan
	net    *hostns.Network
	sup    *supervise.Supervisor
	ssh    hostssh.Files
	hosts  []*Host
	byName map[string]*Host
	// comp is the lab as its components see it.
	comp *components.Cluster

	timings UpTimings
	// progress receives a line per step of up, reset and down, with the
	// time since the operation began (opStart).
	progress io.Writer
	opStart  time.Time

	// bareHosts limits every host to its sshd: the hosts without a
	// cluster, for testing the layer below it.
	bareHosts bool

	// skews are the hosts whose processes this program keeps shifted
	// (clock.go); processesOf, when set, lists a host's processes in
	// place of the kernel's view, for tests.
	skews       skews
	processesOf func(host string) []int
}

var _ lab.Provisioner = (*Lab)(nil)
var _ lab.ProgressReporter = (*Lab)(nil)

// New checks a local lab's config and returns the lab without touching the
// machine.
func New(c *lab.Config) (*Lab, error) {
	if c.Kind != Kind {
		return nil, fmt.Errorf("lab %s: kind %q is not local", c.Name, c.Kind)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("lab %s: %w", c.Name, err)
	}
	if c.StateDir == "" {
		return nil, fmt.Errorf("lab %s: stateDir: is required", c.Name)
	}
	plan, err := addressing.New(c)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", c.Name, err)
	}
	asked := c.Kubernetes
	// A lab that is up runs with the versions and timers it was brought up
	// with, whatever the file opened now says (`lab up --profile` overrides
	// the file): every report must name the profile the cluster really runs.
	if r, err := state.Load(c.StateDir); err == nil && !r.Config.Kubernetes.Equal(c.Kubernetes) {
		running := *c
		running.Kubernetes = r.Config.Kubernetes
		c = &running
	}
	l := &Lab{
		asked:  asked,
		cfg:    c,
		dirs:   layout.State(c.StateDir),
		plan:   plan,
		net:    &hostns.Network{Lab: c.Name, Plan: plan},
		sup:    supervise.New(c.StateDir),
		ssh:    hostssh.Files{Dir: layout.State(c.StateDir).SSH(), SudoUser: SudoUserName(c.Name)},
		byName: map[string]*Host{},
	}
	l.comp = &components.Cluster{Config: c, Dirs: l.dirs, Plan: plan, SSH: l.ssh, Sup: l.sup}
	for _, hc := range c.Hosts {
		h := &Host{lab: l, cfg: hc}
		if n, ok := plan.Nodes[hc.Name]; ok {
			n := n
			h.node = &n
		}
		if h.ssh, err = l.ssh.Client(hc); err != nil {
			return nil, fmt.Errorf("lab %s: %w", c.Name, err)
		}
		l.hosts = append(l.hosts, h)
		l.byName[hc.Name] = h
	}
	return l, nil
}

// SetProgress makes the lab write a line per step of Up, Reset and Down to
// w (nil: quiet).
func (l *Lab) SetProgress(w io.Writer) { l.progress = w }

// began marks the start of an operation, for the elapsed times of its
// progress lines.
func (l *Lab) began() { l.opStart = time.Now() }

func (l *Lab) logf(format string, args ...any) {
	if l.progress != nil {
		now := time.Now()
		elapsed := ""
		if !l.opStart.IsZero() {
			elapsed = fmt.Sprintf(" +%.1fs", now.Sub(l.opStart).Seconds())
		}
		fmt.Fprintf(l.progress, "%s%s lab %s: %s\n", now.Format("15:04:05.000"), elapsed, l.cfg.Name, fmt.Sprintf(format, args...))
	}
}

func (l *Lab) Config() *lab.Config { return l.cfg }
func (l *Lab) StateDir() string    { return l.cfg.StateDir }

func (l *Lab) Hosts() []lab.Host {
	out := make([]lab.Host, len(l.hosts))
	for i, h := range l.hosts {
		out[i] = h
	}
	return out
}

func (l *Lab) Host(name string) (lab.Host, error) {
	h, ok := l.byName[name]
	if !ok {
		names := make([]string, 0, len(l.byName))
		for n := range l.byName {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("lab %s has no host %q (hosts: %v)", l.cfg.Name, name, names)
	}
	return h, nil
}

// KnownHostsFile is the known_hosts file that pins every host's key.
func (l *Lab) KnownHostsFile() string { return l.ssh.KnownHosts() }

// SSHKeyFile is the private key every host's sshd accepts.
func (l *Lab) SSHKeyFile() string { return l.ssh.ClientKey() }

func (l *Lab) Close() error {
	l.stopReconcilers()
	for _, h := range l.hosts {
		h.ssh.Close()
	}
	return nil
}

func requireRoot(what string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s: the local lab needs root (network namespaces, cgroups, mounts)", what)
	}
	return nil
}

// provisionHosts builds the network, every host's namespace and links, the
// SSH material, and starts every host's sshd: a lab of bare hosts.
func (l *Lab) provisionHosts(ctx context.Context) error {
	if err := requireRoot("lab up"); err != nil {
		return err
	}
	if !state.Exists(l.cfg.StateDir) {
		if err := l.net.CheckFree(); err != nil {
			return err
		}
	}
	if err := state.Save(l.cfg.StateDir, l.loadOrNewRecord()); err != nil {
		return err
	}
	if err := l.net.CreateBridges(ctx); err != nil {
		return err
	}
	addrs := map[string]string{}
	for _, h := range l.hosts {
		addrs[h.cfg.Name] = h.cfg.Address
		if err := l.net.CreateHost(h.hostNet()); err != nil {
			return err
		}
		if err := os.MkdirAll(l.dirs.Data(h.cfg.Name), 0o755); err != nil {
			return err
		}
	}
	if err := hostssh.Ensure(l.ssh, l.cfg.Name, addrs); err != nil {
		return err
	}
	for _, h := range l.hosts {
		if err := h.startServices(ctx, components.PhaseSSH); err != nil {
			return err
		}
	}
	for _, h := range l.hosts {
		if err := h.waitSSH(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (l *Lab) loadOrNewRecord() *state.Record {
	if r, err := state.Load(l.cfg.StateDir); err == nil {
		return r
	}
	r := &state.Record{Config: l.cfg}
	for _, p := range components.SharedPaths {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			r.CreatedShared = append(r.CreatedShared, p)
		}
	}
	return r
}

// Down removes everything the lab made. It works from the record in the
// state dir (the config the lab was built from) and from names derived
// from it, so it also cleans up after a crashed `up`.
func (l *Lab) Down(ctx context.Context) error {
	if err := requireRoot("lab down"); err != nil {
		return err
	}
	cfg := l.cfg
	rec, err := state.Load(l.cfg.StateDir)
	if err == nil {
		cfg = rec.Config
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("lab down: %w", err)
	}
	return teardown(ctx, cfg, rec)
}
