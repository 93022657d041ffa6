//go:build lab

package e2eframework

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/e2e-framework/klient/k8s"
	"sigs.k8s.io/e2e-framework/klient/wait"
	"sigs.k8s.io/e2e-framework/klient/wait/conditions"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/e2e-framework/pkg/utils"
	"sigs.k8s.io/e2e-framework/support"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/e2eprovider"
	"github.com/faultline/faultline/lab/timers"
)

// slack is what a loaded machine may add to any wait for the control
// plane to act; the assertions on when it acted do not depend on it.
const slack = time.Minute

// The taints the node lifecycle controller puts on a node it cannot hear
// from.
var unreachable = []corev1.Taint{
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
}

func readyCondition(n *corev1.Node) (corev1.NodeCondition, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c, true
		}
	}
	return corev1.NodeCondition{}, false
}

func hasTaint(n *corev1.Node, want corev1.Taint) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == want.Key && t.Effect == want.Effect })
}

// waitNode waits until match holds for the node, and says what the node
// looked like last when it does not.
func waitNode(ctx context.Context, cfg *envconf.Config, name string, timeout time.Duration, what string, match func(*corev1.Node) bool) (*corev1.Node, error) {
	node := &corev1.Node{}
	node.Name = name
	err := wait.For(conditions.New(cfg.Client().Resources()).ResourceMatch(node, func(o k8s.Object) bool {
		return match(o.(*corev1.Node))
	}), wait.WithContext(ctx), wait.WithTimeout(timeout), wait.WithInterval(500*time.Millisecond), wait.WithImmediate())
	if err != nil {
		ready, _ := readyCondition(node)
		return node, fmt.Errorf("node %s: %s within %s: %w (last seen: Ready=%s reason %q since %s, taints %v)",
			name, what, timeout, err, ready.Status, ready.Reason, ready.LastTransitionTime.Format(time.RFC3339), node.Spec.Taints)
	}
	return node, nil
}

func nodeLease(ctx context.Context, cfg *envconf.Config, name string) (time.Time, error) {
	var lease coordinationv1.Lease
	if err := cfg.Client().Resources().Get(ctx, name, corev1.NamespaceNodeLease, &lease); err != nil {
		return time.Time{}, fmt.Errorf("node %s's lease: %w", name, err)
	}
	if lease.Spec.RenewTime == nil {
		return time.Time{}, fmt.Errorf("node %s's lease was never renewed", name)
	}
	return lease.Spec.RenewTime.Time, nil
}

// worker is the first host of the lab that is a worker and nothing else.
func worker(t *testing.T, l lab.Lab) string {
	t.Helper()
	for _, h := range lab.HostsWithRole(l, lab.RoleWorker) {
		if !h.HasRole(lab.RoleControlPlane) && !h.HasRole(lab.RoleEtcd) {
			return h.Name()
		}
	}
	t.Fatalf("lab %s has no host that is only a worker", l.Info().Name)
	return ""
}

func nodeState(ctx context.Context, t *testing.T, p *e2eprovider.Provider, name string) string {
	t.Helper()
	nodes, err := p.ListNode(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == name {
			return n.State
		}
	}
	t.Fatalf("ListNode does not list %s: %+v", name, nodes)
	return ""
}

// A worker powered off through the framework's node life cycle: the node
// lifecycle controller, hearing nothing from its kubelet, marks it
// Ready=Unknown no sooner than node-monitor-grace-period after the last
// lease renewal and taints it unreachable; powered on again, it is Ready
// and untainted. Every bound comes from the timers the lab runs with.
func TestAPoweredOffWorkerGoesUnknownAndComesBack(t *testing.T) {
	var (
		name      string
		tm        lab.Timers
		renew     time.Duration // how often a kubelet renews its node lease
		lastRenew time.Time
	)
	node := func() *support.Node { return &support.Node{Name: name, Cluster: clusterName} }

	f := features.New("a powered-off worker").
		WithLabel("fault", "power-off").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			p := provider(ctx, t)
			name = worker(t, p.Lab())
			var err error
			if tm, err = p.Lab().Timers(); err != nil {
				t.Fatal(err)
			}
			prof, err := timers.Get(tm.Profile)
			if err != nil {
				t.Fatal(err)
			}
			renew = time.Duration(float64(time.Duration(prof.NodeLeaseDurationSeconds)*time.Second) * timers.NodeLeaseRenewFraction)
			t.Logf("worker %s; timer profile %s: node-monitor-grace-period %s, node-monitor-period %s, lease renewed every %s",
				name, tm.Profile, tm.NodeMonitorGracePeriod, tm.NodeMonitorPeriod, renew)
			if _, err := waitNode(ctx, cfg, name, slack, "Ready", func(n *corev1.Node) bool {
				c, ok := readyCondition(n)
				return ok && c.Status == corev1.ConditionTrue
			}); err != nil {
				t.Fatal(err)
			}
			return ctx
		}).
		Assess("StopNode powers the host off and its kubelet renews its lease no more", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := utils.PerformNodeLifecycleOperation(ctx, support.StopNode, node()); err != nil {
				t.Fatal(err)
			}
			if got := nodeState(ctx, t, provider(ctx, t), name); got != e2eprovider.PowerOff {
				t.Fatalf("after StopNode, ListNode says %s is %q, want %q", name, got, e2eprovider.PowerOff)
			}
			var err error
			if lastRenew, err = nodeLease(ctx, cfg, name); err != nil {
				t.Fatal(err)
			}
			// Three renewal intervals with no renewal: the kubelet is gone.
			time.Sleep(3 * renew)
			again, err := nodeLease(ctx, cfg, name)
			if err != nil {
				t.Fatal(err)
			}
			if !again.Equal(lastRenew) {
				t.Fatalf("node %s's lease was renewed at %s after StopNode (last renewal read %s): its kubelet still runs",
					name, again.Format(time.RFC3339Nano), lastRenew.Format(time.RFC3339Nano))
			}
			return ctx
		}).
		Assess("the node goes Ready=Unknown, not before node-monitor-grace-period, and is tainted unreachable", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			deadline := time.Until(lastRenew.Add(tm.NodeMonitorGracePeriod + tm.NodeMonitorPeriod + slack))
			n, err := waitNode(ctx, cfg, name, deadline, "Ready=Unknown", func(n *corev1.Node) bool {
				c, ok := readyCondition(n)
				return ok && c.Status == corev1.ConditionUnknown
			})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := readyCondition(n)
			if c.Reason != "NodeStatusUnknown" {
				t.Errorf("Ready=Unknown with reason %q, want NodeStatusUnknown (the node lifecycle controller's)", c.Reason)
			}
			// LastTransitionTime is kept to the second.
			earliest := lastRenew.Add(tm.NodeMonitorGracePeriod - time.Second)
			if c.LastTransitionTime.Time.Before(earliest) {
				t.Errorf("Ready turned Unknown at %s, %s after the last lease renewal (%s): sooner than node-monitor-grace-period %s",
					c.LastTransitionTime.Format(time.RFC3339), c.LastTransitionTime.Sub(lastRenew), lastRenew.Format(time.RFC3339Nano), tm.NodeMonitorGracePeriod)
			}
			t.Logf("Ready=Unknown at %s, %s after the last lease renewal (grace period %s)",
				c.LastTransitionTime.Format(time.RFC3339), c.LastTransitionTime.Sub(lastRenew).Round(time.Second), tm.NodeMonitorGracePeriod)
			if _, err := waitNode(ctx, cfg, name, tm.NodeMonitorPeriod+slack, "tainted unreachable", func(n *corev1.Node) bool {
				return hasTaint(n, unreachable[0]) && hasTaint(n, unreachable[1])
			}); err != nil {
				t.Error(err)
			}
			if again, err := nodeLease(ctx, cfg, name); err != nil || !again.Equal(lastRenew) {
				t.Errorf("node %s's lease while Unknown: renewed at %s, %v; want no renewal since %s", name, again, err, lastRenew)
			}
			return ctx
		}).
		Assess("StartNode powers it on: the node is Ready again and no longer tainted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			startedAt := time.Now()
			if err := utils.PerformNodeLifecycleOperation(ctx, support.StartNode, node()); err != nil {
				t.Fatal(err)
			}
			if got := nodeState(ctx, t, provider(ctx, t), name); got != e2eprovider.PowerOn {
				t.Fatalf("after StartNode, ListNode says %s is %q, want %q", name, got, e2eprovider.PowerOn)
			}
			n, err := waitNode(ctx, cfg, name, 2*slack, "Ready again", func(n *corev1.Node) bool {
				c, ok := readyCondition(n)
				return ok && c.Status == corev1.ConditionTrue
			})
			if err != nil {
				t.Fatal(err)
			}
			if c, _ := readyCondition(n); c.LastTransitionTime.Time.Before(startedAt.Truncate(time.Second)) {
				t.Errorf("Ready=True since %s, before StartNode at %s", c.LastTransitionTime.Format(time.RFC3339), startedAt.Format(time.RFC3339))
			}
			if renewed, err := nodeLease(ctx, cfg, name); err != nil || !renewed.After(startedAt) {
				t.Errorf("node %s Ready with its lease last renewed at %s (%v), not since StartNode at %s", name, renewed, err, startedAt)
			}
			if _, err := waitNode(ctx, cfg, name, tm.NodeMonitorPeriod+slack, "untainted", func(n *corev1.Node) bool {
				return !hasTaint(n, unreachable[0]) && !hasTaint(n, unreachable[1])
			}); err != nil {
				t.Error(err)
			}
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// An assessment that failed half-way may leave the host off.
			if name != "" && nodeState(ctx, t, provider(ctx, t), name) == e2eprovider.PowerOff {
				if err := utils.PerformNodeLifecycleOperation(ctx, support.StartNode, node()); err != nil {
					t.Error(err)
				}
			}
			return ctx
		}).
		Feature()

	testenv.Test(t, f)
}
