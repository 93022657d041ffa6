// Package disagree is paper 1's suite: which of Kubernetes' guarantees
// still hold when its components disagree. The scenario table lives in the
// suite's test files (run with ginkgo); this file derives every time bound
// the table uses from the timers the lab reports, so that a window means
// the same thing under `fast` and under `kubernetes-defaults`, on any lab.
package disagree

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
)

// Bounds are the windows and timeouts of the suite, all derived from the
// timers of one lab.
type Bounds struct {
	// Profile is the timer profile the bounds come from.
	Profile string
	// Timers are the values they come from.
	Timers lab.Timers
	// NodeWindow covers a node fault: the controller notices (grace
	// period), evicts (unreachable toleration), and a replacement has
	// time to be scheduled and start (two more grace periods):
	// scenario.NodeFaultWindow.
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

// BoundsFor derives the suite's bounds from a lab's timers.
func BoundsFor(p lab.Timers) Bounds {
	grace := p.NodeMonitorGracePeriod
	evict := p.UnreachableToleration
	lease := p.LeaderLeaseDuration
	return Bounds{
		Profile:            p.Profile,
		Timers:             p,
		NodeWindow:         scenario.NodeFaultWindow(p),
		ControlPlaneWindow: 3*lease + 2*grace,
		Settle:             2*(grace+evict) + settleMargin,
		Fixtures:           2*(grace+evict) + settleMargin,
		Invariants: invariant.Bounds{
			Agreement: agreementBounds(),
			Ordering:  orderingBound(),
			// The endpoint controller learns of a dead node after the
			// grace period and reacts within a monitor period; two status
			// updates of margin for the kubelet's own readiness report.
			Endpoints: grace + 2*p.NodeMonitorPeriod + 2*p.NodeStatusUpdateFrequency,
		},
	}
}

// SampleEvery is the interval between the sampler's ticks: the engine's
// default, which the suite registers with. The bounds that are a matter
// of sampling resolution are derived from it.
const SampleEvery = time.Second

// samplingPeriod is the longest between the starts of two consecutive
// reads of one API server: a read is cut off at its timeout, a tick that
// finds it outstanding skips the source, and the next tick comes at most
// one interval later.
func samplingPeriod() time.Duration { return SampleEvery + evidence.DefaultReadTimeout }

// agreementBounds are api-agreement's bounds, one per question, from how
// source.APIServer reads each. Every one is a consistent read, so two
// servers answering in one round can differ only while a change lands
// between their two reads, which are at most one read timeout apart: one
// change explains a difference in one round, not in rounds spanning more
// than two sampling periods. Node status timing (how often the kubelet
// writes) does not enter: both servers read the same etcd.
func agreementBounds() map[evidence.Question]invariant.Bound {
	limit := 2 * samplingPeriod()
	periods := fmt.Sprintf("two sampling periods, each a %s tick interval plus a read of up to %s", SampleEvery, evidence.DefaultReadTimeout)
	return map[evidence.Question]invariant.Bound{
		// GET nodes/worker1 with no resourceVersion: the API server
		// passes it to etcd as a quorum read (k8s.io/apiserver cacher
		// CacheDelegator.Get).
		evidence.NodeReady: {Limit: limit, Why: "a GET with no resourceVersion, a quorum read from etcd, differs between servers only while a status write lands between their reads: " + periods},
		evidence.PodObject: {Limit: limit, Why: "a GET with no resourceVersion, a quorum read from etcd, differs between servers only while a write lands between their reads: " + periods},
		// LIST endpointslices with no resourceVersion: a consistent
		// list, served from the watch cache only once the cache has
		// caught up with etcd's current revision, else from etcd
		// (CacheDelegator.GetList). A cache that lags makes the read
		// wait, and time out here, rather than answer old.
		evidence.ServiceEndpoints: {Limit: limit, Why: "a LIST with no resourceVersion, served from a watch cache only once it is as fresh as etcd, differs between servers only while a change lands between their reads: " + periods},
	}
}

// orderingBound is the longest no-time-travel lets a serving server's
// reads go without being put in order with the others': the same
// resolution at which api-agreement can see a server serve an old state.
func orderingBound() invariant.Bound {
	return invariant.Bound{Limit: 2 * samplingPeriod(),
		Why: fmt.Sprintf("two sampling periods, each a %s tick interval plus a read of up to %s: a server unordered for longer may have served an old state unseen", SampleEvery, evidence.DefaultReadTimeout)}
}
