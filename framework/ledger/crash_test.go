package ledger

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faultline/faultline/framework/crashpoint"
)

// HealAll says, per entry, what its heal found and removed, and says so
// when it found nothing: a fault recorded and never injected.
func TestHealAllReportsWhatEachHealFoundAndRemoved(t *testing.T) {
	dir := t.TempDir()
	l := stateLab{name: "lab-a", dir: dir}
	led, _ := Open(dir)
	injected := markerFault{Path: filepath.Join(dir, "injected")}
	never := markerFault{Path: filepath.Join(dir, "never")}
	for _, f := range []markerFault{injected, never} {
		a, err := led.Record(f, "lab-a", "")
		if err != nil {
			t.Fatal(err)
		}
		if f == injected {
			if err := f.Inject(context.Background(), l); err != nil {
				t.Fatal(err)
			}
		}
		a.Keep()
	}
	rep, err := HealAll(context.Background(), l)
	if err != nil || len(rep.Healed) != 2 {
		t.Fatalf("%+v, %v", rep, err)
	}
	accounts := map[string][]string{}
	for _, h := range rep.Healed {
		accounts[string(h.Entry.Params)] = append(h.Account.Found, h.Account.Removed...)
	}
	if got := accounts[string(injected.Params())]; len(got) != 2 || got[0] != "marker "+injected.Path || got[1] != "marker "+injected.Path {
		t.Errorf("the injected fault's account: %q", got)
	}
	if got := accounts[string(never.Params())]; len(got) != 0 {
		t.Errorf("the fault never injected: account %q, want nothing found", got)
	}
	text := rep.String()
	for _, want := range []string{"  found: marker " + injected.Path + "\n  removed: marker " + injected.Path, "  found nothing of it in the lab (never injected, or already removed)"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

// A heal that fails says what it found before it failed, and its entry is
// named and kept.
func TestAFailedHealNamesItsEntryAndKeepsIt(t *testing.T) {
	dir := t.TempDir()
	l := stateLab{name: "lab-a", dir: dir}
	led, _ := Open(dir)
	bad := markerFault{Path: filepath.Join(dir, "bad"), FailHeal: true}
	a, _ := led.Record(bad, "lab-a", "")
	bad.Inject(context.Background(), l)
	a.Keep()
	rep, err := HealAll(context.Background(), l)
	if err == nil || len(rep.Failed) != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	if got := rep.Failed[0].Account.Found; len(got) != 1 || got[0] != "marker "+bad.Path {
		t.Errorf("found before failing: %q", got)
	}
	if names := rep.FailedNames(); len(names) != 1 || names[0] != "ledger-test-marker (entry "+a.ID+")" {
		t.Errorf("FailedNames = %q", names)
	}
	text := rep.String()
	if !strings.Contains(text, "FAILED to heal ledger-test-marker") || !strings.Contains(text, "(the entry stays in the ledger)") || !strings.Contains(text, "  found: marker "+bad.Path) {
		t.Errorf("report:\n%s", text)
	}
	if es, _ := led.Entries(); len(es) != 1 || es[0].ID != a.ID {
		t.Errorf("entries %v, want the failed one kept", es)
	}
}

const crashChildEnv = "LEDGER_TEST_CRASH_CHILD"

// TestLedgerKilledAtEachPointIsHealedByTheNextProcess kills a process at
// each of the ledger's crash points (writing an entry; HealAll with an
// entry locked and not healed; healed and not removed) and heals the
// ledger in this process: nothing is left, and the account says what was
// still there.
func TestLedgerKilledAtEachPointIsHealedByTheNextProcess(t *testing.T) {
	if mode := os.Getenv(crashChildEnv); mode != "" {
		crashChild(t, mode)
		return
	}
	for _, c := range []struct {
		point string
		// left says what the parent leaves for the child: an injected
		// fault in the ledger.
		left bool
		// found is what the next heal must find of the fault.
		found bool
	}{
		{"ledger/record/written", false, false},
		{"ledger/heal/locked", true, true},
		{"ledger/heal/healed", true, false},
	} {
		t.Run(c.point, func(t *testing.T) {
			dir := t.TempDir()
			l := stateLab{name: "lab-a", dir: dir}
			marker := filepath.Join(dir, "marker")
			led, _ := Open(dir)
			if c.left {
				f := markerFault{Path: marker}
				a, _ := led.Record(f, "lab-a", "left")
				f.Inject(context.Background(), l)
				a.Keep()
			}
			mode := "heal"
			if !c.left {
				mode = "record"
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestLedgerKilledAtEachPointIsHealedByTheNextProcess$")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+mode, "LEDGER_TEST_DIR="+dir, crashpoint.Env+"="+c.point)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("the child ended %v, want killed at %s; stderr:\n%s", err, c.point, stderr.String())
			}
			if !strings.Contains(stderr.String(), crashpoint.Line+c.point+"#1") {
				t.Fatalf("the child did not die at %s:\n%s", c.point, stderr.String())
			}
			rep, err := HealAll(context.Background(), l)
			if err != nil {
				t.Fatalf("%v\n%s", err, rep)
			}
			t.Logf("the next heal:\n%s", rep)
			if exists(marker) {
				t.Error("the fault is still in place")
			}
			if des, _ := os.ReadDir(led.Dir()); len(des) != 0 {
				t.Errorf("left in the ledger: %v", des)
			}
			switch {
			case !c.left && (len(rep.Discarded) != 1 || len(rep.Healed) != 0):
				t.Errorf("an entry cut short while written must be discarded: %+v", rep)
			case c.left && len(rep.Healed) != 1:
				t.Errorf("healed %d entries, want the one left", len(rep.Healed))
			case c.left && c.found != !rep.Healed[0].Account.Empty():
				t.Errorf("the next heal's account %+v; want the fault found: %v", rep.Healed[0].Account, c.found)
			}
		})
	}
}

func crashChild(t *testing.T, mode string) {
	dir := os.Getenv("LEDGER_TEST_DIR")
	if err := crashpoint.Check(); err != nil {
		t.Fatal(err)
	}
	l := stateLab{name: "lab-a", dir: dir}
	switch mode {
	case "record":
		led, _ := Open(dir)
		f := markerFault{Path: filepath.Join(dir, "marker")}
		if _, err := led.Record(f, "lab-a", "killed while recording"); err != nil {
			t.Fatal(err)
		}
		f.Inject(context.Background(), l)
	case "heal":
		if _, err := HealAll(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("the crash point was never reached")
}
