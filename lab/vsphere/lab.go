// Package vsphere is the lab of a fleet of vSphere VMs driven through
// vCenter with govmomi: Reset reverts every VM to one cold snapshot taken
// with the whole fleet powered off and boots the fleet in order (etcd,
// control plane, workers); PowerOff is a hard power off. Everything else a
// host does (commands, services, signals) goes over SSH.
package vsphere

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vmware/govmomi"

	"github.com/faultline/faultline/lab"
	labssh "github.com/faultline/faultline/lab/ssh"
	"github.com/faultline/faultline/lab/timers"
)

func init() {
	lab.Register(lab.Backend{
		Kind:       Kind,
		Section:    "vsphere",
		NewSection: func() any { return new(Section) },
		Validate:   validate,
		Timers:     timers.Declared,
		Open:       openRegistered,
	})
}

// openRegistered is lab.Open's way into Open.
func openRegistered(c *lab.Config) (lab.Lab, error) {
	// lab.Open has no context; a vCenter that swallows packets must
	// still end in an error, not a hang.
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	l, err := Open(ctx, c)
	if err != nil {
		// A nil *Lab must not become a non-nil lab.Lab.
		return nil, err
	}
	return l, nil
}

// openTimeout bounds logging in and finding the fleet when the lab is
// opened through lab.Open.
const openTimeout = 2 * time.Minute

// RemoteHost is a host reached over the network for everything but power,
// which the VM provides.
type RemoteHost interface {
	lab.Host
	// WaitReachable returns once the host answers commands, or when ctx ends.
	WaitReachable(ctx context.Context) error
}

// Power switches one host's VM.
type Power struct {
	// Off is a hard power off; it returns once vCenter reports the VM off.
	Off func(context.Context) error
	// On returns once vCenter reports the VM on (the guest may still boot).
	On func(context.Context) error
	// BootTimeout bounds how long the host's PowerOn waits for it to answer.
	BootTimeout time.Duration
}

// RemoteHostFactory builds the RemoteHost of one host of the lab. Its
// PowerOff and PowerOn must switch the VM with power (and may do more, such
// as dropping a connection to a guest that is gone).
type RemoteHostFactory func(hc lab.HostConfig, c *lab.Config, power Power) (RemoteHost, error)

// ClusterCheck returns once the cluster answers as it should after the
// hosts of group (a role) have booted, or an error when ctx ends first.
type ClusterCheck func(ctx context.Context, group lab.Role) error

// Option changes how Open builds the lab.
type Option func(*options)

type options struct {
	remoteHost   RemoteHostFactory
	clusterCheck ClusterCheck
	bootTimeout  time.Duration
	shutdownWait time.Duration
	pollInterval time.Duration
	// checkKubeconfig is set when the cluster is asked through the lab's
	// kubeconfig, which Reset then loads before it touches anything.
	checkKubeconfig bool
}

// WithRemoteHosts replaces how hosts are reached for commands (SSH by default).
func WithRemoteHosts(f RemoteHostFactory) Option { return func(o *options) { o.remoteHost = f } }

// WithClusterCheck replaces how Reset asks the cluster whether a boot group
// is up (client-go with the lab's kubeconfig by default).
func WithClusterCheck(f ClusterCheck) Option { return func(o *options) { o.clusterCheck = f } }

// WithBootTimeout bounds each stage of booting one group (VM up, hosts
// reachable, cluster answering). Default 10 minutes.
func WithBootTimeout(d time.Duration) Option { return func(o *options) { o.bootTimeout = d } }

// WithShutdownWait bounds how long the cold snapshot waits for guests to
// shut down before powering them off hard. Default 5 minutes.
func WithShutdownWait(d time.Duration) Option { return func(o *options) { o.shutdownWait = d } }

// WithPollInterval sets how often vCenter and the cluster are polled while
// waiting. Default 2 seconds.
func WithPollInterval(d time.Duration) Option { return func(o *options) { o.pollInterval = d } }

// Lab is a vSphere fleet. It implements lab.Lab.
type Lab struct {
	cfg    *lab.Config
	opts   options
	client *govmomi.Client
	// jump is the jump connection the hosts share, if the lab has one.
	jump  *labssh.Client
	fleet []*fleetVM
	hosts []*host
}

var _ lab.Lab = (*Lab)(nil)

// Open logs in to vCenter and finds every host's VM. It changes nothing in
// vCenter. Bad credentials, an unreachable vCenter or a VM that cannot be
// found are errors that name the problem.
func Open(ctx context.Context, c *lab.Config, opt ...Option) (*Lab, error) {
	if c.Kind != Kind || sectionOf(c) == nil {
		return nil, fmt.Errorf("lab %s is a %q lab, not a vsphere lab", c.Name, c.Kind)
	}
	o := options{
		bootTimeout:  10 * time.Minute,
		shutdownWait: 5 * time.Minute,
		pollInterval: 2 * time.Second,
	}
	for _, f := range opt {
		f(&o)
	}
	if o.clusterCheck == nil {
		o.clusterCheck = kubeClusterCheck(c, o.pollInterval)
		o.checkKubeconfig = true
	}
	cred, err := loadCredentials(c)
	if err != nil {
		return nil, err
	}
	var jump *labssh.Client
	if o.remoteHost == nil {
		if jump, err = labssh.NewJump(c.SSH); err != nil {
			return nil, fmt.Errorf("vsphere lab %s: jump host: %w", c.Name, err)
		}
		o.remoteHost = sshRemoteHosts(jump)
	}
	client, err := connect(ctx, sectionOf(c), cred)
	if err != nil {
		if jump != nil {
			_ = jump.Close()
		}
		return nil, fmt.Errorf("vsphere lab %s: %w", c.Name, err)
	}
	l := &Lab{cfg: c, opts: o, client: client, jump: jump}
	fleet, err := findFleet(ctx, client.Client, c)
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("vsphere lab %s: %w", c.Name, err)
	}
	l.fleet = fleet
	for _, v := range fleet {
		h, err := newHost(l, v)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("vsphere lab %s: host %s: %w", c.Name, v.host.Name, err)
		}
		v.labHost = h
		l.hosts = append(l.hosts, h)
	}
	return l, nil
}

func (l *Lab) Info() lab.Info {
	return lab.Info{
		Name:              l.cfg.Name,
		Kind:              Kind,
		Topology:          l.cfg.Name,
		ResetKind:         lab.ResetColdSnapshot,
		KubernetesVersion: l.cfg.Kubernetes.Version,
		EtcdVersion:       l.cfg.Kubernetes.EtcdVersion,
		TimerProfile:      l.cfg.Kubernetes.TimerProfile,
	}
}

func (l *Lab) Config() *lab.Config { return l.cfg }

// Timers are those of the profile the lab file declares: the lab neither
// sets nor reads its cluster's timers.
func (l *Lab) Timers() (lab.Timers, error) { return timers.Declared(l.cfg) }

func (l *Lab) StateDir() string { return l.cfg.StateDir }

func (l *Lab) Hosts() []lab.Host {
	out := make([]lab.Host, len(l.hosts))
	for i, h := range l.hosts {
		out[i] = h
	}
	return out
}

func (l *Lab) Host(name string) (lab.Host, error) {
	for _, h := range l.hosts {
		if h.Name() == name {
			return h, nil
		}
	}
	return nil, fmt.Errorf("vsphere lab %s has no host %q", l.cfg.Name, name)
}

// Close logs out of vCenter.
func (l *Lab) Close() error {
	for _, h := range l.hosts {
		if c, ok := h.RemoteHost.(io.Closer); ok {
			_ = c.Close()
		}
	}
	l.hosts = nil
	if l.jump != nil {
		_ = l.jump.Close()
		l.jump = nil
	}
	if l.client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := l.client.Logout(ctx)
	l.client = nil
	if err != nil {
		return fmt.Errorf("logging out of vCenter: %w", err)
	}
	return nil
}

// forEach runs f for every VM at once and reports every failure.
func forEach(ctx context.Context, vms []*fleetVM, f func(context.Context, *fleetVM) error) error {
	errs := make([]error, len(vms))
	done := make(chan struct{})
	for i, v := range vms {
		go func() {
			defer func() { done <- struct{}{} }()
			errs[i] = f(ctx, v)
		}()
	}
	for range vms {
		<-done
	}
	return errors.Join(errs...)
}

// powerOffHost powers a VM off hard through its host, so that the host
// also drops its connection to the guest that is gone.
func powerOffHost(ctx context.Context, v *fleetVM) error { return v.labHost.PowerOff(ctx) }

func powerOnVM(ctx context.Context, v *fleetVM) error { return v.powerOn(ctx) }
