package disagree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/timers"
)

func TestBoundsFollowTheProfile(t *testing.T) {
	fast, err := timers.Get(timers.Fast)
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := timers.Get(timers.KubernetesDefaults)
	if err != nil {
		t.Fatal(err)
	}
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
		p timers.Profile
	}{{f, fast}, {d, defaults}} {
		evict := b.p.NodeMonitorGracePeriod + time.Duration(b.p.DefaultUnreachableTolerationSeconds)*time.Second
		if b.b.NodeWindow <= evict {
			t.Errorf("%s: node window %s does not outlast notice and eviction (%s)", b.p.Name, b.b.NodeWindow, evict)
		}
		if b.b.ControlPlaneWindow <= b.p.LeaderElection.LeaseDuration {
			t.Errorf("%s: control-plane window %s does not outlast a leader lease", b.p.Name, b.b.ControlPlaneWindow)
		}
		if b.b.Invariants.Endpoints <= b.p.NodeMonitorGracePeriod {
			t.Errorf("%s: endpoints bound %s is within the grace period: the detector would fire before Kubernetes may react", b.p.Name, b.b.Invariants.Endpoints)
		}
		if b.b.Profile != b.p.Name {
			t.Errorf("bounds say profile %q, made from %q", b.b.Profile, b.p.Name)
		}
	}
	if d.Settle <= f.Settle || d.NodeWindow <= f.NodeWindow {
		t.Errorf("kubernetes-defaults bounds (%+v) not longer than fast ones (%+v)", d, f)
	}
}

func TestAgreementBoundsModelConsistentReadsNotNodeStatus(t *testing.T) {
	fast, err := timers.Get(timers.Fast)
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := timers.Get(timers.KubernetesDefaults)
	if err != nil {
		t.Fatal(err)
	}
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

func TestProfileFromEnvReadsTheLabFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.yaml")
	if err := os.WriteFile(path, []byte("name: x\nkind: local\nlab: true\nstateDir: "+dir+"\nkubernetes: {timerProfile: fast}\n"+
		"network: {management: 10.231.99.0/24, pods: 10.249.0.0/16, services: 10.250.99.0/24}\nhosts:\n  - {name: cp1, roles: [etcd, control-plane, worker], address: 10.231.99.11}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAULTLINE_LAB", path)
	p, err := ProfileFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != timers.Fast {
		t.Errorf("profile %q, want fast", p.Name)
	}
	t.Setenv("FAULTLINE_LAB", filepath.Join(dir, "missing.yaml"))
	if _, err := ProfileFromEnv(); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing lab file: err %v, want one naming it", err)
	}
	t.Setenv("FAULTLINE_LAB", "")
	if p, err := ProfileFromEnv(); err != nil || p.Name != lab.ProfileKubernetesDefaults {
		t.Errorf("no lab: %q %v, want kubernetes-defaults", p.Name, err)
	}
}

func TestCheckShape(t *testing.T) {
	c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", "lab11.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckShape(c); err != nil {
		t.Errorf("lab11 itself: %v", err)
	}
	pair, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", "pair.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckShape(pair)
	if err == nil || !strings.Contains(err.Error(), "no host etcd5") || !strings.Contains(err.Error(), pair.Name) {
		t.Errorf("pair: err %v, want one naming the lab and the missing etcd5", err)
	}
	if CheckShape(nil) == nil {
		t.Error("no config: want an error")
	}
}
