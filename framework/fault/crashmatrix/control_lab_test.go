//go:build lab

package crashmatrix_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/lab"
)

// fingerprintControl is a fault left in place on purpose, and the aspects
// of the fingerprint that must then differ from the clean one.
type fingerprintControl struct {
	name    string
	need    need
	make    func(s shape, fx fixtures) fault.Fault
	differs func(s shape, fx fixtures) []string
}

func fingerprintControls() []fingerprintControl {
	return []fingerprintControl{
		{name: "partition", make: func(s shape, _ fixtures) fault.Fault { return faults.Isolate(s.worker(2)) },
			differs: func(s shape, _ fixtures) []string { return []string{s.worker(2) + " iptables", s.cp(0) + " iptables"} }},
		{name: "pod-freeze", need: needPod, make: func(_ shape, fx fixtures) fault.Fault { return faults.FreezePod(fixtureNamespace, fx.Pod) },
			differs: func(shape, fixtures) []string { return []string{"frozen cgroups", "faultline markers in /run"} }},
		{name: "clock-skew", make: func(s shape, _ fixtures) fault.Fault { return faults.ClockSkew(s.worker(0), 90*time.Second) },
			differs: func(s shape, _ fixtures) []string { return []string{s.worker(0) + " clocks", "clock-skew files"} }},
		{name: "pin-agents", make: func(s shape, _ fixtures) fault.Fault {
			return faults.PinAgents(s.worker(0), s.cp(0), lab.ServiceKubeProxy)
		}, differs: func(s shape, _ fixtures) []string { return []string{s.worker(0) + " kube-proxy kubeconfig"} }},
		{name: "throttle", make: func(s shape, _ fixtures) fault.Fault {
			return faults.Throttle(s.worker(1), []string{s.cp(0)}, 1024)
		}, differs: func(s shape, _ fixtures) []string { return []string{s.worker(1) + " qdiscs"} }},
		{name: "freeze", make: func(s shape, _ fixtures) fault.Fault { return faults.Freeze(s.worker(1), lab.ServiceKubeProxy) },
			differs: func(s shape, _ fixtures) []string {
				return []string{s.worker(1) + " services", s.worker(1) + " stopped processes"}
			}},
		{name: "blackhole-watch", make: func(s shape, _ fixtures) fault.Fault { return faults.BlackholeWatch(s.worker(0)) },
			differs: func(s shape, _ fixtures) []string { return []string{s.cp(0) + " authorization"} }},
	}
}

// fingerprintControls shows the fingerprint can fail: each fault is run
// and killed in its window and not healed, and the aspects it changes must
// differ from the clean fingerprint (read once the lab has settled as far
// as it will); then `faultline heal` and the lab must be clean again.
func (m *matrix) fingerprintControls(t *testing.T) {
	for _, c := range fingerprintControls() {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			if m.dirty {
				m.reset(t, ctx)
			}
			e := entry{kind: c.name, need: c.need}
			fx := m.makeFixtures(t, ctx, e)
			f := c.make(m.shape, fx)
			out, killed, err := m.runChild(ctx, f, "run/window/probed", nil)
			if err != nil || !killed {
				t.Fatalf("the run: killed %v, %v\n%s", killed, err, tail(out))
			}
			fp, err := m.fingerprint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, aspect := range c.differs(m.shape, fx) {
				if _, ok := m.clean[aspect]; !ok {
					t.Errorf("the clean fingerprint has no aspect %q", aspect)
				} else if fp[aspect] == m.clean[aspect] {
					t.Errorf("%s left in place, but the fingerprint's %q is as clean:\n%s", fault.Describe(f), aspect, indent(fp[aspect]))
				} else {
					t.Logf("%q with the fault left:\n%s", aspect, indent(fp[aspect]))
				}
			}
			if d := m.clean.diff(fp); !strings.Contains(d, "heal ledger") {
				t.Errorf("the fault's ledger entry is not in the difference:\n%s", d)
			}
			hout, code, _ := m.heal(ctx, "")
			if code != 0 {
				t.Errorf("faultline heal exited %d:\n%s", code, hout)
			}
			m.removeFixtures(t, ctx, fx)
			if d := m.waitClean(ctx); d != "" {
				m.dirty = true
				t.Errorf("not clean after heal:\n%s", d)
			}
		})
	}
}
