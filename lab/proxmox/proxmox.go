// Package proxmox is the lab for a cluster whose hosts are Proxmox VMs:
// hosts are reached over SSH like any static cluster, and powered off and
// on with `qm stop|start <vmid>` run over SSH on the hypervisor. There is no
// cold snapshot here: Reset is the static lab's cleanup, and Info says so.
package proxmox

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/guard"
	"github.com/faultline/faultline/lab/ssh"
	"github.com/faultline/faultline/lab/static"
	"github.com/faultline/faultline/lab/timers"
)

// Kind is the lab file's kind this backend serves.
const Kind = "proxmox"

// Section is a proxmox lab file's own section: how to reach the
// hypervisor that runs qm.
type Section struct {
	// Host is the hypervisor's address (host or host:port), reached over
	// SSH with the lab's SSH settings.
	Host string `json:"host"`
	User string `json:"user,omitempty"`
}

func init() {
	lab.Register(lab.Backend{
		Kind:       Kind,
		Section:    "proxmox",
		NewSection: func() any { return new(Section) },
		Validate:   validate,
		Timers:     timers.Declared,
		Open:       Open,
	})
}

// sectionOf is c's proxmox section, nil when it has none.
func sectionOf(c *lab.Config) *Section {
	s, _ := c.Section().(*Section)
	return s
}

// validate is what a proxmox lab file needs beyond what every lab file
// does: SSH, a kubeconfig, the hypervisor, and vmids that can be vmids.
func validate(c *lab.Config) []error {
	errs := lab.RemoteProblems(c)
	if s := sectionOf(c); s == nil {
		errs = append(errs, fmt.Errorf("proxmox: is required for a proxmox lab"))
	} else if s.Host == "" {
		errs = append(errs, fmt.Errorf("proxmox.host: is required (the hypervisor that runs qm)"))
	}
	for i, h := range c.Hosts {
		if h.VMID < 0 {
			errs = append(errs, fmt.Errorf("hosts[%d].vmid: %d is not a vmid", i, h.VMID))
		}
	}
	return errs
}

// minVMID is the smallest vmid Proxmox gives a guest.
const minVMID = 100

// Lab is a static lab whose hosts can be powered off and on.
type Lab struct {
	*static.Lab
	hypervisor *ssh.Host
	vmids      map[string]int
}

// Open builds the proxmox lab a config describes; it connects to nothing.
func Open(c *lab.Config) (lab.Lab, error) {
	if c.Kind != Kind || sectionOf(c) == nil {
		return nil, fmt.Errorf("lab %s: not a proxmox lab (kind %q)", c.Name, c.Kind)
	}
	vmids := map[string]int{}
	for i, hc := range c.Hosts {
		id, err := ResolveVMID(hc)
		if err != nil {
			return nil, fmt.Errorf("lab %s: hosts[%d].vmid: %w", c.Name, i, err)
		}
		vmids[hc.Name] = id
	}
	jump, err := ssh.NewJump(c.SSH)
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w", c.Name, err)
	}
	hypervisor, err := newHypervisor(c, jump)
	if err != nil {
		closeJump(jump)
		return nil, err
	}
	l := &Lab{hypervisor: hypervisor, vmids: vmids}
	hosts, err := static.NewHosts(c, jump, func(hc lab.HostConfig) ([]ssh.HostOption, error) {
		vmid := vmids[hc.Name]
		return []ssh.HostOption{ssh.WithPower(
			func(ctx context.Context) error { return l.stop(ctx, vmid) },
			func(ctx context.Context) error { return l.start(ctx, vmid) },
		)}, nil
	})
	if err != nil {
		hypervisor.Close()
		closeJump(jump)
		return nil, err
	}
	l.Lab = static.New(c, static.Options{
		Hosts: hosts,
		Power: func(ctx context.Context, h *ssh.Host) (string, error) {
			s, err := l.status(ctx, vmids[h.Name()])
			if err != nil {
				return "", err
			}
			return powerWord(s), nil
		},
		Close: func() error {
			err := hypervisor.Close()
			closeJump(jump)
			return err
		},
	})
	return l, nil
}

func closeJump(j *ssh.Client) {
	if j != nil {
		j.Close()
	}
}

// newHypervisor reaches proxmox.host with the lab's SSH settings (its jump
// host included); proxmox.user and a port in proxmox.host override them.
func newHypervisor(c *lab.Config, jump *ssh.Client) (*ssh.Host, error) {
	settings := *c.SSH
	px := sectionOf(c)
	host, portText, err := net.SplitHostPort(px.Host)
	if err != nil {
		host = strings.Trim(px.Host, "[]")
	} else {
		port, err := strconv.Atoi(portText)
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("lab %s: proxmox.host: %q is not a port", c.Name, portText)
		}
		settings.Port = port
	}
	if px.User != "" {
		settings.User = px.User
	}
	// The hypervisor is often the jump host itself: reach it directly
	// then, not through itself.
	if settings.Jump != "" {
		if j, err := ssh.ParseJump(settings.Jump); err == nil && j.Address == host && j.Port == settings.Port {
			settings.Jump = ""
		}
	}
	opts := []ssh.HostOption{ssh.WithLabKind(Kind)}
	if settings.Jump != "" && jump != nil {
		opts = append(opts, ssh.WithJump(jump))
	}
	hc := lab.HostConfig{Name: "hypervisor " + host, Address: host}
	h, err := ssh.NewHost(hc, &settings, opts...)
	if err != nil {
		return nil, fmt.Errorf("lab %s: proxmox.host: %w", c.Name, err)
	}
	return h, nil
}

// ResolveVMID is the host's vmid: hosts[i].vmid when set, else the last
// octet of its IPv4 address (the drill's convention).
func ResolveVMID(hc lab.HostConfig) (int, error) {
	if hc.VMID != 0 {
		if hc.VMID < minVMID {
			return 0, fmt.Errorf("%d is below %d, the smallest Proxmox vmid", hc.VMID, minVMID)
		}
		return hc.VMID, nil
	}
	a, err := netip.ParseAddr(hc.Address)
	if err != nil || !a.Is4() {
		return 0, fmt.Errorf("is 0 and address %q is not an IPv4 address to take the last octet from: set it", hc.Address)
	}
	id := int(a.As4()[3])
	if id < minVMID {
		return 0, fmt.Errorf("is 0 and the last octet of %s is %d, below %d, the smallest Proxmox vmid: set it", hc.Address, id, minVMID)
	}
	return id, nil
}

// VMID is the vmid the named host's power operations use.
func (l *Lab) VMID(host string) (int, bool) {
	id, ok := l.vmids[host]
	return id, ok
}

// Hypervisor is the host that runs qm.
func (l *Lab) Hypervisor() *ssh.Host { return l.hypervisor }

func (l *Lab) Info() lab.Info {
	info := l.Lab.Info()
	// Proxmox snapshots exist, but no cold snapshot of the fleet is taken
	// or reverted here: the reset is a cleanup, and reports must say so.
	info.ResetKind = lab.ResetCleanup
	return info
}

// Reset powers on every VM that is off (a run may have ended with one
// powered off), then does the static lab's cleanup. Only the lab file is
// checked before the power on: the marker lives in a cluster that may be
// down until then, and starting a stopped VM of the lab destroys nothing.
func (l *Lab) Reset(ctx context.Context) error {
	if err := guard.CheckConfig(l.Config()); err != nil {
		return err
	}
	if err := l.PowerOnAll(ctx); err != nil {
		return fmt.Errorf("lab %s: reset: %w", l.Config().Name, err)
	}
	return l.Lab.Reset(ctx)
}

// PowerOnAll starts every VM that is not running and waits until each
// answers over SSH.
func (l *Lab) PowerOnAll(ctx context.Context) error {
	for _, h := range l.SSHHosts() {
		s, err := l.status(ctx, l.vmids[h.Name()])
		if err != nil {
			return fmt.Errorf("power state of %s: %w", h.Name(), err)
		}
		if s == "running" {
			continue
		}
		if err := h.PowerOn(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (l *Lab) qm(ctx context.Context, args ...string) (string, error) {
	cmd := "qm " + strings.Join(args, " ")
	res, err := l.hypervisor.Run(ctx, cmd)
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("%s on %s: exit status %d: %s", cmd, l.hypervisor.Name(), res.ExitCode, strings.TrimSpace(res.Stderr+" "+res.Stdout))
	}
	return res.Stdout, nil
}

// status is the VM's state as `qm status` words it (running, stopped, …).
func (l *Lab) status(ctx context.Context, vmid int) (string, error) {
	out, err := l.qm(ctx, "status", strconv.Itoa(vmid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "status:"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("qm status %d: no status line in %q", vmid, out)
}

func powerWord(qmStatus string) string {
	switch qmStatus {
	case "running":
		return "on"
	case "stopped":
		return "off"
	default:
		return "unknown"
	}
}

// stop is a hard power off (qm stop, not qm shutdown), confirmed by status.
func (l *Lab) stop(ctx context.Context, vmid int) error {
	if _, err := l.qm(ctx, "stop", strconv.Itoa(vmid)); err != nil {
		return err
	}
	s, err := l.status(ctx, vmid)
	if err != nil {
		return err
	}
	if s != "stopped" {
		return fmt.Errorf("after qm stop %d the VM is %q, not stopped", vmid, s)
	}
	return nil
}

// start boots the VM unless it already runs (qm start fails on a running VM).
func (l *Lab) start(ctx context.Context, vmid int) error {
	s, err := l.status(ctx, vmid)
	if err != nil {
		return err
	}
	if s == "running" {
		return nil
	}
	_, err = l.qm(ctx, "start", strconv.Itoa(vmid))
	return err
}
