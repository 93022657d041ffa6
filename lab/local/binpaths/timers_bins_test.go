//go:build bins

package binpaths_test

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/lab/local/binpaths"
	"github.com/faultline/faultline/lab/timers"
)

// flagDefault returns the default a binary's --help states for a flag.
func flagDefault(t *testing.T, help, flag string) string {
	t.Helper()
	for _, line := range strings.Split(help, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--"+flag+" ") {
			continue
		}
		if m := regexp.MustCompile(`\(default '?([^)']+)'?\)`).FindStringSubmatch(line); m != nil {
			return m[1]
		}
		// etcd prints the default on the flag line itself: --flag 'value'.
		if m := regexp.MustCompile(`^\s*--` + regexp.QuoteMeta(flag) + ` '([^']*)'`).FindStringSubmatch(line); m != nil {
			return m[1]
		}
		t.Fatalf("--%s has no stated default: %q", flag, line)
	}
	t.Fatalf("--help does not list --%s", flag)
	return ""
}

// The kubernetes-defaults profile against what the built v1.36.3 and etcd
// v3.6.8 binaries themselves say their defaults are.
func TestKubernetesDefaultsMatchTheBinaries(t *testing.T) {
	bins, err := binpaths.Locate(nil)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := timers.Get(timers.KubernetesDefaults)
	help := func(bin string) string {
		out, _ := exec.Command(bin, "--help").CombinedOutput() // some exit non-zero after printing help
		if len(out) == 0 {
			t.Fatalf("%s --help printed nothing", bin)
		}
		return string(out)
	}
	duration := func(s string) time.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("default %q: %v", s, err)
		}
		return d
	}
	ms := func(s string) time.Duration {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("default %q: %v", s, err)
		}
		return time.Duration(n) * time.Millisecond
	}
	cm, sched, api, kubelet, etcd := help(bins.KubeControllerManager), help(bins.KubeScheduler), help(bins.KubeAPIServer), help(bins.Kubelet), help(bins.Etcd)
	for _, c := range []struct {
		what string
		got  time.Duration
		want time.Duration
	}{
		{"cm node-monitor-period", duration(flagDefault(t, cm, "node-monitor-period")), p.NodeMonitorPeriod},
		{"cm node-monitor-grace-period", duration(flagDefault(t, cm, "node-monitor-grace-period")), p.NodeMonitorGracePeriod},
		{"cm node-startup-grace-period", duration(flagDefault(t, cm, "node-startup-grace-period")), p.NodeStartupGracePeriod},
		{"cm leader-elect-lease-duration", duration(flagDefault(t, cm, "leader-elect-lease-duration")), p.LeaderElection.LeaseDuration},
		{"cm leader-elect-renew-deadline", duration(flagDefault(t, cm, "leader-elect-renew-deadline")), p.LeaderElection.RenewDeadline},
		{"cm leader-elect-retry-period", duration(flagDefault(t, cm, "leader-elect-retry-period")), p.LeaderElection.RetryPeriod},
		{"scheduler leader-elect-lease-duration", duration(flagDefault(t, sched, "leader-elect-lease-duration")), p.LeaderElection.LeaseDuration},
		{"scheduler leader-elect-renew-deadline", duration(flagDefault(t, sched, "leader-elect-renew-deadline")), p.LeaderElection.RenewDeadline},
		{"scheduler leader-elect-retry-period", duration(flagDefault(t, sched, "leader-elect-retry-period")), p.LeaderElection.RetryPeriod},
		{"apiserver default-not-ready-toleration-seconds", duration(flagDefault(t, api, "default-not-ready-toleration-seconds") + "s"), time.Duration(p.DefaultNotReadyTolerationSeconds) * time.Second},
		{"apiserver default-unreachable-toleration-seconds", duration(flagDefault(t, api, "default-unreachable-toleration-seconds") + "s"), time.Duration(p.DefaultUnreachableTolerationSeconds) * time.Second},
		{"kubelet node-status-update-frequency", duration(flagDefault(t, kubelet, "node-status-update-frequency")), p.NodeStatusUpdateFrequency},
		{"etcd heartbeat-interval", ms(flagDefault(t, etcd, "heartbeat-interval")), p.EtcdHeartbeatInterval},
		{"etcd election-timeout", ms(flagDefault(t, etcd, "election-timeout")), p.EtcdElectionTimeout},
	} {
		if c.got != c.want {
			t.Errorf("%s: the binary's default is %s, the profile says %s", c.what, c.got, c.want)
		}
	}
}
