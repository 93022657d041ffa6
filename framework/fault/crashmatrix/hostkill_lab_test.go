//go:build lab

package crashmatrix_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// hostKill is a lab host's own process killed during a run's window by
// something other than the fault: the fault and what its heal leans on.
type hostKill struct {
	name    string
	fault   func(s shape) fault.Fault
	host    func(s shape) string
	service string
}

// hostKills are the cases: the API server the blackhole watch's heal waits
// on, the container runtime under a frozen agent, and the kubelet the
// fault itself froze.
func hostKills() []hostKill {
	return []hostKill{
		{name: "kube-apiserver-under-blackhole-watch", service: lab.ServiceAPIServer,
			fault: func(s shape) fault.Fault { return faults.BlackholeWatch(s.worker(0)) },
			host:  func(s shape) string { return s.cp(1) }},
		{name: "containerd-under-frozen-kube-proxy", service: lab.ServiceContainerd,
			fault: func(s shape) fault.Fault { return faults.Freeze(s.worker(1), lab.ServiceKubeProxy) },
			host:  func(s shape) string { return s.worker(1) }},
		{name: "kubelet-under-its-own-freeze", service: lab.ServiceKubelet,
			fault: func(s shape) fault.Fault { return faults.Freeze(s.worker(0), lab.ServiceKubelet) },
			host:  func(s shape) string { return s.worker(0) }},
	}
}

// hostProcessesKilled runs each case through the engine, on the lab with
// its real reset: the run must end ABORTED, JUDGED or FAULT_INEFFECTIVE
// with heal done and the ledger empty, nothing of the fault left (every
// aspect of the fingerprint but those the dead process changes by
// itself), and the next run (the next case, then a last plain one) must
// start clean: its reset and clean-start check pass and it is judged.
func (m *matrix) hostProcessesKilled(t *testing.T) {
	ctx := context.Background()
	suite := scenario.Suite{
		Name:          "host-processes-killed",
		OpenLab:       func(context.Context) (lab.Lab, error) { return m.l, nil },
		Sampler:       sampler.New(sampler.Options{}),
		SampleEvery:   time.Second,
		Applicability: invariant.Applicability,
	}
	rn, err := scenario.NewRunner(ctx, suite, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range hostKills() {
		t.Run(k.name, func(t *testing.T) {
			host := k.host(m.shape)
			h, err := m.l.Host(host)
			if err != nil {
				t.Fatal(err)
			}
			sc := scenario.Scenario{
				ID: "killed-" + k.name, Title: k.service + " on " + host + " killed during the fault", Fault: k.fault(m.shape),
				Window: 20 * time.Second, Settle: 2 * time.Minute,
				Invariants: []invariant.Invariant{invariant.SingleLeader()},
				Change: &scenario.Change{Name: "SIGKILL to " + k.service + " on " + host + ", not the fault's doing", After: 6 * time.Second,
					Make: func(ctx context.Context, l lab.Lab) error { return h.Signal(ctx, k.service, syscall.SIGKILL) }},
			}
			res, err := rn.Run(ctx, sc)
			if err != nil {
				t.Fatal(err)
			}
			rec := res.Record
			t.Logf("%s: %s (%s); spec failure %q", sc.ID, rec.RunVerdict, rec.RunReason, res.Failure)
			for _, j := range rec.Judgements {
				t.Logf("  %s: %s (%s)", j.Invariant, j.Verdict, j.Reason)
			}
			m.checkEndedWithoutTheFault(t, ctx, rec, res.Failure, sc.Fault, host)
		})
	}
	t.Run("the-next-run-starts-clean", func(t *testing.T) {
		sc := scenario.Scenario{ID: "after-the-kills", Title: "a plain run after the kills", Fault: faults.Freeze(m.shape.worker(2), lab.ServiceKubeProxy),
			Window: 10 * time.Second, Settle: 2 * time.Minute, Invariants: []invariant.Invariant{invariant.SingleLeader()}}
		res, err := rn.Run(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		rec := res.Record
		t.Logf("%s: %s (%s)", sc.ID, rec.RunVerdict, rec.RunReason)
		if rec.RunVerdict != verdict.RunJudged {
			t.Errorf("the run after the kills is %s (%s), want JUDGED: it did not start clean", rec.RunVerdict, rec.RunReason)
		}
		if d := m.waitClean(ctx); d != "" {
			m.dirty = true
			t.Errorf("the lab differs from its clean fingerprint after the last run:\n%s", d)
		}
	})
}

// checkEndedWithoutTheFault checks one run that had a host's process
// killed under it.
func (m *matrix) checkEndedWithoutTheFault(t *testing.T, ctx context.Context, rec verdict.Run, failure string, f fault.Fault, killedOn string) {
	switch rec.RunVerdict {
	case verdict.RunAborted, verdict.RunJudged, verdict.FaultIneffective:
	default:
		t.Errorf("run verdict %s", rec.RunVerdict)
	}
	for _, bad := range []string{"reset failed", "clean-start check failed", "heal failed", "release failed"} {
		if strings.Contains(rec.RunReason, bad) || strings.Contains(failure, bad) {
			t.Errorf("the run: %s / %s", rec.RunReason, failure)
		}
	}
	led, err := ledger.Open(m.l.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	if es, err := led.Entries(); err != nil || len(es) != 0 {
		t.Errorf("the heal ledger holds %v after the run (%v): the fault was not healed", es, err)
	}
	// The process stays dead until the next reset; what it changes by
	// itself is left out, everything else must be as it was.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		fp, err := m.fingerprint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for k, v := range m.clean {
			switch k {
			case killedOn + " services", killedOn + " clocks", killedOn + " stopped processes", "nodes":
				continue
			}
			if fp[k] != v {
				left = append(left, fmt.Sprintf("%s:\n  clean:\n%s\n  now:\n%s", k, indent(v), indent(fp[k])))
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("left after the run (besides what the killed process changes):\n%s", strings.Join(left, "\n"))
			break
		}
		time.Sleep(3 * time.Second)
	}
	if eff, err := f.Probe(ctx, m.l); err == nil && eff.Observed {
		t.Errorf("the fault's probe still sees it after the run: %s", eff.Detail)
	}
}

// testWriter sends the runner's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
