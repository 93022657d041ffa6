package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/lab"
)

// healCounter is a fault kind known only to this test binary; its heal
// counts calls per target and fails for a target named "stuck".
type healCounter struct{ Target string }

var healed = map[string]int{}

func (f healCounter) Kind() string                                { return "cli-test-counter" }
func (f healCounter) Class() fault.Class                          { return "test" }
func (f healCounter) Params() json.RawMessage                     { b, _ := json.Marshal(f); return b }
func (f healCounter) Inject(ctx context.Context, l lab.Lab) error { return nil }
func (f healCounter) Probe(context.Context, lab.Lab) (fault.Effect, error) {
	return fault.Effect{}, nil
}
func (f healCounter) Heal(ctx context.Context, l lab.Lab) error {
	if f.Target == "stuck" {
		return errors.New("stuck: host unreachable")
	}
	healed[f.Target]++
	return nil
}

func init() {
	fault.Register("cli-test-counter", func(p json.RawMessage) (fault.Fault, error) {
		var f healCounter
		err := json.Unmarshal(p, &f)
		return f, err
	})
}

func labWithLedger(t *testing.T) (*recordingLab, *ledger.Ledger) {
	t.Helper()
	l := &recordingLab{info: lab.Info{Name: "lab11", Kind: "local"}, stateDir: t.TempDir()}
	led, err := ledger.Open(l.stateDir)
	if err != nil {
		t.Fatal(err)
	}
	useLab(t, l)
	return l, led
}

// leave records a fault and lets go of it as a killed run would.
func leave(t *testing.T, led *ledger.Ledger, target string) {
	t.Helper()
	a, err := led.Record(healCounter{Target: target}, "lab11", "scenario-"+target)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Keep(); err != nil {
		t.Fatal(err)
	}
}

func TestHealHealsWhatTheLedgerHolds(t *testing.T) {
	_, led := labWithLedger(t)
	leave(t, led, "worker1")
	leave(t, led, "worker2")
	clear(healed)

	code, out, errs := runInProcess(t, "heal", "--lab", "lab11")
	if code != exitOK {
		t.Fatalf("heal: exit %d: %s", code, errs)
	}
	if healed["worker1"] != 1 || healed["worker2"] != 1 {
		t.Errorf("healed %v, want each fault healed once", healed)
	}
	if !strings.Contains(out, `healed cli-test-counter {"Target":"worker1"}`) || !strings.Contains(out, "for scenario-worker2") {
		t.Errorf("heal output:\n%s", out)
	}
	if left, err := led.Entries(); err != nil || len(left) != 0 {
		t.Errorf("ledger still holds %v (%v)", left, err)
	}

	code, out, _ = runInProcess(t, "heal", "--topology", "lab11")
	if code != exitOK || !strings.Contains(out, "nothing to heal") {
		t.Errorf("second heal: exit %d, %q", code, out)
	}
}

func TestHealFailureKeepsTheEntryAndExitsNonZero(t *testing.T) {
	_, led := labWithLedger(t)
	leave(t, led, "stuck")
	fakeUpLabs(t, "lab11")
	code, out, errs := runInProcess(t, "heal")
	if code != exitError || !strings.Contains(errs, "healing lab lab11") || !strings.Contains(errs, "stuck: host unreachable") {
		t.Errorf("failing heal: exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "FAILED to heal") {
		t.Errorf("failing heal output: %q", out)
	}
	if left, _ := led.Entries(); len(left) != 1 {
		t.Errorf("a fault that failed to heal must stay in the ledger; it holds %d entries", len(left))
	}
}

func TestHealLeavesAFaultHeldByALiveRun(t *testing.T) {
	_, led := labWithLedger(t)
	clear(healed)
	live, err := led.Record(healCounter{Target: "live"}, "lab11", "running")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Done()
	code, out, errs := runInProcess(t, "heal", "--lab", "lab11")
	if code != exitError || !strings.Contains(errs, "1 fault(s) still held by a running process") {
		t.Errorf("heal with a live entry: exit %d, %q", code, errs)
	}
	if !strings.Contains(out, "still held by running pid") || healed["live"] != 0 {
		t.Errorf("a live run's fault must not be healed: %q, %v", out, healed)
	}
}
