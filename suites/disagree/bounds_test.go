package disagree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	// The suite reads its lab file through the backends' registry.
	_ "github.com/faultline/faultline/lab/backends"
	"github.com/faultline/faultline/lab/timers"
)

// profileTimers are the named profile's timers, as a lab running it
// reports them.
func profileTimers(t *testing.T, name string) lab.Timers {
	t.Helper()
	p, err := timers.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return p.Timers()
}

// The bounds of both profiles, written out as they were when the suite
// read the profiles themselves: deriving them from the timers a lab
// reports changes none.
func TestBoundsOfBothProfilesAreUnchanged(t *testing.T) {
	for _, c := range []struct {
		profile                                    string
		node, controlPlane, settle, fixtures, ends time.Duration
	}{
		{timers.Fast, 66 * time.Second, 42 * time.Second, 204 * time.Second, 204 * time.Second, 18 * time.Second},
		{timers.KubernetesDefaults, 450 * time.Second, 145 * time.Second, 820 * time.Second, 820 * time.Second, 80 * time.Second},
	} {
		b := BoundsFor(profileTimers(t, c.profile))
		got := []time.Duration{b.NodeWindow, b.ControlPlaneWindow, b.Settle, b.Fixtures, b.Invariants.Endpoints}
		want := []time.Duration{c.node, c.controlPlane, c.settle, c.fixtures, c.ends}
		for i, name := range []string{"node window", "control-plane window", "settle", "fixtures", "endpoints bound"} {
			if got[i] != want[i] {
				t.Errorf("%s: %s %s, was %s", c.profile, name, got[i], want[i])
			}
		}
		if b.Profile != c.profile || b.Timers.Profile != c.profile {
			t.Errorf("%s: bounds say profile %q (timers %q)", c.profile, b.Profile, b.Timers.Profile)
		}
	}
}

func TestBoundsFollowTheProfile(t *testing.T) {
	fast := profileTimers(t, timers.Fast)
	defaults := profileTimers(t, timers.KubernetesDefaults)
	f, d := BoundsFor(fast), BoundsFor(defaults)
	// fast: grace 12s, toleration 30s, lease 6s.
	if want := 12*time.Second + 30*time.Second + 24*time.Second; f.NodeWindow != want {
		t.Errorf("fast node window %s, want %s", f.NodeWindow, want)
	}
	// kubernetes-defaults: grace 50s, toleration 300s, lease 15s.
	if want := 50*time.Second + 300*time.Second + 100*time.Second; d.NodeWindow != want {
		t.Errorf("defaults node window %s, want %s", d.NodeWindow, want)
	}
	if want := 3*15*time.Second + 2*50*time.Second; d.ControlPlaneWindow != want {
		t.Errorf("defaults control-plane window %s, want %s", d.ControlPlaneWindow, want)
	}
	// Every node window must outlast eviction, or a scenario would heal
	// before the behaviour it is about can happen.
	for _, b := range []struct {
		b Bounds
		p lab.Timers
	}{{f, fast}, {d, defaults}} {
		evict := b.p.NodeMonitorGracePeriod + b.p.UnreachableToleration
		if b.b.NodeWindow <= evict {
			t.Errorf("%s: node window %s does not outlast notice and eviction (%s)", b.p.Profile, b.b.NodeWindow, evict)
		}
		if b.b.ControlPlaneWindow <= b.p.LeaderLeaseDuration {
			t.Errorf("%s: control-plane window %s does not outlast a leader lease", b.p.Profile, b.b.ControlPlaneWindow)
		}
		if b.b.Invariants.Endpoints <= b.p.NodeMonitorGracePeriod {
			t.Errorf("%s: endpoints bound %s is within the grace period: the detector would fire before Kubernetes may react", b.p.Profile, b.b.Invariants.Endpoints)
		}
		if b.b.Profile != b.p.Profile {
			t.Errorf("bounds say profile %q, made from %q", b.b.Profile, b.p.Profile)
		}
	}
	if d.Settle <= f.Settle || d.NodeWindow <= f.NodeWindow {
		t.Errorf("kubernetes-defaults bounds (%+v) not longer than fast ones (%+v)", d, f)
	}
}

func TestAgreementBoundsModelConsistentReadsNotNodeStatus(t *testing.T) {
	fast := profileTimers(t, timers.Fast)
	defaults := profileTimers(t, timers.KubernetesDefaults)
	f, d := BoundsFor(fast).Invariants, BoundsFor(defaults).Invariants
	period := SampleEvery + evidence.DefaultReadTimeout
	mechanism := map[evidence.Question]string{
		evidence.NodeReady:        "quorum read",
		evidence.PodObject:        "quorum read",
		evidence.ServiceEndpoints: "watch cache",
	}
	for _, q := range invariant.AgreementQuestions() {
		fb, ok := f.Agreement[q]
		if !ok {
			t.Errorf("no api-agreement bound for %s", q)
			continue
		}
		// Consistent reads agree but for a change in flight: the bound is
		// the sampling resolution, the same whatever the node timers.
		if db := d.Agreement[q]; db != fb {
			t.Errorf("%s: bound %v under fast, %v under kubernetes-defaults: it follows the node timers, not the sampling", q, fb, db)
		}
		if fb.Limit <= period || fb.Limit >= 2*defaults.NodeStatusUpdateFrequency {
			t.Errorf("%s: bound %s, want above one sampling period (%s) and below the old node-status bound %s", q, fb.Limit, period, 2*defaults.NodeStatusUpdateFrequency)
		}
		if !strings.Contains(fb.Why, mechanism[q]) || !strings.Contains(fb.Why, SampleEvery.String()) {
			t.Errorf("%s: the bound's reason %q does not name its mechanism (%s) and the sampling it is sized from", q, fb.Why, mechanism[q])
		}
	}
	if f.Ordering.Limit <= period || f.Ordering.Why == "" {
		t.Errorf("no-time-travel coverage bound %v: want above one sampling period (%s), with its reason", f.Ordering, period)
	}
	// The engine sizes its pre-fault window from the longest bound.
	agreement, ok := invariant.APIAgreement(f.Agreement).(invariant.Bounded)
	if !ok {
		t.Fatal("api-agreement does not say its bound, so a pre-fault window cannot be sized for it")
	}
	if got, want := agreement.Bound(), f.Agreement[evidence.NodeReady].Limit; got != want {
		t.Errorf("api-agreement's Bound() %s, want its longest question bound %s", got, want)
	}
}

// The suite's bounds come from the timers scenario.TimersFromEnv reads
// from the lab file through the backends the suite links: a local lab's
// profile, a static lab's declared one, and an error for a static lab that
// declares none.
func TestTimersFromEnvReadsTheLabFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	hosts := "network: {management: 10.231.99.0/24, pods: 10.249.0.0/16, services: 10.250.99.0/24}\nhosts:\n  - {name: cp1, roles: [etcd, control-plane, worker], address: 10.231.99.11}\n"
	t.Setenv("FAULTLINE_LAB", write("x.yaml", "name: x\nkind: local\nlab: true\nstateDir: "+dir+"\nkubernetes: {timerProfile: fast}\n"+hosts))
	p, err := scenario.TimersFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if p != profileTimers(t, timers.Fast) {
		t.Errorf("timers %+v, want fast's", p)
	}
	// A lab the suite did not build says its timers in its file, or the
	// suite cannot size its windows.
	remote := "name: remote\nkind: static\nlab: true\nstateDir: " + dir + "\nkubeconfig: /nonexistent/admin.conf\n" +
		"ssh: {user: root, knownHosts: /nonexistent/known_hosts, identityFile: /nonexistent/id}\n" + hosts
	t.Setenv("FAULTLINE_LAB", write("y.yaml", remote+"kubernetes: {timerProfile: kubernetes-defaults}\n"))
	if p, err := scenario.TimersFromEnv(); err != nil || p != profileTimers(t, timers.KubernetesDefaults) {
		t.Errorf("a static lab declaring kubernetes-defaults: %+v %v", p, err)
	}
	t.Setenv("FAULTLINE_LAB", write("z.yaml", remote))
	if _, err := scenario.TimersFromEnv(); err == nil || !strings.Contains(err.Error(), "kubernetes.timerProfile is not set") {
		t.Errorf("a static lab declaring no timers: err %v, want one naming kubernetes.timerProfile", err)
	}
	t.Setenv("FAULTLINE_LAB", filepath.Join(dir, "missing.yaml"))
	if _, err := scenario.TimersFromEnv(); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing lab file: err %v, want one naming it", err)
	}
	t.Setenv("FAULTLINE_LAB", "")
	if p, err := scenario.TimersFromEnv(); err != nil || p.Profile != lab.ProfileKubernetesDefaults {
		t.Errorf("no lab: %q %v, want kubernetes-defaults", p.Profile, err)
	}
}
