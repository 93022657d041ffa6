package timers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/lab"
)

// The documented defaults of Kubernetes v1.36 and etcd v3.6 (sources in the
// comment on kubernetesDefaults), written out again here so that an edit to
// the profile that drifts from them fails.
func TestKubernetesDefaultsAreTheDocumentedValues(t *testing.T) {
	p, err := Get(KubernetesDefaults)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"profile": "kubernetes-defaults",
		"kube-controller-manager.node-monitor-period":           "5s",
		"kube-controller-manager.node-monitor-grace-period":     "50s",
		"kube-controller-manager.node-startup-grace-period":     "1m0s",
		"kube-apiserver.default-not-ready-toleration-seconds":   "300",
		"kube-apiserver.default-unreachable-toleration-seconds": "300",
		"kubelet.nodeStatusUpdateFrequency":                     "10s",
		"kubelet.nodeStatusReportFrequency":                     "5m0s",
		"kubelet.nodeLeaseDurationSeconds":                      "40",
		"kubelet.node-lease-renew-interval":                     "10s",
		"leader-election.lease-duration":                        "15s",
		"leader-election.renew-deadline":                        "10s",
		"leader-election.retry-period":                          "2s",
		"client-go.http2-read-idle-timeout":                     "30s",
		"client-go.http2-ping-timeout":                          "15s",
		"etcd.heartbeat-interval":                               "100ms",
		"etcd.election-timeout":                                 "1s",
	}
	got := p.Flat()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %q, want %q", k, got[k], w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("Flat has %s, which this test does not check against the documentation", k)
		}
	}
}

func TestProfilesKeepTheOrderingsKubernetesNeeds(t *testing.T) {
	for _, name := range Names() {
		p, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestFastCompressesTheDisruptionTimers(t *testing.T) {
	d, _ := Get(KubernetesDefaults)
	f, _ := Get(Fast)
	shorter := []struct {
		name       string
		fast, dflt time.Duration
	}{
		{"node-monitor-grace-period", f.NodeMonitorGracePeriod, d.NodeMonitorGracePeriod},
		{"node-monitor-period", f.NodeMonitorPeriod, d.NodeMonitorPeriod},
		{"node lease", f.NodeLeaseDuration(), d.NodeLeaseDuration()},
		{"not-ready toleration", time.Duration(f.DefaultNotReadyTolerationSeconds) * time.Second, time.Duration(d.DefaultNotReadyTolerationSeconds) * time.Second},
		{"unreachable toleration", time.Duration(f.DefaultUnreachableTolerationSeconds) * time.Second, time.Duration(d.DefaultUnreachableTolerationSeconds) * time.Second},
		{"leader lease", f.LeaderElection.LeaseDuration, d.LeaderElection.LeaseDuration},
	}
	for _, s := range shorter {
		if s.fast >= s.dflt {
			t.Errorf("fast %s %s is not shorter than the default %s", s.name, s.fast, s.dflt)
		}
	}
	// A scenario's window has to see the node go Unknown and its pods be
	// evicted; keep the sum small enough for CI.
	if total := f.NodeMonitorGracePeriod + time.Duration(f.DefaultUnreachableTolerationSeconds)*time.Second; total > time.Minute {
		t.Errorf("fast: unhealthy-to-eviction takes %s, more than a minute", total)
	}
}

func TestValidateRejectsBrokenOrderings(t *testing.T) {
	base, _ := Get(Fast)
	cases := []struct {
		name  string
		edit  func(*Profile)
		wants string
	}{
		{"renew not below lease", func(p *Profile) { p.LeaderElection.RenewDeadline = p.LeaderElection.LeaseDuration }, "must exceed leader-elect-renew-deadline"},
		{"retry too close to renew", func(p *Profile) { p.LeaderElection.RetryPeriod = p.LeaderElection.RenewDeadline }, "1.2 × leader-elect-retry-period"},
		{"grace below status updates", func(p *Profile) { p.NodeStatusUpdateFrequency = p.NodeMonitorGracePeriod / 2 }, "must cover 5 kubelet status updates"},
		{"grace below lease", func(p *Profile) { p.NodeLeaseDurationSeconds = int32(p.NodeMonitorGracePeriod / time.Second) }, "must exceed the node lease duration"},
		{"grace below http2 check", func(p *Profile) { p.HTTP2ReadIdleTimeout = p.NodeMonitorGracePeriod }, "HTTP/2 health check"},
		{"monitor period not below grace", func(p *Profile) { p.NodeMonitorPeriod = p.NodeMonitorGracePeriod }, "node-monitor-period"},
		{"report below update", func(p *Profile) { p.NodeStatusReportFrequency = time.Second }, "nodeStatusReportFrequency"},
		{"startup below grace", func(p *Profile) { p.NodeStartupGracePeriod = time.Second }, "node-startup-grace-period"},
		{"etcd election too short", func(p *Profile) { p.EtcdElectionTimeout = 2 * p.EtcdHeartbeatInterval }, "election-timeout"},
		{"zero toleration", func(p *Profile) { p.DefaultUnreachableTolerationSeconds = 0 }, "default-unreachable-toleration-seconds must be positive"},
	}
	for _, c := range cases {
		p := base
		c.edit(&p)
		err := p.Validate()
		if err == nil {
			t.Errorf("%s: Validate accepted it", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.wants) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.wants)
		}
	}
}

func TestComponentSettings(t *testing.T) {
	p, _ := Get(Fast)
	if got := p.ControllerManagerFlags(); !slices.Contains(got, "--node-monitor-grace-period=12s") || !slices.Contains(got, "--leader-elect-renew-deadline=4s") {
		t.Errorf("ControllerManagerFlags = %v", got)
	}
	if got := p.SchedulerFlags(); !slices.Contains(got, "--leader-elect-lease-duration=6s") || !slices.Contains(got, "--leader-elect=true") {
		t.Errorf("SchedulerFlags = %v", got)
	}
	if got := p.APIServerFlags(); !slices.Equal(got, []string{"--default-not-ready-toleration-seconds=30", "--default-unreachable-toleration-seconds=30"}) {
		t.Errorf("APIServerFlags = %v", got)
	}
	if got := p.ClientEnv(); !slices.Equal(got, []string{"HTTP2_READ_IDLE_TIMEOUT_SECONDS=5", "HTTP2_PING_TIMEOUT_SECONDS=3"}) {
		t.Errorf("ClientEnv = %v", got)
	}
	d, _ := Get(KubernetesDefaults)
	if got := d.EtcdFlags(); !slices.Equal(got, []string{"--heartbeat-interval=100", "--election-timeout=1000"}) {
		t.Errorf("EtcdFlags = %v", got)
	}
	kc := d.KubeletConfig()
	if kc["nodeStatusUpdateFrequency"] != "10s" || kc["nodeStatusReportFrequency"] != "5m0s" || kc["nodeLeaseDurationSeconds"] != int32(40) {
		t.Errorf("KubeletConfig = %v", kc)
	}
}

func TestProfileNamesMatchTheLabFileFormat(t *testing.T) {
	if !slices.Equal(Names(), []string{lab.ProfileKubernetesDefaults, lab.ProfileFast}) {
		t.Errorf("Names() = %v, lab file format knows %s and %s", Names(), lab.ProfileKubernetesDefaults, lab.ProfileFast)
	}
	if _, err := Get("slow"); err == nil || !strings.Contains(err.Error(), `"slow"`) {
		t.Errorf("Get(slow) error = %v", err)
	}
}

func TestTimersAreTheProfilesValues(t *testing.T) {
	d, _ := Get(KubernetesDefaults)
	want := lab.Timers{
		Profile:                   KubernetesDefaults,
		NodeMonitorPeriod:         5 * time.Second,
		NodeMonitorGracePeriod:    50 * time.Second,
		NodeStatusUpdateFrequency: 10 * time.Second,
		NotReadyToleration:        300 * time.Second,
		UnreachableToleration:     300 * time.Second,
		LeaderLeaseDuration:       15 * time.Second,
	}
	if got := d.Timers(); got != want {
		t.Errorf("kubernetes-defaults Timers() = %+v, want %+v", got, want)
	}
	f, _ := Get(Fast)
	if got := f.Timers(); got.NotReadyToleration != 30*time.Second || got.LeaderLeaseDuration != 6*time.Second || got.Profile != Fast {
		t.Errorf("fast Timers() = %+v", got)
	}
	for _, name := range Names() {
		p, _ := Get(name)
		if err := p.Timers().Check(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := (lab.Timers{Profile: "half", NodeMonitorPeriod: time.Second}).Check(); err == nil || !strings.Contains(err.Error(), "leader-elect-lease-duration must be positive") {
		t.Errorf("Check of a half-filled Timers = %v", err)
	}
}

func TestDeclaredReadsTheFileOrSaysItCannot(t *testing.T) {
	c := &lab.Config{Name: "pair", Kind: "static", Kubernetes: lab.KubernetesSettings{TimerProfile: Fast}}
	f, _ := Get(Fast)
	if got, err := Declared(c); err != nil || got != f.Timers() {
		t.Errorf("Declared(fast) = %+v, %v", got, err)
	}
	c.Kubernetes.TimerProfile = ""
	if _, err := Declared(c); err == nil || !strings.Contains(err.Error(), "lab pair: kubernetes.timerProfile is not set, and a static lab does not read") {
		t.Errorf("Declared(no profile) = %v", err)
	}
	c.Kubernetes.TimerProfile = "slow"
	if _, err := Declared(c); err == nil || !strings.Contains(err.Error(), `unknown timer profile "slow"`) {
		t.Errorf("Declared(slow) = %v", err)
	}
}
