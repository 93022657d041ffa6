// Package disagree is paper 1's suite: which of Kubernetes' guarantees
// still hold when its components disagree. The scenario table lives in the
// suite's test files (run with ginkgo); this file derives every time bound
// the table uses from the lab's timer profile, so that a window means the
// same thing under `fast` and under `kubernetes-defaults`.
package disagree

import (
	"fmt"
	"os"
	"time"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/timers"
)

// Bounds are the windows and timeouts of the suite, all derived from one
// timer profile.
type Bounds struct {
	// Profile is the timer profile the bounds come from.
	Profile string
	// NodeWindow covers a node fault: the controller notices (grace
	// period), evicts (unreachable toleration), and a replacement has
	// time to be scheduled and start (two more grace periods).
	NodeWindow time.Duration
	// ControlPlaneWindow covers a control-plane fault: three leader
	// leases for a failover to happen and be seen, plus two grace periods
	// for any node consequence.
	ControlPlaneWindow time.Duration
	// Settle bounds convergence after heal: twice a node's whole
	// notice-and-evict cycle, plus a margin for a loaded machine that
	// restarts pods from cold.
	Settle time.Duration
	// Fixtures bounds installing and waiting for the fixtures after a
	// reset.
	Fixtures   time.Duration
	Invariants invariant.Bounds
}

// settleMargin is what a machine shared by several labs adds to any
// convergence: image unpacking, pod sandboxes, and CPU starvation.
const settleMargin = 2 * time.Minute

// BoundsFor derives the suite's bounds from a timer profile.
func BoundsFor(p timers.Profile) Bounds {
	grace := p.NodeMonitorGracePeriod
	evict := time.Duration(p.DefaultUnreachableTolerationSeconds) * time.Second
	lease := p.LeaderElection.LeaseDuration
	return Bounds{
		Profile:            p.Name,
		NodeWindow:         grace + evict + 2*grace,
		ControlPlaneWindow: 3*lease + 2*grace,
		Settle:             2*(grace+evict) + settleMargin,
		Fixtures:           2*(grace+evict) + settleMargin,
		Invariants: invariant.Bounds{
			// A value shown by one API server changes at most once per
			// status update; two servers apart for longer than two
			// updates means one of them is stuck, not merely behind.
			Staleness: 2 * p.NodeStatusUpdateFrequency,
			// The endpoint controller learns of a dead node after the
			// grace period and reacts within a monitor period; two status
			// updates of margin for the kubelet's own readiness report.
			Endpoints: grace + 2*p.NodeMonitorPeriod + 2*p.NodeStatusUpdateFrequency,
		},
	}
}

// ProfileFromEnv returns the timer profile of the lab $FAULTLINE_LAB names,
// read from its lab file without opening the lab. The table is built
// before the suite opens the lab, so the profile must come from the file;
// the suite checks the opened lab reports the same profile before it runs.
func ProfileFromEnv() (timers.Profile, error) {
	arg := os.Getenv("FAULTLINE_LAB")
	name := lab.ProfileKubernetesDefaults
	if arg != "" {
		path, err := lab.ResolveConfigPath(arg)
		if err != nil {
			return timers.Profile{}, fmt.Errorf("finding the lab file FAULTLINE_LAB=%s: %w", arg, err)
		}
		c, err := lab.LoadConfig(path)
		if err != nil {
			return timers.Profile{}, fmt.Errorf("reading the lab file %s: %w", path, err)
		}
		name = c.Kubernetes.TimerProfile
	}
	p, err := timers.Get(name)
	if err != nil {
		return timers.Profile{}, fmt.Errorf("the timer profile of FAULTLINE_LAB=%s: %w", arg, err)
	}
	return p, nil
}
