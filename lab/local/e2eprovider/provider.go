// Package e2eprovider makes faultline's local lab a cluster provider of
// sigs.k8s.io/e2e-framework, beside its kind, k3d and kwok: a plain
// e2e-framework test brings up a real multi-host cluster of real processes
// (etcd, API servers, controller-managers, schedulers, kubelets on
// containerd) with envfuncs.CreateCluster, loads image archives into every
// node, powers nodes off and on, and takes the lab down with
// envfuncs.DestroyCluster.
//
// The provider calls the local lab's own life cycle (local.Lab's Up, Down,
// Kubeconfig, ImportImageArchive, ExportLogs, WaitHealthy and its hosts'
// PowerOff and PowerOn), the same functions `faultline lab up` and `lab
// down` call. Like every program that brings a local lab up, the test
// binary must provide the node images (lab.ProvideNodeImages; importing
// github.com/faultline/faultline/fixtures/images does it), run as root,
// and find the binaries `make bins` builds.
package e2eprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local"
	"github.com/faultline/faultline/lab/timers"
)

// teardownTimeout bounds bringing a lab down after a failed Create or
// WaitForControlPlane, whose own context may have ended.
const teardownTimeout = 5 * time.Minute

// Provider is the local lab as an e2e-framework cluster provider. Its
// zero value is not usable: make one with New or NewProvider.
type Provider struct {
	name          string
	labArg        string
	profile       string
	version       string
	path          string
	useRunning    bool
	keepOnFailure bool
	progress      io.Writer

	lab        *local.Lab
	broughtUp  bool
	kubeconfig string
	kubeCtx    string
	rc         *rest.Config
}

var (
	_ support.E2EClusterProvider                = (*Provider)(nil)
	_ support.E2EClusterProviderWithImageLoader = (*Provider)(nil)
	_ support.E2EClusterProviderWithLifeCycle   = (*Provider)(nil)
)

// New returns a provider with no lab yet: Create brings one up.
func New() *Provider { return &Provider{} }

// NewProvider is New as the framework's own providers spell it.
func NewProvider() support.E2EClusterProvider { return New() }

// WithLab names the lab to bring up: a lab file, or a topology name
// looked up as testdata/labs/<name>.yaml in the current directory and its
// parents, as `faultline lab up --lab` takes it. Without it the cluster
// name is taken as the lab.
func WithLab(arg string) support.ClusterOpts {
	return func(c support.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.labArg = arg
		}
	}
}

// WithTimerProfile overrides the lab file's kubernetes.timerProfile, as
// `faultline lab up --profile` does: kubernetes-defaults or fast.
func WithTimerProfile(profile string) support.ClusterOpts {
	return func(c support.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.profile = profile
		}
	}
}

// UseRunning makes Create use the lab when it is already up, rather than
// refuse it, and Destroy leave it up: the lab is someone else's.
func UseRunning() support.ClusterOpts {
	return func(c support.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.useRunning = true
		}
	}
}

// KeepOnFailure leaves a lab that Create brought up in place when Create
// or WaitForControlPlane fails, for a look at it; without it the lab is
// brought down again, since envfuncs then keeps no provider that
// DestroyCluster could find. Bring a kept lab down with `faultline lab
// down --lab <its lab file>`.
func KeepOnFailure() support.ClusterOpts {
	return func(c support.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.keepOnFailure = true
		}
	}
}

// WithProgress makes the lab write a line per step of bringing it up and
// down to w, as `faultline lab up` prints on standard error.
func WithProgress(w io.Writer) support.ClusterOpts {
	return func(c support.E2EClusterProvider) {
		if p, ok := c.(*Provider); ok {
			p.progress = w
		}
	}
}

// WithName sets the cluster name, the key under which envfuncs keeps the
// provider in the test's context. It is also the lab to bring up when
// nothing else names one (WithLab, Create's --lab, CreateWithConfig).
func (p *Provider) WithName(name string) support.E2EClusterProvider {
	p.name = name
	return p
}

// WithVersion overrides the lab file's kubernetes.version. The local lab
// runs the Kubernetes `make bins` builds, so only that version is
// accepted; another is refused by Create with the version the build pins.
// "1.36.3" is read as "v1.36.3".
func (p *Provider) WithVersion(version string) support.E2EClusterProvider {
	if version != "" && !strings.HasPrefix(version, "v") {
		version = "v" + version
	}
	p.version = version
	return p
}

// WithPath is recorded and refused by Create: the local lab runs no
// provider executable (kind and k3d run theirs); its components are found
// in the binary cache.
func (p *Provider) WithPath(path string) support.E2EClusterProvider {
	p.path = path
	return p
}

// WithOpts applies options; those of other providers are ignored, as
// every provider of the framework does.
func (p *Provider) WithOpts(opts ...support.ClusterOpts) support.E2EClusterProvider {
	for _, o := range opts {
		o(p)
	}
	return p
}

// SetDefaults has nothing to default: the lab file holds every setting.
func (p *Provider) SetDefaults() support.E2EClusterProvider { return p }

// Create brings the lab up and returns the path of its admin kubeconfig
// (the virtual address's where the lab has one). args are those of
// `faultline lab up`: --lab (or --topology) and --profile. A lab that is
// already up is refused unless UseRunning was given; a lab whose Up
// failed after touching the machine is brought down again unless
// KeepOnFailure was given.
func (p *Provider) Create(ctx context.Context, args ...string) (string, error) {
	return p.create(ctx, "", args)
}

// CreateWithConfig is Create with the lab file given: configFile is a lab
// file (or a topology name), as WithLab takes it.
func (p *Provider) CreateWithConfig(ctx context.Context, configFile string) (string, error) {
	if configFile == "" {
		return "", errors.New("local lab provider: CreateWithConfig: no lab file given")
	}
	return p.create(ctx, configFile, nil)
}

func (p *Provider) create(ctx context.Context, configFile string, args []string) (string, error) {
	if p.lab != nil {
		return "", fmt.Errorf("local lab provider: Create: lab %s was already created by this provider", p.lab.Config().Name)
	}
	l, err := p.open(configFile, args)
	if err != nil {
		return "", fmt.Errorf("local lab provider: Create: %w", err)
	}
	name := l.Config().Name
	st, err := l.Status(ctx)
	if err != nil {
		l.Close()
		return "", fmt.Errorf("local lab provider: Create: reading the state of lab %s: %w", name, err)
	}
	switch {
	case st.Up && !p.useRunning:
		l.Close()
		return "", fmt.Errorf("local lab provider: Create: lab %s is already up (state dir %s): bring it down first (faultline lab down --lab %s), or give UseRunning() to test against it without bringing it up or down",
			name, l.StateDir(), l.Config().Path())
	case !st.Up && p.useRunning:
		l.Close()
		return "", fmt.Errorf("local lab provider: Create: UseRunning: lab %s is not up (no state in %s)", name, l.StateDir())
	case st.Up:
		if err := p.checkRunningSettings(l); err != nil {
			l.Close()
			return "", fmt.Errorf("local lab provider: Create: %w", err)
		}
	default:
		if err := l.Up(ctx); err != nil {
			return "", p.abandon(l, true, fmt.Errorf("local lab provider: Create: %w", err))
		}
	}
	kubeconfig, err := l.Kubeconfig("")
	if err == nil {
		err = p.connect(kubeconfig)
	}
	if err != nil {
		return "", p.abandon(l, !p.useRunning, fmt.Errorf("local lab provider: Create: lab %s: %w", name, err))
	}
	p.lab, p.broughtUp = l, !p.useRunning
	return p.kubeconfig, nil
}

// open loads the lab file the settings name, with the overrides, and
// opens the local lab; nothing on the machine is touched.
func (p *Provider) open(configFile string, args []string) (*local.Lab, error) {
	if p.path != "" {
		return nil, fmt.Errorf("WithPath(%q): the local lab runs no provider executable; its components come from the binary cache ($FAULTLINE_CACHE, built by make bins)", p.path)
	}
	s, err := p.settings(configFile, args)
	if err != nil {
		return nil, err
	}
	path, err := lab.ResolveConfigPath(s.lab)
	if err != nil {
		return nil, err
	}
	c, err := lab.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if c.Kind != local.Kind {
		return nil, fmt.Errorf("lab file %s is a %s lab: this provider brings up local labs only (faultline does not provision a %s lab)", path, c.Kind, c.Kind)
	}
	if s.profile != "" {
		c.Kubernetes.TimerProfile = s.profile
	}
	if p.version != "" {
		c.Kubernetes.Version = p.version
	}
	l, err := local.New(c)
	if err != nil {
		return nil, err
	}
	if p.progress != nil {
		l.SetProgress(p.progress)
	}
	return l, nil
}

// settings are the lab and the timer profile, from the options, Create's
// arguments, CreateWithConfig's file and the cluster name.
type settings struct {
	lab, profile string
}

func (p *Provider) settings(configFile string, args []string) (settings, error) {
	a, err := parseCreateArgs(args)
	if err != nil {
		return settings{}, err
	}
	var s settings
	for _, src := range []struct{ what, val string }{
		{"WithLab", p.labArg}, {"Create's --lab", a.lab}, {"CreateWithConfig's lab file", configFile},
	} {
		if src.val == "" {
			continue
		}
		if s.lab != "" && s.lab != src.val {
			return settings{}, fmt.Errorf("%s %q and an earlier setting %q name different labs; give one", src.what, src.val, s.lab)
		}
		s.lab = src.val
	}
	if s.lab == "" {
		s.lab = p.name
	}
	if s.lab == "" {
		return settings{}, errors.New("no lab: give a topology name as the cluster name, WithLab, Create's --lab, or CreateWithConfig's lab file")
	}
	switch {
	case p.profile != "" && a.profile != "" && p.profile != a.profile:
		return settings{}, fmt.Errorf("WithTimerProfile %q and Create's --profile %q differ; give one", p.profile, a.profile)
	case p.profile != "":
		s.profile = p.profile
	default:
		s.profile = a.profile
	}
	if s.profile != "" && !slices.Contains(timers.Names(), s.profile) {
		return settings{}, fmt.Errorf("timer profile %q is not one (%s)", s.profile, strings.Join(timers.Names(), " or "))
	}
	return s, nil
}

// checkRunningSettings refuses a running lab whose profile or version is
// not what the options asked for explicitly: the test would be sized for
// other timers than the cluster runs.
func (p *Provider) checkRunningSettings(l *local.Lab) error {
	running := l.Config().Kubernetes
	if p.profile != "" && running.TimerProfile != p.profile {
		return fmt.Errorf("lab %s is up with timer profile %s, not %s", l.Config().Name, running.TimerProfile, p.profile)
	}
	if p.version != "" && running.Version != p.version {
		return fmt.Errorf("lab %s is up with Kubernetes %s, not %s", l.Config().Name, running.Version, p.version)
	}
	return nil
}

// connect reads the kubeconfig the tests will use.
func (p *Provider) connect(kubeconfig string) error {
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	p.kubeconfig, p.kubeCtx, p.rc = kubeconfig, raw.CurrentContext, rc
	return nil
}

// abandon closes a lab that failed to be created and, when this provider
// brought it up (down) and may take it down, brings it down if it left
// anything on the machine. It returns cause with whatever that failed.
func (p *Provider) abandon(l *local.Lab, down bool, cause error) error {
	errs := []error{cause}
	if down && !p.keepOnFailure {
		ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
		defer cancel()
		if st, err := l.Status(ctx); err != nil || st.Up {
			if err := l.Down(ctx); err != nil {
				errs = append(errs, fmt.Errorf("bringing lab %s down after the failure: %w (faultline lab down --lab %s)", l.Config().Name, err, l.Config().Path()))
			}
		}
	} else if down {
		errs = append(errs, fmt.Errorf("lab %s is left as it is (KeepOnFailure): bring it down with faultline lab down --lab %s", l.Config().Name, l.Config().Path()))
	}
	if err := l.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// created returns the lab, or an error naming the operation when Create
// has not brought one up.
func (p *Provider) created(op string) (*local.Lab, error) {
	if p.lab == nil {
		return nil, fmt.Errorf("local lab provider: %s: no lab (Create has not succeeded)", op)
	}
	return p.lab, nil
}

// Lab is the local lab Create brought up (nil before): its hosts, timers
// and the rest of faultline's lab interface, for what a test does beyond
// the framework's operations.
func (p *Provider) Lab() *local.Lab { return p.lab }

// GetKubeconfig is the path Create returned ("" before Create).
func (p *Provider) GetKubeconfig() string { return p.kubeconfig }

// GetKubectlContext is the kubeconfig's current context ("" before
// Create).
func (p *Provider) GetKubectlContext() string { return p.kubeCtx }

// KubernetesRestConfig is the kubeconfig's client configuration (nil
// before Create).
func (p *Provider) KubernetesRestConfig() *rest.Config { return p.rc }

// GenerateKubeconfig returns an admin kubeconfig: with no argument the
// one Create returned, with a control-plane host's name one that reaches
// that host's API server alone.
func (p *Provider) GenerateKubeconfig(args ...string) (string, error) {
	l, err := p.created("GenerateKubeconfig")
	if err != nil {
		return "", err
	}
	switch len(args) {
	case 0:
		return l.Kubeconfig("")
	case 1:
		return l.Kubeconfig(args[0])
	}
	return "", fmt.Errorf("local lab provider: GenerateKubeconfig: takes at most one control-plane host, got %q", args)
}

// ExportLogs copies every host's service logs and every node's container
// logs into dest, a folder per host (see local.Lab.ExportLogs).
func (p *Provider) ExportLogs(ctx context.Context, dest string) error {
	l, err := p.created("ExportLogs")
	if err != nil {
		return err
	}
	return l.ExportLogs(ctx, dest)
}

// WaitForControlPlane waits until every node is Ready with a kubelet that
// renewed its lease since the call and both leader leases are held, as
// the lab's own Up does before it returns (local.Lab.WaitHealthy, through
// the lab's admin kubeconfig). client must reach the lab's API. When it
// fails, the provider lets go of the lab, and brings a lab it brought up
// down (unless KeepOnFailure): envfuncs.CreateCluster then keeps no
// provider for DestroyCluster to find.
func (p *Provider) WaitForControlPlane(ctx context.Context, client klient.Client) error {
	l, err := p.created("WaitForControlPlane")
	if err != nil {
		return err
	}
	if client != nil && client.RESTConfig() != nil && client.RESTConfig().Host != p.rc.Host {
		return fmt.Errorf("local lab provider: WaitForControlPlane: the client given talks to %s, lab %s's API is at %s",
			client.RESTConfig().Host, l.Config().Name, p.rc.Host)
	}
	if err := l.WaitHealthy(ctx); err != nil {
		err = p.abandon(l, p.broughtUp, fmt.Errorf("local lab provider: WaitForControlPlane: %w", err))
		p.forget()
		return err
	}
	return nil
}

// Destroy brings the lab down and removes everything it made, its
// kubeconfig included; a lab that was up before Create (UseRunning) is
// left up.
func (p *Provider) Destroy(ctx context.Context) error {
	l, err := p.created("Destroy")
	if err != nil {
		return err
	}
	var errs []error
	if p.broughtUp {
		if err := l.Down(ctx); err != nil {
			errs = append(errs, fmt.Errorf("local lab provider: Destroy: %w (what is left: faultline lab down --lab %s)", err, l.Config().Path()))
		}
	} else if p.progress != nil {
		fmt.Fprintf(p.progress, "lab %s: left up, as it was before the tests (UseRunning)\n", l.Config().Name)
	}
	if err := l.Close(); err != nil {
		errs = append(errs, err)
	}
	p.forget()
	return errors.Join(errs...)
}

// forget drops the lab, so that the provider can Create again.
func (p *Provider) forget() {
	p.lab, p.broughtUp, p.kubeconfig, p.kubeCtx, p.rc = nil, false, "", "", nil
}
