package scenario

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/timers"
)

// TimersFromEnv returns the timers of the lab $FAULTLINE_LAB names, or of
// the first lab of a pool ($FAULTLINE_LABS, $FAULTLINE_POOL; the engine
// refuses a pool whose labs run other profiles), as its backend reads them
// from its lab file without opening the lab (Kubernetes' defaults when no
// lab is named). A suite builds its table before it opens the lab, so the
// timers its bounds come from must come from the file; the suite checks
// each opened lab reports the same before it runs. The lab file is read
// through the backends' registry: the suite links the backends (a blank
// import of lab/backends), as it must to open the lab.
func TimersFromEnv() (lab.Timers, error) { return TimersFromEnvOr(timers.KubernetesDefaults) }

// TimersFromEnvOr is TimersFromEnv with the named profile's timers when no
// lab is named.
func TimersFromEnvOr(profile string) (lab.Timers, error) {
	path, how, err := LabFileFromEnv()
	if err != nil {
		return lab.Timers{}, err
	}
	if path == "" {
		p, err := timers.Get(profile)
		return p.Timers(), err
	}
	c, err := lab.LoadConfig(path)
	if err != nil {
		return lab.Timers{}, fmt.Errorf("reading the lab file %s (%s): %w", path, how, err)
	}
	t, err := lab.TimersOf(c)
	if err != nil {
		return lab.Timers{}, fmt.Errorf("the timers of %s (%s): %w", path, how, err)
	}
	return t, nil
}

// NodeFaultWindow is how long the node controller and the scheduler take
// to act on a node that has gone silent, from the lab's timers: the node
// lifecycle controller notices the node (its grace period,
// NodeMonitorGracePeriod, after the last status) and taints it
// unreachable; the taint manager evicts its pods once their unreachable
// toleration (UnreachableToleration) runs out; and a replacement has two
// more grace periods to be scheduled and start. A suite whose scenarios
// watch what happens to a node's pods sizes its node-fault window, or its
// wait for the node's taint, from it (66 s under the fast profile, 450 s
// under kubernetes-defaults).
func NodeFaultWindow(t lab.Timers) time.Duration {
	grace := t.NodeMonitorGracePeriod
	return grace + t.UnreachableToleration + 2*grace
}
