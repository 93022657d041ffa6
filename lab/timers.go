package lab

import (
	"errors"
	"fmt"
	"time"
)

// Timers are the timer values of a lab's cluster that suites derive their
// windows and bounds from. Every backend reports them (Lab.Timers), and
// says what a lab file declares before the lab is opened (TimersOf); the
// named profiles are in lab/timers.
type Timers struct {
	// Profile names the timer profile the values are.
	Profile string `json:"profile"`
	// NodeMonitorPeriod and NodeMonitorGracePeriod are the node lifecycle
	// controller's (kube-controller-manager): how often it looks at the
	// nodes and how long a node may go without a status before it is not
	// Ready.
	NodeMonitorPeriod      time.Duration `json:"nodeMonitorPeriod"`
	NodeMonitorGracePeriod time.Duration `json:"nodeMonitorGracePeriod"`
	// NodeStatusUpdateFrequency is how often a kubelet posts its node's
	// status.
	NodeStatusUpdateFrequency time.Duration `json:"nodeStatusUpdateFrequency"`
	// NotReadyToleration and UnreachableToleration are how long a pod
	// stays bound to a not-ready or unreachable node before the taint
	// manager evicts it (kube-apiserver --default-*-toleration-seconds).
	NotReadyToleration    time.Duration `json:"notReadyToleration"`
	UnreachableToleration time.Duration `json:"unreachableToleration"`
	// LeaderLeaseDuration is the leader-election lease of
	// kube-controller-manager and kube-scheduler.
	LeaderLeaseDuration time.Duration `json:"leaderLeaseDuration"`
}

// Check returns every value that is missing.
func (t Timers) Check() error {
	var errs []error
	for _, v := range []struct {
		name string
		d    time.Duration
	}{
		{"node-monitor-period", t.NodeMonitorPeriod},
		{"node-monitor-grace-period", t.NodeMonitorGracePeriod},
		{"node-status-update-frequency", t.NodeStatusUpdateFrequency},
		{"default-not-ready-toleration-seconds", t.NotReadyToleration},
		{"default-unreachable-toleration-seconds", t.UnreachableToleration},
		{"leader-elect-lease-duration", t.LeaderLeaseDuration},
	} {
		if v.d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, is %s", v.name, v.d))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("timers %q: %w", t.Profile, errors.Join(errs...))
	}
	return nil
}

// TimersOf returns the timers the cluster a lab file describes runs with,
// as its backend reads them from the file alone: suites build their
// tables before they open the lab, and check the opened lab's Timers
// against them.
func TimersOf(c *Config) (Timers, error) {
	b, ok := backendOf(c.Kind)
	if !ok {
		return Timers{}, fmt.Errorf("lab %s: timers: %w", c.Name, unknownKind(c.Kind))
	}
	if b.Timers == nil {
		return Timers{}, fmt.Errorf("lab %s: the %s backend does not say the timers its cluster runs with", c.Name, c.Kind)
	}
	t, err := b.Timers(c)
	if err != nil {
		return Timers{}, err
	}
	if err := t.Check(); err != nil {
		return Timers{}, fmt.Errorf("lab %s: %w", c.Name, err)
	}
	return t, nil
}
