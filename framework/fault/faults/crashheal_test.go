package faults

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// crashed is what a host double panics with to stand for the process
// dying in the middle of a heal: nothing after it runs, and the next heal
// is made from the fault's parameters alone, as `faultline heal` does.
type crashed struct{ at string }

// healCrashingAt heals f and recovers the crash a host double stages;
// it reports whether the heal crashed.
func healCrashingAt(ctx context.Context, l lab.Lab, f fault.Fault) (died bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crashed); !ok {
				panic(r)
			}
			died = true
		}
	}()
	return false, f.Heal(ctx, l)
}

// fromLedger is f as a process that did not inject it decodes it.
func fromLedger(t *testing.T, f fault.Fault) fault.Fault {
	t.Helper()
	g, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// shellHost is a recording host whose commands run in a local bash (on
// files in a test's directory), and which crashes at the first StopService
// of a service named in crashAt.
type shellHost struct {
	*recordingHost
	crashAt map[string]bool
}

func (h *shellHost) Run(ctx context.Context, cmd string) (lab.Result, error) {
	h.recordingHost.Run(ctx, cmd)
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	res := lab.Result{Stdout: stdout.String(), Stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.ExitCode = ee.ExitCode()
		err = nil
	}
	return res, err
}

func (h *shellHost) StopService(ctx context.Context, name string) error {
	if h.crashAt[name] {
		delete(h.crashAt, name)
		panic(crashed{at: "stop " + name})
	}
	return h.recordingHost.StopService(ctx, name)
}

// agentLab is a recording lab whose node worker1 is a shellHost and whose
// agents' kubeconfigs are files in dir.
type agentLab struct {
	*recordingLab
	node *shellHost
	dir  string
}

func (l *agentLab) Host(name string) (lab.Host, error) {
	if name == l.node.name {
		return l.node, nil
	}
	return l.recordingLab.Host(name)
}

func (l *agentLab) AgentKubeconfig(node, agent string) (string, error) {
	return filepath.Join(l.dir, node+"-"+agent+".kubeconfig"), nil
}

// A heal cut short after it put an agent's original kubeconfig back and
// before it restarted the agent must be completed by the next heal: the
// agent still runs on the pinned server it read at its start, so the next
// heal restarts it, and only then is the kept copy dropped.
func TestPinAgentsHealCutShortBeforeTheRestartIsCompletedByTheNext(t *testing.T) {
	dir := t.TempDir()
	rl := loadLab(t, "lab11")
	node := &shellHost{recordingHost: rl.host("worker1"), crashAt: map[string]bool{}}
	l := &agentLab{recordingLab: rl, node: node, dir: dir}
	kc := filepath.Join(dir, "worker1-kube-proxy.kubeconfig")
	orig := "apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.231.11.10:6443\n  name: lab11\n"
	if err := os.WriteFile(kc, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := PinAgents("worker1", "cp1", lab.ServiceKubeProxy)
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(kc); !strings.Contains(string(b), "server: https://10.231.11.21:6443") {
		t.Fatalf("not pinned: %s", b)
	}
	node.ops = nil
	node.crashAt[lab.ServiceKubeProxy] = true
	if died, err := healCrashingAt(ctx, l, fromLedger(t, f)); !died {
		t.Fatalf("the staged crash did not happen (heal returned %v)", err)
	}
	if b, _ := os.ReadFile(kc); string(b) != orig {
		t.Fatalf("the crash came before the original was back: %s", b)
	}
	if restarted := slices.Contains(node.operations(), "start "+lab.ServiceKubeProxy); restarted {
		t.Fatal("the agent was restarted before the crash")
	}

	hctx, account := fault.WithHealAccount(ctx)
	if err := fromLedger(t, f).Heal(hctx, l); err != nil {
		t.Fatal(err)
	}
	ops := node.operations()
	if !slices.Contains(ops, "stop "+lab.ServiceKubeProxy) || !slices.Contains(ops, "start "+lab.ServiceKubeProxy) {
		t.Errorf("after the second heal the agent was not restarted on its original kubeconfig: %v", ops)
	}
	if b, _ := os.ReadFile(kc); string(b) != orig {
		t.Errorf("kubeconfig after the second heal: %s", b)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.faultline-*"))
	if len(left) != 0 {
		t.Errorf("left beside the kubeconfig: %v", left)
	}
	if a := account(); len(a.Found) == 0 || !strings.Contains(strings.Join(a.Removed, "\n"), "restarted on its original kubeconfig") {
		t.Errorf("the second heal's account: %+v", a)
	}
	node.ops = nil
	if err := fromLedger(t, f).Heal(ctx, l); err != nil {
		t.Fatal(err)
	}
	if ops := node.operations(); len(ops) != 0 {
		t.Errorf("a third heal, with nothing left, did %v", ops)
	}
}

// powerLab is a recording lab whose PowerOn can be cut short: the host's
// links come up (the lab reports it on) and the program dies before it
// starts any service.
type powerLab struct {
	*recordingLab
	crashPowerOn bool
}

type powerHost struct {
	*recordingHost
	l *powerLab
}

func (l *powerLab) Host(name string) (lab.Host, error) {
	h, err := l.recordingLab.Host(name)
	if err != nil {
		return nil, err
	}
	return &powerHost{recordingHost: h.(*recordingHost), l: l}, nil
}

func (h *powerHost) PowerOff(context.Context) error {
	h.op("power off")
	h.l.power[h.name] = "off"
	for name := range h.services {
		h.setState(name, "stopped", 0)
	}
	return nil
}

func (h *powerHost) PowerOn(ctx context.Context) error {
	h.op("power on")
	h.l.power[h.name] = "on"
	if h.l.crashPowerOn {
		h.l.crashPowerOn = false
		panic(crashed{at: "power on, before the services started"})
	}
	for name := range h.services {
		h.setState(name, "running", 5000)
	}
	return nil
}

// A power-on cut short after the host came on and before its services
// started leaves a host the lab reports on: the next heal must still start
// its services.
func TestPowerOffHealCutShortMidPowerOnIsCompletedByTheNext(t *testing.T) {
	l := &powerLab{recordingLab: loadLab(t, "lab11")}
	ctx := context.Background()
	f := PowerOff("worker2")
	if err := f.Inject(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.crashPowerOn = true
	if died, err := healCrashingAt(ctx, l, fromLedger(t, f)); !died {
		t.Fatalf("the staged crash did not happen (heal returned %v)", err)
	}
	hctx, account := fault.WithHealAccount(ctx)
	if err := fromLedger(t, f).Heal(hctx, l); err != nil {
		t.Fatal(err)
	}
	h := l.host("worker2")
	states, _ := h.Services(ctx)
	for _, st := range states {
		if st.State != "running" {
			t.Errorf("%s on worker2 is %s after the second heal", st.Name, st.State)
		}
	}
	if a := account(); len(a.Found) != len(states) || len(a.Removed) != len(states) {
		t.Errorf("the second heal's account: %+v (want each stopped service found and started)", a)
	}
}
