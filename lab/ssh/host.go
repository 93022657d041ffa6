package ssh

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/faultline/faultline/lab"
)

// Host is a lab.Host reached over SSH.
type Host struct {
	cfg            lab.HostConfig
	client         *Client
	kind           string
	sudo           bool
	serviceCommand string
	commandTimeout time.Duration
	bootTimeout    time.Duration
	powerOff       func(context.Context) error
	powerOn        func(context.Context) error
	via            *Client
}

var _ lab.Host = (*Host)(nil)

// HostOption adjusts a Host built by NewHost.
type HostOption func(*Host)

// WithPower supplies the host's power operations (a hypervisor's). Without
// it PowerOff and PowerOn return an error wrapping lab.ErrUnsupported.
func WithPower(off, on func(ctx context.Context) error) HostOption {
	return func(h *Host) { h.powerOff, h.powerOn = off, on }
}

// WithLabKind names the lab kind in errors (default "ssh").
func WithLabKind(kind string) HostOption {
	return func(h *Host) { h.kind = kind }
}

// WithBootTimeout bounds how long PowerOn waits for SSH to answer after
// the host was powered on (default 5m).
func WithBootTimeout(d time.Duration) HostOption {
	return func(h *Host) { h.bootTimeout = d }
}

// NewHost builds the Host for one host of a lab file, reached with the lab's
// SSH settings. It reads the identity file but does not connect.
func NewHost(hc lab.HostConfig, c *lab.SSHConfig, opts ...HostOption) (*Host, error) {
	o, err := OptionsFor(hc.Name, hc.Address, c)
	if err != nil {
		return nil, err
	}
	h := newHost(hc, nil, c, opts...)
	o.Via = h.via
	h.client, err = New(o)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// WithJump reaches the host through a jump client shared with other hosts
// (see NewJump) instead of a jump connection of its own. Ignored by
// NewHostWithClient.
func WithJump(j *Client) HostOption {
	return func(h *Host) { h.via = j }
}

// NewHostWithClient builds a Host on an existing Client (for a host whose
// address or user differ from the lab's, such as a hypervisor).
func NewHostWithClient(hc lab.HostConfig, client *Client, c *lab.SSHConfig, opts ...HostOption) *Host {
	return newHost(hc, client, c, opts...)
}

func newHost(hc lab.HostConfig, client *Client, c *lab.SSHConfig, opts ...HostOption) *Host {
	h := &Host{
		cfg:            hc,
		client:         client,
		kind:           "ssh",
		commandTimeout: 60 * time.Second,
		bootTimeout:    5 * time.Minute,
	}
	if c != nil {
		h.sudo = c.Sudo
		h.serviceCommand = strings.ReplaceAll(c.ServiceCommand, "{host}", hc.Name)
		if c.CommandTimeout.Duration > 0 {
			h.commandTimeout = c.CommandTimeout.Duration
		}
	}
	for _, opt := range opts {
		opt(h)
	}
	return h
}

func (h *Host) Name() string            { return h.cfg.Name }
func (h *Host) Roles() []lab.Role       { return slices.Clone(h.cfg.Roles) }
func (h *Host) HasRole(r lab.Role) bool { return slices.Contains(h.cfg.Roles, r) }
func (h *Host) Address() string         { return h.cfg.Address }

// Config is the host's entry in the lab file.
func (h *Host) Config() lab.HostConfig { return h.cfg }

// Client is the host's SSH connection.
func (h *Host) Client() *Client { return h.client }

// Close ends the host's SSH connection.
func (h *Host) Close() error { return h.client.Close() }

var errCommandTimeout = errors.New("ssh.commandTimeout reached")

// Run runs cmd (through sudo -n when the lab says so), bounded by ctx and
// the lab's command timeout.
func (h *Host) Run(ctx context.Context, cmd string) (lab.Result, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, h.commandTimeout, errCommandTimeout)
	defer cancel()
	full := cmd
	if h.sudo {
		full = "sudo -n sh -c " + shellQuote(cmd)
	}
	res, err := h.client.Run(ctx, full)
	if err != nil {
		if errors.Is(context.Cause(ctx), errCommandTimeout) {
			return res, fmt.Errorf("running %q on %s: timed out after %s (ssh.commandTimeout): %w", cmd, h.cfg.Name, h.commandTimeout, err)
		}
		return res, fmt.Errorf("running %q on %s: %w", cmd, h.cfg.Name, err)
	}
	if h.sudo && res.ExitCode == 1 && strings.Contains(res.Stderr, "sudo: a password is required") {
		return res, fmt.Errorf("running %q on %s: sudo -n needs a password for %s (configure NOPASSWD for this user)", cmd, h.cfg.Name, h.client.opts.User)
	}
	return res, nil
}

// runOK is Run where a non-zero exit is an error carrying stderr.
func (h *Host) runOK(ctx context.Context, what, cmd string) (lab.Result, error) {
	res, err := h.Run(ctx, cmd)
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	if res.ExitCode != 0 {
		return res, fmt.Errorf("%s on %s: exit status %d: %s", what, h.cfg.Name, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return res, nil
}

// WaitReachable returns once the host runs a command over SSH, or when ctx
// ends. Each attempt redials if the connection is broken; a refused host
// key or credential ends the wait at once.
func (h *Host) WaitReachable(ctx context.Context) error {
	var last error
	for {
		attempt, cancel := context.WithTimeout(ctx, h.client.opts.ConnectTimeout)
		res, err := h.client.Run(attempt, "true")
		cancel()
		if err == nil && res.ExitCode == 0 {
			return nil
		}
		if errors.Is(err, ErrHostKey) || errors.Is(err, ErrAuth) {
			// The host answers; it will not be let in by waiting.
			return fmt.Errorf("waiting for %s to answer over SSH: %w", h.cfg.Name, err)
		}
		if err != nil {
			last = err
			// A failed attempt may have left a half-open connection.
			h.client.Disconnect()
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s to answer over SSH: %w (last error: %v)", h.cfg.Name, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s to answer over SSH: %w", h.cfg.Name, ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// PowerOff runs the backend's power off and drops the now dead connection.
func (h *Host) PowerOff(ctx context.Context) error {
	if h.powerOff == nil {
		return lab.Unsupported(h.kind, "power off "+h.cfg.Name, "the lab has no hypervisor to power hosts off")
	}
	if err := h.powerOff(ctx); err != nil {
		return fmt.Errorf("powering off %s: %w", h.cfg.Name, err)
	}
	h.client.Disconnect()
	return nil
}

// PowerOn runs the backend's power on and waits until the host answers
// over SSH.
func (h *Host) PowerOn(ctx context.Context) error {
	if h.powerOn == nil {
		return lab.Unsupported(h.kind, "power on "+h.cfg.Name, "the lab has no hypervisor to power hosts on")
	}
	if err := h.powerOn(ctx); err != nil {
		return fmt.Errorf("powering on %s: %w", h.cfg.Name, err)
	}
	h.client.Disconnect()
	ctx, cancel := context.WithTimeout(ctx, h.bootTimeout)
	defer cancel()
	return h.WaitReachable(ctx)
}

// unitName guards the shell: service names come from scenarios.
var unitName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9@._:-]*$`)

func checkService(name string) error {
	if !unitName.MatchString(name) {
		return fmt.Errorf("%q is not a service name", name)
	}
	return nil
}

func (h *Host) StopService(ctx context.Context, name string) error {
	return h.systemctl(ctx, "stop", name)
}

func (h *Host) StartService(ctx context.Context, name string) error {
	return h.systemctl(ctx, "start", name)
}

// Exit statuses of the service scripts.
const (
	exitNoMainPID = 3
	// exitNoUnit: systemd has no unit of that name, as for the control
	// plane of a kubeadm cluster, which runs as static pods.
	exitNoUnit = 64
)

// unitCheck exits exitNoUnit when systemd has no unit called name.
func unitCheck(name string) string {
	return fmt.Sprintf(`[ "$(systemctl show -p LoadState --value -- %s)" != not-found ] || exit %d; `, name, exitNoUnit)
}

func (h *Host) noUnit(op, name string) error {
	if h.serviceCommand != "" {
		return lab.Unsupported(h.kind, op+" "+name+" on "+h.cfg.Name, "the lab's service command knows no service "+name+" there")
	}
	return lab.Unsupported(h.kind, op+" "+name+" on "+h.cfg.Name,
		"systemd has no unit "+name+" there (a kubeadm control plane runs as static pods, not units)")
}

// byCommand runs the lab's service command with args, mapping its exit
// status as systemctl's is.
func (h *Host) byCommand(ctx context.Context, op, name string, args ...string) error {
	res, err := h.Run(ctx, h.serviceCommand+" "+strings.Join(args, " "))
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	switch res.ExitCode {
	case 0:
		return nil
	case exitNoUnit:
		return h.noUnit(op, name)
	default:
		return fmt.Errorf("%s %s on %s: the service command exited %d: %s", op, name, h.cfg.Name, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
}

func (h *Host) systemctl(ctx context.Context, verb, name string) error {
	if err := checkService(name); err != nil {
		return err
	}
	if h.serviceCommand != "" {
		return h.byCommand(ctx, verb, name, verb, name)
	}
	res, err := h.Run(ctx, unitCheck(name)+"systemctl "+verb+" -- "+name)
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, name, err)
	}
	switch res.ExitCode {
	case 0:
		return nil
	case exitNoUnit:
		return h.noUnit(verb, name)
	default:
		return fmt.Errorf("%s %s on %s: exit status %d: %s", verb, name, h.cfg.Name, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
}

// Signal sends sig to the service's main process as systemd knows it. PID
// lookup and kill run in one command, so the window in which the service
// could restart under another PID is one shell's.
func (h *Host) Signal(ctx context.Context, name string, sig syscall.Signal) error {
	if err := checkService(name); err != nil {
		return err
	}
	sigName := strings.TrimPrefix(unix.SignalName(sig), "SIG")
	if sigName == "" {
		return fmt.Errorf("signal %d has no name", int(sig))
	}
	if h.serviceCommand != "" {
		return h.byCommand(ctx, "signal "+sigName+" to", name, "signal", sigName, name)
	}
	script := unitCheck(name) + fmt.Sprintf(`pid=$(systemctl show -p MainPID --value -- %s) || exit 2; `+
		`[ -n "$pid" ] && [ "$pid" -gt 0 ] || exit %d; kill -s %s "$pid"`, name, exitNoMainPID, sigName)
	res, err := h.Run(ctx, script)
	if err != nil {
		return fmt.Errorf("signalling %s with %s: %w", name, sigName, err)
	}
	switch res.ExitCode {
	case 0:
		return nil
	case exitNoMainPID:
		return fmt.Errorf("signalling %s on %s with %s: the service has no main process (not running?)", name, h.cfg.Name, sigName)
	case exitNoUnit:
		return h.noUnit("signal", name)
	default:
		return fmt.Errorf("signalling %s on %s with %s: exit status %d: %s", name, h.cfg.Name, sigName, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
}

// KnownServices are the services Services reports on, where installed.
var KnownServices = []string{
	lab.ServiceEtcd, lab.ServiceAPIServer, lab.ServiceControllerManager, lab.ServiceScheduler,
	lab.ServiceKubelet, lab.ServiceContainerd, lab.ServiceKubeProxy, lab.ServiceKeepalived,
}

// Services reports the state of every known service systemd has a unit for.
// On kubeadm clusters the control plane runs as static pods, not units, and
// is therefore absent here.
func (h *Host) Services(ctx context.Context) ([]lab.ServiceState, error) {
	if h.serviceCommand != "" {
		res, err := h.runOK(ctx, "listing services", h.serviceCommand+" list")
		if err != nil {
			return nil, err
		}
		return parseServiceList(res.Stdout)
	}
	units := make([]string, len(KnownServices))
	for i, s := range KnownServices {
		units[i] = s + ".service"
	}
	res, err := h.runOK(ctx, "listing services",
		"systemctl show --property=Id,LoadState,ActiveState,SubState,MainPID,FreezerState -- "+strings.Join(units, " "))
	if err != nil {
		return nil, err
	}
	return parseServiceStates(res.Stdout)
}

// parseServiceList reads a service command's list: per line a service's
// name, state and main pid (0 for none).
func parseServiceList(out string) ([]lab.ServiceState, error) {
	var states []lab.ServiceState
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("a service list line that is not \"name state pid\": %q", line)
		}
		pid, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("a service list line whose pid is no number: %q", line)
		}
		switch f[1] {
		case "running", "stopped", "frozen", "exited", "unknown":
		default:
			return nil, fmt.Errorf("a service list line with state %q (running, stopped, frozen, exited, unknown)", f[1])
		}
		states = append(states, lab.ServiceState{Name: f[0], State: f[1], PID: pid})
	}
	return states, nil
}

// parseServiceStates reads `systemctl show` output: one block of key=value
// lines per unit, blocks separated by an empty line.
func parseServiceStates(out string) ([]lab.ServiceState, error) {
	var states []lab.ServiceState
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		props := map[string]string{}
		for _, line := range strings.Split(block, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
				props[k] = v
			}
		}
		if len(props) == 0 {
			continue
		}
		if props["Id"] == "" {
			return nil, fmt.Errorf("systemctl show output without an Id: %q", block)
		}
		if props["LoadState"] == "not-found" {
			continue
		}
		st := lab.ServiceState{Name: strings.TrimSuffix(props["Id"], ".service"), State: serviceState(props)}
		if pid, err := strconv.Atoi(props["MainPID"]); err == nil {
			st.PID = pid
		}
		states = append(states, st)
	}
	return states, nil
}

func serviceState(p map[string]string) string {
	if p["FreezerState"] == "frozen" {
		return "frozen"
	}
	switch p["ActiveState"] {
	case "active", "reloading":
		if p["SubState"] == "exited" {
			return "exited"
		}
		return "running"
	case "inactive":
		return "stopped"
	case "failed":
		return "exited"
	default:
		return "unknown"
	}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
