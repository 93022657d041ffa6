package crashpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const (
	childEnv  = "FAULTLINE_CRASHPOINT_TEST_CHILD"
	markerEnv = "FAULTLINE_CRASHPOINT_TEST_DIR"
)

// TestMain lets this test binary act as the process that crashes: as a
// child it walks past three points, noting each step in files, with a
// deferred note that must never be written when it is killed.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child(os.Getenv(markerEnv)))
	}
	os.Exit(m.Run())
}

func child(dir string) int {
	if err := Check(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	note := func(name string) { _ = os.WriteFile(filepath.Join(dir, name), nil, 0o644) }
	defer note("deferred")
	note("started")
	Reach("run/inject/recorded")
	note("after-recorded")
	for range 3 {
		Reach("partition/inject/host")
		note(fmt.Sprintf("host-%d", countFiles(dir, "host-")+1))
	}
	Reach("run/heal/healed")
	note("after-healed")
	return 0
}

func countFiles(dir, prefix string) int {
	n := 0
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			n++
		}
	}
	return n
}

// runChild runs this binary as the child with FAULTLINE_CRASH_AT=at and
// returns the steps it noted, its stderr and how it ended.
func runChild(t *testing.T, at string) ([]string, string, *os.ProcessState) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", markerEnv+"="+dir, Env+"="+at)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var steps []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		steps = append(steps, e.Name())
	}
	return steps, stderr.String(), cmd.ProcessState
}

func killed(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// A process reaching its point dies of SIGKILL there: no later step and
// nothing deferred runs, and it says which point it died at.
func TestReachKillsTheProcessAtItsPoint(t *testing.T) {
	for _, c := range []struct {
		at   string
		want []string
	}{
		{"run/inject/recorded", []string{"started"}},
		{"partition/inject/host", []string{"after-recorded", "started"}},
		{"partition/inject/host#2", []string{"after-recorded", "host-1", "started"}},
		{"partition/inject/host#3", []string{"after-recorded", "host-1", "host-2", "started"}},
		{"run/heal/healed", []string{"after-recorded", "host-1", "host-2", "host-3", "started"}},
	} {
		t.Run(c.at, func(t *testing.T) {
			steps, stderr, st := runChild(t, c.at)
			if !killed(st) {
				t.Fatalf("the child ended %v, not killed by SIGKILL; stderr %q", st, stderr)
			}
			if strings.Join(steps, ",") != strings.Join(c.want, ",") {
				t.Errorf("steps %v, want %v (a deferred step must never run)", steps, c.want)
			}
			name, nth, _ := strings.Cut(c.at, "#")
			if nth == "" {
				nth = "1"
			}
			if want := Line + name + "#" + nth + " reached"; !strings.Contains(stderr, want) {
				t.Errorf("stderr %q lacks %q", stderr, want)
			}
		})
	}
}

// Unset, a point not reached, or a count past the last time it is
// reached: the process runs to its end.
func TestAProcessNotArmedAtAReachedPointRunsToItsEnd(t *testing.T) {
	for _, at := range []string{"", "run/heal/started", "partition/inject/host#4"} {
		steps, stderr, st := runChild(t, at)
		if killed(st) || !st.Success() {
			t.Errorf("%q: the child ended %v: %s", at, st, stderr)
		}
		if len(steps) != 7 || steps[0] != "after-healed" || steps[2] != "deferred" {
			t.Errorf("%q: steps %v, want every step and the deferred one", at, steps)
		}
	}
}

// A name no point is declared under, or a bad count, is refused by Check
// before anything runs: a test would otherwise wait for a point that is
// never reached.
func TestCheckRefusesAnUndeclaredPointOrABadCount(t *testing.T) {
	for _, at := range []string{"run/inject/recordedx", "partition/inject/host#0", "partition/inject/host#x"} {
		steps, stderr, st := runChild(t, at)
		if st.ExitCode() != 3 || len(steps) != 0 || !strings.Contains(stderr, Env) {
			t.Errorf("%q: exit %d, steps %v, stderr %q; want refused before any step", at, st.ExitCode(), steps, stderr)
		}
	}
	for _, c := range []struct {
		v    string
		name string
		nth  int64
	}{{"", "", 1}, {" compound/heal/part#2 ", "compound/heal/part", 2}, {"run/window/probed", "run/window/probed", 1}} {
		a := parse(c.v)
		if a.err != nil || a.name != c.name || a.nth != c.nth {
			t.Errorf("parse(%q) = %q #%d (%v), want %q #%d", c.v, a.name, a.nth, a.err, c.name, c.nth)
		}
	}
}

func TestPointsAreDeclaredOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Points {
		if seen[p.Name] {
			t.Errorf("%s declared twice", p.Name)
		}
		seen[p.Name] = true
		if p.Where == "" || p.State == "" || strings.ContainsAny(p.Name, "# ") {
			t.Errorf("%+v: a point needs a package, a state and a name without '#' or spaces", p)
		}
	}
}
