package crashtest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

const (
	childEnv = "FAULTLINE_ENGINE_CRASH_CHILD"
	dirEnv   = "FAULTLINE_ENGINE_CRASH_DIR"
)

func suite(dir string) scenario.Suite {
	return scenario.Suite{
		Name:          "engine-crash",
		OpenLab:       func(context.Context) (lab.Lab, error) { return memlab.Open(dir, true), nil },
		Sampler:       memlab.Sampler{},
		SampleEvery:   20 * time.Millisecond,
		Applicability: invariant.Table{},
	}
}

func scenarioWith(id string, f fault.Fault) scenario.Scenario {
	return scenario.Scenario{ID: id, Title: id, Fault: f, Window: 300 * time.Millisecond, Settle: 300 * time.Millisecond,
		Invariants: []invariant.Invariant{flagsRead{}}}
}

// flagsRead is PRESERVED whenever memlab's flags were read: these runs
// are about where they die, not what they judge.
type flagsRead struct{}

func (flagsRead) Name() string         { return "flags-read" }
func (flagsRead) Phase() verdict.Phase { return verdict.Safety }
func (flagsRead) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: string(memlab.SourceFlags), Question: memlab.QuestionSet}}
}
func (flagsRead) Judge(in invariant.Input) verdict.Judgement {
	for _, s := range in.Snapshots {
		var flags []string
		if s.Get(memlab.SourceFlags, memlab.QuestionSet).Decode(&flags) == nil {
			return verdict.Judgement{Verdict: verdict.Preserved, Reason: "flags read", Sources: []string{string(memlab.SourceFlags)}}
		}
	}
	return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no flags read"}
}

// TestEngineKilledAtEachPointLeavesNothingTheNextStartCannotHeal runs a
// scenario in a child process killed at each of the engine's crash points;
// the next start (a Runner in this process) heals the heal ledger before
// anything else, leaves neither the fault nor its entry, and its first run
// is judged.
func TestEngineKilledAtEachPointLeavesNothingTheNextStartCannotHeal(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		child(t)
		return
	}
	for _, c := range []struct {
		point     string
		lingering bool
		// setAtKill: the fault's flag is set when the process dies;
		// entry: its ledger entry is there.
		setAtKill, entry bool
	}{
		{"run/inject/before-record", false, false, false},
		{"run/inject/recorded", false, false, true},
		{"run/inject/injected", false, true, true},
		{"run/window/probed", false, true, true},
		{"run/window/probed#5", false, true, true},
		{"run/heal/started", false, true, true},
		{"run/heal/healed", false, false, true},
		{"run/heal/healed", true, true, true},
		{"run/release/released", true, false, true},
	} {
		name := c.point
		if c.lingering {
			name += " (lingering)"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestEngineKilledAtEachPointLeavesNothingTheNextStartCannotHeal$")
			kind := "plain"
			if c.lingering {
				kind = "lingering"
			}
			cmd.Env = append(os.Environ(), childEnv+"="+kind, dirEnv+"="+dir, crashpoint.Env+"="+c.point)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the run ended %v, want killed at %s:\n%s", err, c.point, out.String())
			}
			point, nth, _ := strings.Cut(c.point, "#")
			if nth == "" {
				nth = "1"
			}
			if !strings.Contains(out.String(), crashpoint.Line+point+"#"+nth+" reached") {
				t.Fatalf("the run did not die at %s:\n%s", c.point, out.String())
			}
			st, err := memlab.Open(dir, true).Load()
			if err != nil {
				t.Fatal(err)
			}
			led, _ := ledger.Open(dir)
			es, _ := led.Entries()
			if st.Flags["k"] != c.setAtKill || (len(es) == 1) != c.entry {
				t.Errorf("at the kill: flag set %v, %d ledger entries; want set %v, entry %v (log %v)", st.Flags["k"], len(es), c.setAtKill, c.entry, st.Log)
			}

			rn, err := scenario.NewRunner(context.Background(), suite(dir), nil)
			if err != nil {
				t.Fatalf("the next start: %v", err)
			}
			defer rn.Close()
			if healed := len(rn.Ledger.Healed); healed != len(es) {
				t.Errorf("the next start healed %d entries, want the %d left:\n%s", healed, len(es), rn.Ledger)
			}
			if st, _ := memlab.Open(dir, true).Load(); st.Flags["k"] {
				t.Errorf("the fault is still in place after the next start: log %v", st.Log)
			}
			if es, _ := led.Entries(); len(es) != 0 {
				t.Errorf("entries left after the next start: %v", es)
			}
			res, err := rn.Run(context.Background(), scenarioWith("after", memlab.Flag{Name: "a"}))
			if err != nil || res.Record.RunVerdict != verdict.RunJudged {
				t.Errorf("the next run: %s (%s), %v", res.Record.RunVerdict, res.Record.RunReason, err)
			}
		})
	}
}

func child(t *testing.T) {
	if err := crashpoint.Check(); err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv(dirEnv)
	var f fault.Fault = memlab.Flag{Name: "k"}
	if os.Getenv(childEnv) == "lingering" {
		f = memlab.LingeringFlag{Name: "k"}
	}
	rn, err := scenario.NewRunner(context.Background(), suite(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rn.Run(context.Background(), scenarioWith("killed", f))
	t.Fatalf("the run ended without reaching its crash point: %s (%s), %v", res.Record.RunVerdict, res.Record.RunReason, err)
}
