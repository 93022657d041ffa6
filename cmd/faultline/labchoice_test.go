package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

// Every command that changes a lab, with the call it makes on the lab.
var changingCommands = []struct {
	args []string
	call string
}{
	{[]string{"lab", "down"}, "down"},
	{[]string{"lab", "reset"}, "reset"},
	{[]string{"heal"}, ""},
	{[]string{"lab", "snapshot", "--cold"}, "cold-snapshot replace=false"},
}

// changingLab can be brought down, reset and cold-snapshotted.
type changingLab struct{ recordingProvisioner }

func (l *changingLab) ColdSnapshot(_ context.Context, replace bool) error {
	l.calls = append(l.calls, "cold-snapshot replace="+map[bool]string{true: "true", false: "false"}[replace])
	return nil
}

func newChangingLab(t *testing.T, name string) *changingLab {
	return &changingLab{recordingProvisioner{recordingLab{info: lab.Info{Name: name, Kind: "local", ResetKind: lab.ResetColdSnapshot}, stateDir: t.TempDir()}}}
}

func TestALabCommandThatChangesALabNeverGuesses(t *testing.T) {
	for _, c := range changingCommands {
		name := strings.Join(c.args, " ")
		t.Run(name+"/none up", func(t *testing.T) {
			root := fakeUpLabs(t)
			l := newChangingLab(t, "lab11")
			opened := useLab(t, l)
			code, _, errs := runInProcess(t, c.args...)
			if code != exitUsage || !strings.Contains(errs, "no lab named and no lab is up (no lab record under "+root+")") || !strings.Contains(errs, "--lab") {
				t.Errorf("exit %d, stderr %q; want a usage error saying no lab is up", code, errs)
			}
			if len(*opened) != 0 || len(l.calls) != 0 {
				t.Errorf("a refused command opened %v and did %v", *opened, l.calls)
			}
		})
		t.Run(name+"/two up", func(t *testing.T) {
			fakeUpLabs(t, "pair", "lab11")
			l := newChangingLab(t, "lab11")
			opened := useLab(t, l)
			code, _, errs := runInProcess(t, c.args...)
			if code != exitUsage || !strings.Contains(errs, "no lab named and 2 labs are up (lab11, pair)") {
				t.Errorf("exit %d, stderr %q; want a usage error naming lab11 and pair", code, errs)
			}
			if len(*opened) != 0 || len(l.calls) != 0 {
				t.Errorf("a refused command opened %v and did %v", *opened, l.calls)
			}
		})
		t.Run(name+"/one up", func(t *testing.T) {
			root := fakeUpLabs(t, "pair")
			l := newChangingLab(t, "pair")
			opened := useLab(t, l)
			code, out, errs := runInProcess(t, c.args...)
			if code != exitOK || !strings.Contains(errs, "acting on lab pair, the one lab that is up (state dir "+filepath.Join(root, "pair")+")") {
				t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
			if strings.Join(*opened, ",") != "up:pair" || (c.call != "" && strings.Join(l.calls, ",") != c.call) {
				t.Errorf("opened %v, did %v; want pair opened from its record and %q", *opened, l.calls, c.call)
			}
		})
		t.Run(name+"/named by flag", func(t *testing.T) {
			fakeUpLabs(t, "pair")
			l := newChangingLab(t, "lab11")
			opened := useLab(t, l)
			if code, _, errs := runInProcess(t, append(c.args, "--lab", "lab11")...); code != exitOK || strings.Contains(errs, "acting on") {
				t.Errorf("exit %d, stderr %q", code, errs)
			}
			if strings.Join(*opened, ",") != "lab11|" {
				t.Errorf("opened %v, want lab11 as named", *opened)
			}
		})
		t.Run(name+"/named by environment", func(t *testing.T) {
			fakeUpLabs(t, "pair", "racks")
			t.Setenv(envLab, "lab11")
			l := newChangingLab(t, "lab11")
			opened := useLab(t, l)
			if code, _, errs := runWithEnv(t, c.args...); code != exitOK {
				t.Errorf("exit %d, stderr %q", code, errs)
			}
			if strings.Join(*opened, ",") != "lab11|" {
				t.Errorf("opened %v, want lab11 as $FAULTLINE_LAB names it", *opened)
			}
		})
	}
}

// The one lab up has a record that cannot be read: the command refuses,
// naming its state dir, rather than act on a lab it cannot see.
func TestTheOneLabUpWithAnUnreadableRecordIsRefused(t *testing.T) {
	root := fakeUpLabs(t)
	writeTestFile(t, filepath.Join(root, "lab11", "lab.json"), "{")
	l := newChangingLab(t, "lab11")
	opened := useLab(t, l)
	code, _, errs := runInProcess(t, "lab", "down")
	if code != exitUsage || !strings.Contains(errs, "cannot be opened from its state dir "+filepath.Join(root, "lab11")) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if len(*opened) != 0 {
		t.Errorf("opened %v", *opened)
	}
}

// The lab that is up is opened from the config it recorded, not from a
// lab file: a lab brought up from a file elsewhere is still found.
func TestTheLabUpIsOpenedFromItsRecord(t *testing.T) {
	root := fakeUpLabs(t, "pair")
	up, err := upLabs()
	if err != nil || len(up) != 1 {
		t.Fatalf("up %v, %v", up, err)
	}
	l, err := openUpLab(up[0])
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if info := l.Info(); info.Name != "pair" || info.Kind != "local" || l.StateDir() != filepath.Join(root, "pair") {
		t.Errorf("opened %+v at %s", info, l.StateDir())
	}
}

func TestLabStatusWithNoLabNamedShowsEveryLabUp(t *testing.T) {
	root := fakeUpLabs(t)
	useLab(t, newChangingLab(t, "x"))
	code, out, errs := runInProcess(t, "lab", "status")
	if code != exitOK || out != "no lab is up (no lab record under "+root+"); name a lab with --lab to see its hosts\n" {
		t.Errorf("none up: exit %d, out %q, err %q", code, out, errs)
	}
	code, out, _ = runInProcess(t, "lab", "status", "--json")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("none up, --json: exit %d, out %q", code, out)
	}

	fakeUpLabs(t, "pair", "lab11")
	labs := map[string]*changingLab{"pair": newChangingLab(t, "pair"), "lab11": newChangingLab(t, "lab11")}
	prev := openUpLab
	openUpLab = func(u lab.UpLab) (lab.Lab, error) { return labs[u.Name], nil }
	t.Cleanup(func() { openUpLab = prev })
	code, out, errs = runInProcess(t, "lab", "status")
	if code != exitOK || !strings.Contains(out, "lab lab11: up") || !strings.Contains(out, "lab pair: up") || strings.Index(out, "lab lab11: up") > strings.Index(out, "lab pair: up") {
		t.Errorf("two up: exit %d, err %q, out:\n%s", code, errs, out)
	}
	code, out, _ = runInProcess(t, "lab", "status", "--json")
	var sts []lab.Status
	if err := json.Unmarshal([]byte(out), &sts); err != nil || code != exitOK || len(sts) != 2 || sts[0].Info.Name != "lab11" || sts[1].Info.Name != "pair" {
		t.Errorf("two up, --json: exit %d, %v, %+v", code, err, sts)
	}
	for name, l := range labs {
		if !l.closed || strings.Join(l.calls, ",") != "status,status" {
			t.Errorf("lab %s: closed %v, calls %v", name, l.closed, l.calls)
		}
	}
}
