package splitbrain

import (
	"time"

	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
)

// SampleEvery is the suite's tick: every source asked once a second (the
// engine's default), so every verdict's resolution is one second. The
// positive controls' timing is sized from it.
const SampleEvery = time.Second

// Bounds are the waits of the suite's node faults, derived from the
// timers of one lab.
type Bounds struct {
	// Profile is the timer profile the bounds come from.
	Profile string
	// NodeWindow bounds a control's wait for the node controller to act
	// on worker1 once its kubelet is silent (cut off, frozen or
	// stopped): for the unreachable taint before a force deletion
	// (controls.Pod.TaintWait), and for the node to turn not Ready
	// before the out-of-service taint (StopThenOutOfService). Either
	// comes one grace period (NodeMonitorGracePeriod) after the last
	// status, plus at most a monitor period. The wait allows the whole
	// node-fault window (scenario.NodeFaultWindow: notice, the
	// unreachable toleration, two more grace periods for a
	// replacement), the same function paper 1's node window comes from:
	// a generous bound, for the taint comes well before it runs out. It
	// bounds a wait inside the fault's inject, not a judging window: the
	// scenario's window starts once the wait is over, and a wait that
	// runs out fails the inject, naming what did not come.
	NodeWindow time.Duration
}

// BoundsFor derives the suite's bounds from a lab's timers.
func BoundsFor(t lab.Timers) Bounds {
	return Bounds{Profile: t.Profile, NodeWindow: scenario.NodeFaultWindow(t)}
}
