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
		fault.Found(ctx, "%s: a rule", f.Target)
		return errors.New("stuck: host unreachable")
	}
	if f.Target != "never-injected" {
		fault.Found(ctx, "%s: a rule", f.Target)
		fault.Removed(ctx, "%s: the rule", f.Target)
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
	for _, want := range []string{"  found: worker1: a rule\n  removed: worker1: the rule\n", "  found: worker2: a rule\n  removed: worker2: the rule\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("heal output lacks what it found and removed, %q:\n%s", want, out)
		}
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
	leave(t, led, "never-injected")
	clear(healed)
	fakeUpLabs(t, "lab11")
	left, _ := led.Entries()
	var stuckID string
	for _, e := range left {
		if strings.Contains(string(e.Params), "stuck") {
			stuckID = e.ID
		}
	}
	code, out, errs := runInProcess(t, "heal")
	if code != exitError || !strings.Contains(errs, "healing lab lab11") || !strings.Contains(errs, "stuck: host unreachable") {
		t.Errorf("failing heal: exit %d, stderr %q", code, errs)
	}
	if want := "1 fault(s) not healed, kept in the ledger for the next heal: cli-test-counter (entry " + stuckID + ")"; !strings.Contains(errs, want) {
		t.Errorf("stderr %q does not name the entry not healed (%q)", errs, want)
	}
	if !strings.Contains(out, "FAILED to heal") || !strings.Contains(out, "  found: stuck: a rule\n") {
		t.Errorf("failing heal output, want what it found before it failed: %q", out)
	}
	if !strings.Contains(out, "healed cli-test-counter {\"Target\":\"never-injected\"}") || !strings.Contains(out, "found nothing of it in the lab") {
		t.Errorf("the entry that was never injected: %q", out)
	}
	if left, _ := led.Entries(); len(left) != 1 || left[0].ID != stuckID {
		t.Errorf("a fault that failed to heal must stay in the ledger, and only it; it holds %v", left)
	}
	if healed["never-injected"] != 1 {
		t.Errorf("a failed entry must not keep the others from being healed: %v", healed)
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
