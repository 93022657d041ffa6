// Package timers holds the timer profiles Kubernetes is run with in a lab.
//
// The profiles are Kubernetes' own values, not any backend's: the local lab
// passes one to every component it starts (the flag and config renderings
// below), and a lab file for a cluster faultline did not build names the
// profile that cluster runs with (kubernetes.timerProfile). Suites read the
// values through lab.Timers, which Profile.Timers gives.
//
// Two profiles exist. kubernetes-defaults is exactly what Kubernetes v1.36
// and etcd v3.6 do when nothing is set, so that figures measured with it are
// the ones papers can quote. fast compresses the node-health, eviction and
// leader-election timers so that CI runs disruptive scenarios in minutes,
// while keeping every ordering Kubernetes relies on (checked by Validate).
//
// Every value is passed explicitly to the components, also in the defaults
// profile, so that a run record states what the cluster really ran with
// instead of trusting that a default did not change.
package timers

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/faultline/faultline/lab"
)

// Profile names, as written in a lab file's kubernetes.timerProfile.
const (
	KubernetesDefaults = "kubernetes-defaults"
	Fast               = "fast"
)

// Constants of Kubernetes that the profiles' orderings depend on. They are
// not configurable, so they are not part of a Profile.
const (
	// NodeLeaseRenewFraction is the fraction of the node lease duration
	// after which the kubelet renews its lease
	// (pkg/kubelet/kubelet.go nodeLeaseRenewIntervalFraction).
	NodeLeaseRenewFraction = 0.25
	// NodeStatusUpdateRetry is how many status updates the node lifecycle
	// controller's grace period must cover: "Must be N times more than
	// kubelet's nodeStatusUpdateFrequency, where N means number of retries
	// allowed for kubelet to post node status" (--node-monitor-grace-period;
	// pkg/kubelet/kubelet.go nodeStatusUpdateRetry = 5).
	NodeStatusUpdateRetry = 5
	// LeaderElectionJitterFactor is client-go's leaderelection.JitterFactor;
	// a renew deadline must exceed it times the retry period.
	LeaderElectionJitterFactor = 1.2
	// EtcdElectionHeartbeatRatio is the least election-timeout /
	// heartbeat-interval ratio etcd accepts.
	EtcdElectionHeartbeatRatio = 5
)

// LeaderElection is the leader-election timing of kube-controller-manager
// and kube-scheduler.
type LeaderElection struct {
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// Profile is one set of timer values for every component of a lab.
type Profile struct {
	Name string

	// kube-controller-manager, node lifecycle controller.
	NodeMonitorPeriod      time.Duration
	NodeMonitorGracePeriod time.Duration
	NodeStartupGracePeriod time.Duration

	// kube-apiserver, DefaultTolerationSeconds admission plugin: how long
	// a pod stays bound to a not-ready or unreachable node before the
	// taint manager evicts it.
	DefaultNotReadyTolerationSeconds    int64
	DefaultUnreachableTolerationSeconds int64

	// kubelet (KubeletConfiguration fields).
	NodeStatusUpdateFrequency time.Duration
	NodeStatusReportFrequency time.Duration
	NodeLeaseDurationSeconds  int32

	// kube-controller-manager and kube-scheduler.
	LeaderElection LeaderElection

	// client-go's HTTP/2 connection health check, for every component that
	// talks to an API server (environment variables
	// HTTP2_READ_IDLE_TIMEOUT_SECONDS, HTTP2_PING_TIMEOUT_SECONDS). It bounds
	// how long a component keeps using a connection to an API server that
	// stopped answering.
	HTTP2ReadIdleTimeout time.Duration
	HTTP2PingTimeout     time.Duration

	// etcd.
	EtcdHeartbeatInterval time.Duration
	EtcdElectionTimeout   time.Duration
}

// kubernetesDefaults are the values Kubernetes v1.36.3 and etcd v3.6.8 use
// when nothing is set. Sources, read at those versions:
//   - node-monitor-period 5s: k8s.io/cloud-provider config/v1alpha1/defaults.go;
//     https://kubernetes.io/docs/reference/command-line-tools-reference/kube-controller-manager/
//   - node-monitor-grace-period 50s (40s before v1.32, raised so that it
//     exceeds the HTTP/2 health check below) and node-startup-grace-period
//     1m: pkg/controller/nodelifecycle/config/v1alpha1/defaults.go; same page.
//   - default-not-ready-toleration-seconds and
//     default-unreachable-toleration-seconds 300:
//     plugin/pkg/admission/defaulttolerationseconds/admission.go;
//     https://kubernetes.io/docs/reference/command-line-tools-reference/kube-apiserver/
//   - nodeStatusUpdateFrequency 10s, nodeStatusReportFrequency 5m,
//     nodeLeaseDurationSeconds 40: pkg/kubelet/apis/config/v1beta1/defaults.go;
//     https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/
//   - leader election lease 15s, renew deadline 10s, retry 2s:
//     k8s.io/component-base config/v1alpha1/defaults.go;
//     https://kubernetes.io/docs/reference/command-line-tools-reference/kube-scheduler/
//   - HTTP/2 read idle 30s, ping timeout 15s: k8s.io/apimachinery
//     pkg/util/net/http.go readIdleTimeoutSeconds, pingTimeoutSeconds.
//   - etcd heartbeat-interval 100ms, election-timeout 1000ms:
//     go.etcd.io/etcd/server/v3 embed/config.go NewConfig;
//     https://etcd.io/docs/v3.6/op-guide/configuration/
var kubernetesDefaults = Profile{
	Name:                                KubernetesDefaults,
	NodeMonitorPeriod:                   5 * time.Second,
	NodeMonitorGracePeriod:              50 * time.Second,
	NodeStartupGracePeriod:              60 * time.Second,
	DefaultNotReadyTolerationSeconds:    300,
	DefaultUnreachableTolerationSeconds: 300,
	NodeStatusUpdateFrequency:           10 * time.Second,
	NodeStatusReportFrequency:           5 * time.Minute,
	NodeLeaseDurationSeconds:            40,
	LeaderElection: LeaderElection{
		LeaseDuration: 15 * time.Second,
		RenewDeadline: 10 * time.Second,
		RetryPeriod:   2 * time.Second,
	},
	HTTP2ReadIdleTimeout:  30 * time.Second,
	HTTP2PingTimeout:      15 * time.Second,
	EtcdHeartbeatInterval: 100 * time.Millisecond,
	EtcdElectionTimeout:   1000 * time.Millisecond,
}

// fast keeps the defaults' proportions where Kubernetes depends on them:
// the grace period covers five status updates and outlasts both the node
// lease and the HTTP/2 health check, as 50s does for 10s, 40s and 30s+15s;
// leader election keeps lease > renew > 1.2 × retry. A node goes
// Ready=Unknown about 12s after its kubelet stops instead of 50s, and its
// pods are evicted 30s after that instead of 300s. etcd keeps its defaults:
// they are already sub-second and scenarios about etcd should see the real
// election behaviour.
var fast = Profile{
	Name:                                Fast,
	NodeMonitorPeriod:                   1 * time.Second,
	NodeMonitorGracePeriod:              12 * time.Second,
	NodeStartupGracePeriod:              20 * time.Second,
	DefaultNotReadyTolerationSeconds:    30,
	DefaultUnreachableTolerationSeconds: 30,
	NodeStatusUpdateFrequency:           2 * time.Second,
	NodeStatusReportFrequency:           10 * time.Second,
	NodeLeaseDurationSeconds:            8,
	LeaderElection: LeaderElection{
		LeaseDuration: 6 * time.Second,
		RenewDeadline: 4 * time.Second,
		RetryPeriod:   1 * time.Second,
	},
	HTTP2ReadIdleTimeout:  5 * time.Second,
	HTTP2PingTimeout:      3 * time.Second,
	EtcdHeartbeatInterval: 100 * time.Millisecond,
	EtcdElectionTimeout:   1000 * time.Millisecond,
}

// Names lists the profiles.
func Names() []string { return []string{KubernetesDefaults, Fast} }

// Get returns the named profile.
func Get(name string) (Profile, error) {
	switch name {
	case KubernetesDefaults:
		return kubernetesDefaults, nil
	case Fast:
		return fast, nil
	}
	return Profile{}, fmt.Errorf("unknown timer profile %q (known: %s, %s)", name, KubernetesDefaults, Fast)
}

// Timers are the profile's values suites derive their bounds from.
func (p Profile) Timers() lab.Timers {
	return lab.Timers{
		Profile:                   p.Name,
		NodeMonitorPeriod:         p.NodeMonitorPeriod,
		NodeMonitorGracePeriod:    p.NodeMonitorGracePeriod,
		NodeStatusUpdateFrequency: p.NodeStatusUpdateFrequency,
		NotReadyToleration:        time.Duration(p.DefaultNotReadyTolerationSeconds) * time.Second,
		UnreachableToleration:     time.Duration(p.DefaultUnreachableTolerationSeconds) * time.Second,
		LeaderLeaseDuration:       p.LeaderElection.LeaseDuration,
	}
}

// Declared returns the timers of the profile a lab file names in
// kubernetes.timerProfile, for a backend that runs no cluster of its own
// and reads no component's flags: the file's word is all it has, and a
// file that names no profile is an error saying so.
func Declared(c *lab.Config) (lab.Timers, error) {
	name := c.Kubernetes.TimerProfile
	if name == "" {
		return lab.Timers{}, fmt.Errorf("lab %s: kubernetes.timerProfile is not set, and a %s lab does not read its cluster's timers from the components: "+
			"name the profile the cluster runs with (%s or %s)", c.Name, c.Kind, KubernetesDefaults, Fast)
	}
	p, err := Get(name)
	if err != nil {
		return lab.Timers{}, fmt.Errorf("lab %s: kubernetes.timerProfile: %w", c.Name, err)
	}
	return p.Timers(), nil
}

// NodeLeaseDuration is the kubelet's node lease duration.
func (p Profile) NodeLeaseDuration() time.Duration {
	return time.Duration(p.NodeLeaseDurationSeconds) * time.Second
}

// NodeLeaseRenewInterval is how often a kubelet renews its node lease.
func (p Profile) NodeLeaseRenewInterval() time.Duration {
	return time.Duration(float64(p.NodeLeaseDuration()) * NodeLeaseRenewFraction)
}

// Validate checks the orderings Kubernetes and etcd need between the values
// and returns every one that does not hold.
func (p Profile) Validate() error {
	var errs []error
	need := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	positive := map[string]time.Duration{
		"node-monitor-period":             p.NodeMonitorPeriod,
		"node-monitor-grace-period":       p.NodeMonitorGracePeriod,
		"node-startup-grace-period":       p.NodeStartupGracePeriod,
		"nodeStatusUpdateFrequency":       p.NodeStatusUpdateFrequency,
		"nodeStatusReportFrequency":       p.NodeStatusReportFrequency,
		"nodeLeaseDurationSeconds":        p.NodeLeaseDuration(),
		"leader-elect-lease-duration":     p.LeaderElection.LeaseDuration,
		"leader-elect-renew-deadline":     p.LeaderElection.RenewDeadline,
		"leader-elect-retry-period":       p.LeaderElection.RetryPeriod,
		"HTTP2_READ_IDLE_TIMEOUT_SECONDS": p.HTTP2ReadIdleTimeout,
		"HTTP2_PING_TIMEOUT_SECONDS":      p.HTTP2PingTimeout,
		"etcd heartbeat-interval":         p.EtcdHeartbeatInterval,
		"etcd election-timeout":           p.EtcdElectionTimeout,
	}
	for _, name := range sortedKeys(positive) {
		need(positive[name] > 0, "%s must be positive, is %s", name, positive[name])
	}
	need(p.DefaultNotReadyTolerationSeconds > 0, "default-not-ready-toleration-seconds must be positive, is %d", p.DefaultNotReadyTolerationSeconds)
	need(p.DefaultUnreachableTolerationSeconds > 0, "default-unreachable-toleration-seconds must be positive, is %d", p.DefaultUnreachableTolerationSeconds)

	// Node health: the controller must look more often than its grace
	// period, and the grace period must outlast every way a healthy kubelet
	// can legitimately be late.
	need(p.NodeMonitorPeriod < p.NodeMonitorGracePeriod,
		"node-monitor-period %s must be shorter than node-monitor-grace-period %s", p.NodeMonitorPeriod, p.NodeMonitorGracePeriod)
	need(p.NodeMonitorGracePeriod >= NodeStatusUpdateRetry*p.NodeStatusUpdateFrequency,
		"node-monitor-grace-period %s must cover %d kubelet status updates (nodeStatusUpdateFrequency %s)", p.NodeMonitorGracePeriod, NodeStatusUpdateRetry, p.NodeStatusUpdateFrequency)
	need(p.NodeMonitorGracePeriod > p.NodeLeaseDuration(),
		"node-monitor-grace-period %s must exceed the node lease duration %s", p.NodeMonitorGracePeriod, p.NodeLeaseDuration())
	need(p.NodeLeaseRenewInterval() < p.NodeMonitorGracePeriod,
		"node lease renew interval %s must be shorter than node-monitor-grace-period %s", p.NodeLeaseRenewInterval(), p.NodeMonitorGracePeriod)
	need(p.NodeMonitorGracePeriod > p.HTTP2ReadIdleTimeout+p.HTTP2PingTimeout,
		"node-monitor-grace-period %s must exceed the HTTP/2 health check (read idle %s + ping %s), or a kubelet stuck on a dead API server connection is declared unhealthy before it fails over",
		p.NodeMonitorGracePeriod, p.HTTP2ReadIdleTimeout, p.HTTP2PingTimeout)
	need(p.NodeStartupGracePeriod >= p.NodeMonitorGracePeriod,
		"node-startup-grace-period %s must not be shorter than node-monitor-grace-period %s", p.NodeStartupGracePeriod, p.NodeMonitorGracePeriod)
	need(p.NodeStatusReportFrequency >= p.NodeStatusUpdateFrequency,
		"nodeStatusReportFrequency %s must not be shorter than nodeStatusUpdateFrequency %s", p.NodeStatusReportFrequency, p.NodeStatusUpdateFrequency)

	le := p.LeaderElection
	need(le.LeaseDuration > le.RenewDeadline,
		"leader-elect-lease-duration %s must exceed leader-elect-renew-deadline %s", le.LeaseDuration, le.RenewDeadline)
	need(float64(le.RenewDeadline) > LeaderElectionJitterFactor*float64(le.RetryPeriod),
		"leader-elect-renew-deadline %s must exceed %.1f × leader-elect-retry-period %s", le.RenewDeadline, LeaderElectionJitterFactor, le.RetryPeriod)

	need(p.EtcdElectionTimeout >= EtcdElectionHeartbeatRatio*p.EtcdHeartbeatInterval,
		"etcd election-timeout %s must be at least %d × heartbeat-interval %s", p.EtcdElectionTimeout, EtcdElectionHeartbeatRatio, p.EtcdHeartbeatInterval)

	if len(errs) > 0 {
		return fmt.Errorf("timer profile %s: %w", p.Name, errors.Join(errs...))
	}
	return nil
}

// APIServerFlags are kube-apiserver command-line flags.
func (p Profile) APIServerFlags() []string {
	return []string{
		"--default-not-ready-toleration-seconds=" + strconv.FormatInt(p.DefaultNotReadyTolerationSeconds, 10),
		"--default-unreachable-toleration-seconds=" + strconv.FormatInt(p.DefaultUnreachableTolerationSeconds, 10),
	}
}

// ControllerManagerFlags are kube-controller-manager command-line flags.
func (p Profile) ControllerManagerFlags() []string {
	return append([]string{
		"--node-monitor-period=" + p.NodeMonitorPeriod.String(),
		"--node-monitor-grace-period=" + p.NodeMonitorGracePeriod.String(),
		"--node-startup-grace-period=" + p.NodeStartupGracePeriod.String(),
	}, p.leaderElectionFlags()...)
}

// SchedulerFlags are kube-scheduler command-line flags.
func (p Profile) SchedulerFlags() []string { return p.leaderElectionFlags() }

func (p Profile) leaderElectionFlags() []string {
	return []string{
		"--leader-elect=true",
		"--leader-elect-lease-duration=" + p.LeaderElection.LeaseDuration.String(),
		"--leader-elect-renew-deadline=" + p.LeaderElection.RenewDeadline.String(),
		"--leader-elect-retry-period=" + p.LeaderElection.RetryPeriod.String(),
	}
}

// KubeletConfig returns the KubeletConfiguration (kubelet.config.k8s.io/
// v1beta1) fields the profile sets, keyed by their JSON names, to merge into
// a kubelet config file. The kubelet's command-line flags for these are
// deprecated.
func (p Profile) KubeletConfig() map[string]any {
	return map[string]any{
		"nodeStatusUpdateFrequency": p.NodeStatusUpdateFrequency.String(),
		"nodeStatusReportFrequency": p.NodeStatusReportFrequency.String(),
		"nodeLeaseDurationSeconds":  p.NodeLeaseDurationSeconds,
	}
}

// ClientEnv is the environment of every component that talks to an API
// server through client-go (kubelet, kube-proxy, kube-controller-manager,
// kube-scheduler).
func (p Profile) ClientEnv() []string {
	return []string{
		"HTTP2_READ_IDLE_TIMEOUT_SECONDS=" + seconds(p.HTTP2ReadIdleTimeout),
		"HTTP2_PING_TIMEOUT_SECONDS=" + seconds(p.HTTP2PingTimeout),
	}
}

// EtcdFlags are etcd command-line flags.
func (p Profile) EtcdFlags() []string {
	return []string{
		"--heartbeat-interval=" + strconv.FormatInt(p.EtcdHeartbeatInterval.Milliseconds(), 10),
		"--election-timeout=" + strconv.FormatInt(p.EtcdElectionTimeout.Milliseconds(), 10),
	}
}

// Flat is every value of the profile, keyed by component and setting name,
// for lab status and run records. Durations are Go duration strings.
func (p Profile) Flat() map[string]string {
	return map[string]string{
		"profile": p.Name,
		"kube-controller-manager.node-monitor-period":           p.NodeMonitorPeriod.String(),
		"kube-controller-manager.node-monitor-grace-period":     p.NodeMonitorGracePeriod.String(),
		"kube-controller-manager.node-startup-grace-period":     p.NodeStartupGracePeriod.String(),
		"kube-apiserver.default-not-ready-toleration-seconds":   strconv.FormatInt(p.DefaultNotReadyTolerationSeconds, 10),
		"kube-apiserver.default-unreachable-toleration-seconds": strconv.FormatInt(p.DefaultUnreachableTolerationSeconds, 10),
		"kubelet.nodeStatusUpdateFrequency":                     p.NodeStatusUpdateFrequency.String(),
		"kubelet.nodeStatusReportFrequency":                     p.NodeStatusReportFrequency.String(),
		"kubelet.nodeLeaseDurationSeconds":                      strconv.Itoa(int(p.NodeLeaseDurationSeconds)),
		"kubelet.node-lease-renew-interval":                     p.NodeLeaseRenewInterval().String(),
		"leader-election.lease-duration":                        p.LeaderElection.LeaseDuration.String(),
		"leader-election.renew-deadline":                        p.LeaderElection.RenewDeadline.String(),
		"leader-election.retry-period":                          p.LeaderElection.RetryPeriod.String(),
		"client-go.http2-read-idle-timeout":                     p.HTTP2ReadIdleTimeout.String(),
		"client-go.http2-ping-timeout":                          p.HTTP2PingTimeout.String(),
		"etcd.heartbeat-interval":                               p.EtcdHeartbeatInterval.String(),
		"etcd.election-timeout":                                 p.EtcdElectionTimeout.String(),
	}
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
