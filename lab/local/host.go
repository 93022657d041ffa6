package local

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/addressing"
	"github.com/faultline/faultline/lab/local/internal/components"
	"github.com/faultline/faultline/lab/local/internal/hostns"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/procs"
	"github.com/faultline/faultline/lab/local/internal/supervise"
	labssh "github.com/faultline/faultline/lab/ssh"
)

// Host is one host of a local lab: a network namespace, its links, and the
// services the supervisor runs in it.
type Host struct {
	lab  *Lab
	cfg  lab.HostConfig
	node *addressing.Node // nil for hosts that run no kubelet
	ssh  *labssh.Client
}

var _ lab.Host = (*Host)(nil)

func (h *Host) Name() string            { return h.cfg.Name }
func (h *Host) Roles() []lab.Role       { return slices.Clone(h.cfg.Roles) }
func (h *Host) HasRole(r lab.Role) bool { return slices.Contains(h.cfg.Roles, r) }
func (h *Host) Address() string         { return h.cfg.Address }

// component is the host as its components see it.
func (h *Host) component() components.Host {
	return components.Host{HostConfig: h.cfg, Node: h.node}
}

func (h *Host) netns() string { return layout.NetnsName(h.lab.cfg.Name, h.cfg.Name) }

func (h *Host) hostNet() hostns.Host {
	out := hostns.Host{
		Name:    h.cfg.Name,
		Address: mustPrefix(h.cfg.Address, h.lab.plan.Management.Bits()),
		Node:    h.node,
	}
	if slices.Contains(h.cfg.Roles, lab.RoleStorage) {
		out.PodsReach = map[string]netip.Addr{}
		for _, c := range h.lab.cfg.Hosts {
			if _, ok := h.lab.plan.Nodes[c.Name]; ok {
				out.PodsReach[c.Name] = mustPrefix(c.Address, 32).Addr()
			}
		}
	}
	return out
}

// Run runs a command on the host over SSH, with the client every SSH lab
// uses. A non-zero exit is a result, not an error.
func (h *Host) Run(ctx context.Context, cmd string) (lab.Result, error) {
	res, err := h.ssh.Run(ctx, cmd)
	if err != nil {
		return res, fmt.Errorf("running %q on %s: %w", cmd, h.cfg.Name, err)
	}
	return res, nil
}

// Dial opens a connection from the host through its SSH connection (see
// lab.Host); the lab's sshd logs in as root, so every socket of the host
// can be opened.
func (h *Host) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := h.ssh.Dial(ctx, network, address)
	if err != nil {
		return nil, fmt.Errorf("dialing %s %s from %s: %w", network, address, h.cfg.Name, err)
	}
	return c, nil
}

func (h *Host) service(name string) (components.Service, error) {
	for _, s := range h.services() {
		if s.Name == name {
			return s, nil
		}
	}
	var names []string
	for _, s := range h.services() {
		names = append(names, s.Name)
	}
	return components.Service{}, fmt.Errorf("host %s runs no service %q (it runs %v)", h.cfg.Name, name, names)
}

func (h *Host) StartService(ctx context.Context, name string) error {
	s, err := h.service(name)
	if err != nil {
		return err
	}
	return h.start(ctx, s, false)
}

func (h *Host) StopService(ctx context.Context, name string) error {
	s, err := h.service(name)
	if err != nil {
		return err
	}
	return h.lab.sup.Stop(ctx, h.cfg.Name, s.Name, s.StopGrace)
}

func (h *Host) Signal(ctx context.Context, name string, sig syscall.Signal) error {
	s, err := h.service(name)
	if err != nil {
		return err
	}
	return h.lab.sup.Signal(h.cfg.Name, s.Name, sig)
}

func (h *Host) Services(ctx context.Context) ([]lab.ServiceState, error) {
	var out []lab.ServiceState
	for _, s := range h.services() {
		pid, st := h.lab.sup.Lookup(h.cfg.Name, s.Name)
		state := lab.ServiceState{Name: s.Name, PID: pid, State: st}
		if pid != 0 {
			if at, err := procs.Started(pid); err == nil {
				state.Started = at
			}
		}
		if s.RestartDelay > 0 {
			rs, err := h.lab.sup.Restarts(h.cfg.Name, s.Name)
			if err != nil {
				return out, fmt.Errorf("host %s: %s: %w", h.cfg.Name, s.Name, err)
			}
			state.Restarts = len(rs)
			if len(rs) > 0 {
				state.LastRestart = rs[len(rs)-1].At
			}
		}
		out = append(out, state)
	}
	return out, nil
}

// PowerOff cuts the host's links and kills every process it has, its
// containers included, at once; what a VM's RAM and /run held is gone.
func (h *Host) PowerOff(ctx context.Context) error {
	if err := h.lab.net.SetHostLinks(h.cfg.Name, false, h.lab.net.HostLinks(h.cfg.Name)...); err != nil {
		return err
	}
	if err := procs.KillHost(ctx, h.lab.cfg.Name, h.cfg.Name); err != nil {
		return err
	}
	for _, s := range h.services() {
		if err := h.lab.sup.Kill(ctx, h.cfg.Name, s.Name); err != nil {
			return err
		}
	}
	h.ssh.Disconnect()
	return h.lab.dropVolatile(h.cfg.Name)
}

// PowerOn boots the host: its network comes back as configured at boot
// (the namespace is made anew, so nothing set at run time survives: no
// virtual address, qdisc or firewall rule), then its services start in
// boot order.
func (h *Host) PowerOn(ctx context.Context) error {
	if err := h.lab.rebuildHostNetwork(ctx, h); err != nil {
		return err
	}
	for _, p := range components.AllPhases {
		for _, s := range h.services() {
			if s.Phase != p {
				continue
			}
			// Only the runtime is waited for (kubelet needs its
			// socket); the rest may depend on other hosts that are off.
			if err := h.start(ctx, s, p == components.PhaseRuntime || p == components.PhaseSSH); err != nil {
				return err
			}
		}
	}
	return nil
}

// Power says whether the host is "on" (its management link is up),
// "off" (powered off, or a cable pulled), or "absent" (the lab is not up).
func (h *Host) Power() string {
	up, err := hostns.LinkUp(layout.ManagementVethName(h.lab.cfg.Name, h.cfg.Name))
	switch {
	case err != nil:
		return "absent"
	case up:
		return "on"
	default:
		return "off"
	}
}

// startServices starts the host's services of one boot phase and waits
// until each is ready.
func (h *Host) startServices(ctx context.Context, p components.Phase) error {
	for _, s := range h.services() {
		if s.Phase != p {
			continue
		}
		if err := h.start(ctx, s, true); err != nil {
			return err
		}
	}
	return nil
}

// start starts a service; with waitReady it then waits until the service
// serves, otherwise only until it has survived its first moments.
func (h *Host) start(ctx context.Context, s components.Service, waitReady bool) error {
	spec, err := s.Spec(h.lab.comp, h.component())
	if err != nil {
		return fmt.Errorf("host %s: %s: %w", h.cfg.Name, s.Name, err)
	}
	spec.Host, spec.Service, spec.Netns, spec.UTS = h.cfg.Name, s.Name, h.netns(), h.lab.dirs.UTS(h.cfg.Name)
	spec.RestartDelay = s.RestartDelay
	if err := hostns.EnsureUTS(spec.UTS, h.cfg.Name); err != nil {
		return fmt.Errorf("host %s: %w", h.cfg.Name, err)
	}
	if s.After != nil {
		running := func(name string) bool {
			_, st := h.lab.sup.Lookup(h.cfg.Name, name)
			return st == supervise.StateRunning
		}
		if err := s.After(ctx, h.lab.comp, h.component(), running); err != nil {
			h.lab.logf("starting %s on %s anyway: %v", s.Name, h.cfg.Name, err)
		}
	}
	launch := func() (int, error) { return h.lab.sup.Start(spec) }
	if s.StartAlone != nil {
		_, err = s.StartAlone(ctx, h.lab.comp, h.component(), launch)
	} else {
		_, err = launch()
	}
	if err != nil {
		return err
	}
	if s.Ready == nil || !waitReady {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		if h.survived(ctx, s) {
			return nil
		}
		return fmt.Errorf("host %s: %s exited at start (log: %s)", h.cfg.Name, s.Name, h.lab.sup.LogFile(h.cfg.Name, s.Name))
	}
	// A service that exited will not become ready: stop waiting at once.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var exited error
	err = lab.WaitFor(wctx, fmt.Sprintf("%s on %s to be ready", s.Name, h.cfg.Name), s.ReadyTimeout(), 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		if _, st := h.lab.sup.Lookup(h.cfg.Name, s.Name); st != supervise.StateRunning {
			exited = fmt.Errorf("%s on %s is %s (log: %s)", s.Name, h.cfg.Name, st, h.lab.sup.LogFile(h.cfg.Name, s.Name))
			cancel()
			return false, exited
		}
		err := s.Ready(ctx, h.lab.comp, h.component())
		return err == nil, err
	})
	if exited != nil {
		return exited
	}
	if err != nil {
		return fmt.Errorf("host %s: %w", h.cfg.Name, err)
	}
	return nil
}

// survived says whether a service just started still runs (or is frozen).
// A kept service may have been found running when it was in fact dying
// (a SIGKILL is delivered, not done, when kill returns; this is what
// starting it right after the Kill fault meets): when its keeper lives,
// the keeper's restart is waited for and given the same first moments.
func (h *Host) survived(ctx context.Context, s components.Service) bool {
	runs := func() bool {
		_, st := h.lab.sup.Lookup(h.cfg.Name, s.Name)
		return st == supervise.StateRunning || st == supervise.StateFrozen
	}
	if runs() {
		return true
	}
	if s.RestartDelay == 0 {
		return false
	}
	if _, ok := h.lab.sup.Keeper(h.cfg.Name, s.Name); !ok {
		return false
	}
	if _, err := h.lab.sup.WaitKept(h.cfg.Name, s.Name, s.RestartDelay+10*time.Second); err != nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(300 * time.Millisecond):
	}
	return runs()
}

// waitSSH waits until the host answers a command over SSH.
func (h *Host) waitSSH(ctx context.Context) error {
	return lab.WaitFor(ctx, "ssh on "+h.cfg.Name, 20*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		r, err := h.Run(c, "true")
		if err != nil {
			return false, err
		}
		return r.ExitCode == 0, nil
	})
}

// Networks a host's links belong to, for SetLink.
const (
	NetworkManagement = "management"
	NetworkPods       = "pods"
)

// SetLink takes one of the host's links down or up from the outside, as
// pulling and plugging a cable does: the host's addresses and routes stay
// as they are, so bringing the link up heals completely. (Taking pod0 down
// from inside the host would drop its routes to the other nodes' pods,
// which bringing it up does not restore.)
func (h *Host) SetLink(ctx context.Context, network string, up bool) error {
	switch network {
	case NetworkManagement:
		return h.lab.net.SetHostLinks(h.cfg.Name, up, layout.ManagementVethName(h.lab.cfg.Name, h.cfg.Name))
	case NetworkPods:
		if h.node == nil {
			return fmt.Errorf("host %s has no pod network link (it runs no kubelet)", h.cfg.Name)
		}
		return h.lab.net.SetHostLinks(h.cfg.Name, up, layout.PodVethName(h.lab.cfg.Name, h.cfg.Name))
	}
	return fmt.Errorf("host %s: no network %q (management or pods)", h.cfg.Name, network)
}

func mustPrefix(addr string, bits int) netip.Prefix {
	return netip.PrefixFrom(netip.MustParseAddr(addr), bits)
}
