package faults

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"

	"github.com/faultline/faultline/lab"
)

// recordingHost is a lab.Host test double that runs nothing: it records
// every command and service operation and answers commands from a table of
// prefixes, for tests of the command lines faults generate.
type recordingHost struct {
	name  string
	roles []lab.Role
	addr  string

	mu       sync.Mutex
	cmds     []string
	ops      []string
	answers  map[string]lab.Result
	services map[string]lab.ServiceState
}

func (h *recordingHost) Name() string      { return h.name }
func (h *recordingHost) Roles() []lab.Role { return h.roles }
func (h *recordingHost) Address() string   { return h.addr }
func (h *recordingHost) HasRole(r lab.Role) bool {
	for _, x := range h.roles {
		if x == r {
			return true
		}
	}
	return false
}

func (h *recordingHost) Run(_ context.Context, cmd string) (lab.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cmds = append(h.cmds, cmd)
	best := ""
	for prefix := range h.answers {
		if strings.HasPrefix(cmd, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best != "" {
		return h.answers[best], nil
	}
	return lab.Result{}, nil
}

func (h *recordingHost) op(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, fmt.Sprintf(format, args...))
}

func (h *recordingHost) StopService(_ context.Context, name string) error {
	h.op("stop %s", name)
	h.setState(name, "stopped", 0)
	return nil
}

func (h *recordingHost) StartService(_ context.Context, name string) error {
	h.op("start %s", name)
	h.setState(name, "running", 4242)
	return nil
}

func (h *recordingHost) Signal(_ context.Context, name string, sig syscall.Signal) error {
	h.op("signal %s %s", name, sig)
	switch sig {
	case syscall.SIGKILL:
		h.setState(name, "exited", 0)
	case syscall.SIGSTOP:
		h.setState(name, "frozen", -1)
	case syscall.SIGCONT:
		h.setState(name, "running", -1)
	}
	return nil
}

func (h *recordingHost) setState(name, state string, pid int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.services[name]
	s.State = state
	if pid >= 0 {
		s.PID = pid
	}
	h.services[name] = s
}

func (h *recordingHost) Services(context.Context) ([]lab.ServiceState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []lab.ServiceState
	for _, n := range []string{lab.ServiceEtcd, lab.ServiceAPIServer, lab.ServiceControllerManager, lab.ServiceScheduler, lab.ServiceContainerd, lab.ServiceKubelet, lab.ServiceKubeProxy} {
		if s, ok := h.services[n]; ok {
			out = append(out, s)
		}
	}
	return out, nil
}

func (h *recordingHost) PowerOff(context.Context) error { h.op("power off"); return nil }
func (h *recordingHost) PowerOn(context.Context) error  { h.op("power on"); return nil }
func (h *recordingHost) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("the recording host dials nothing")
}

func (h *recordingHost) commands() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.cmds...)
}

func (h *recordingHost) operations() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ops...)
}

// recordingLab holds recordingHosts built from a lab config.
type recordingLab struct {
	cfg   *lab.Config
	hosts []*recordingHost
	power map[string]string
}

func newRecordingLab(cfg *lab.Config) *recordingLab {
	l := &recordingLab{cfg: cfg, power: map[string]string{}}
	for _, hc := range cfg.Hosts {
		h := &recordingHost{name: hc.Name, roles: hc.Roles, addr: hc.Address, answers: map[string]lab.Result{}, services: map[string]lab.ServiceState{}}
		pid := 1000 + len(l.hosts)*10
		add := func(svc string) {
			pid++
			h.services[svc] = lab.ServiceState{Name: svc, PID: pid, State: "running"}
		}
		if h.HasRole(lab.RoleEtcd) {
			add(lab.ServiceEtcd)
		}
		if h.HasRole(lab.RoleControlPlane) {
			add(lab.ServiceAPIServer)
			add(lab.ServiceControllerManager)
			add(lab.ServiceScheduler)
		}
		if h.HasRole(lab.RoleControlPlane) || h.HasRole(lab.RoleWorker) {
			add(lab.ServiceContainerd)
			add(lab.ServiceKubelet)
			add(lab.ServiceKubeProxy)
		}
		l.hosts = append(l.hosts, h)
		l.power[hc.Name] = "on"
	}
	return l
}

func (l *recordingLab) Info() lab.Info {
	return lab.Info{Name: l.cfg.Name, Kind: l.cfg.Kind, Topology: l.cfg.Name}
}
func (l *recordingLab) Config() *lab.Config { return l.cfg }

// SharesWallClock answers as the local lab does, for a config of its kind.
func (l *recordingLab) SharesWallClock() (bool, string) {
	if l.cfg.Kind == "local" {
		return true, "one kernel, one CLOCK_REALTIME: the vDSO serves every host the same wall clock"
	}
	return false, ""
}
func (l *recordingLab) Hosts() []lab.Host {
	var out []lab.Host
	for _, h := range l.hosts {
		out = append(out, h)
	}
	return out
}
func (l *recordingLab) Host(name string) (lab.Host, error) {
	if h := l.host(name); h != nil {
		return h, nil
	}
	return nil, fmt.Errorf("lab %s has no host %q", l.cfg.Name, name)
}
func (l *recordingLab) host(name string) *recordingHost {
	for _, h := range l.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}
func (l *recordingLab) Kubeconfig(string) (string, error) {
	return "", lab.Unsupported(l.cfg.Kind, "kubeconfig", "test double")
}
func (l *recordingLab) StateDir() string { return "" }
func (l *recordingLab) Timers() (lab.Timers, error) {
	return lab.Timers{}, lab.Unsupported(l.cfg.Kind, "timers", "it runs no cluster")
}
func (l *recordingLab) Reset(context.Context) error { return nil }
func (l *recordingLab) Status(context.Context) (lab.Status, error) {
	st := lab.Status{Info: l.Info(), Up: true}
	for _, h := range l.hosts {
		st.Hosts = append(st.Hosts, lab.HostStatus{Name: h.name, Roles: h.roles, Address: h.addr, Power: l.power[h.name]})
	}
	return st, nil
}
func (l *recordingLab) Close() error { return nil }

// allCommands lists every host's commands as "host: cmd".
func (l *recordingLab) allCommands() []string {
	var out []string
	for _, h := range l.hosts {
		for _, c := range h.commands() {
			out = append(out, h.name+": "+c)
		}
	}
	return out
}

// changes lists every command and operation that could change a host:
// everything but the read-only commands faults use to look.
func (l *recordingLab) changes() []string {
	var out []string
	for _, h := range l.hosts {
		for _, c := range h.commands() {
			if !readOnly(c) {
				out = append(out, h.name+": "+c)
			}
		}
		for _, o := range h.operations() {
			out = append(out, h.name+": "+o)
		}
	}
	return out
}

func readOnly(cmd string) bool {
	for _, p := range []string{"hostname", "ip -o route get", "ip -o -4 addr show", "ip -4 route show", "ip -o link show", "tc qdisc show dev", "cat /proc/", "iptables -w -n -L", "iptables -w -n -v -x -L", "date +%s%N", "timeout ", "s=$(date"} {
		if strings.HasPrefix(cmd, p) {
			return true
		}
	}
	return false
}
