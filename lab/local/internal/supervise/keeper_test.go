package supervise

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/lab/local/internal/procs"
)

func TestParseRestart(t *testing.T) {
	r, err := parseRestart("2026-11-29T15:22:50.195545221Z 22902 1")
	if err != nil || r.ExitedPID != 22902 || r.ExitStatus != 1 || r.At.Format(time.RFC3339Nano) != "2026-11-29T15:22:50.195545221Z" {
		t.Errorf("parsed %+v, %v", r, err)
	}
	for _, bad := range []string{"", "2026-11-29T15:22:50Z 1", "yesterday 1 2", "2026-11-29T15:22:50Z x 2"} {
		if _, err := parseRestart(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// startKeeper runs the keeper script on argv, as the supervisor does
// inside a host's namespaces, here in the test's own.
func startKeeper(t *testing.T, dir string, delay string, argv ...string) (*exec.Cmd, string, string) {
	t.Helper()
	pidfile, restarts := filepath.Join(dir, "svc.pid"), filepath.Join(dir, "svc.restarts")
	cmd := exec.Command("/bin/sh", append([]string{"-c", keeperScript, KeeperName, pidfile, restarts, delay}, argv...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	return cmd, pidfile, restarts
}

// The keeper starts a service that exits again after its delay, records
// each restart with the exit status, and writes the pid file that lookup
// reads.
func TestKeeperRestartsAnExitedService(t *testing.T) {
	dir := t.TempDir()
	cmd, pidfile, _ := startKeeper(t, dir, "0.2", "/bin/sh", "-c", "sleep 0.1; exit 3")
	deadline := time.Now().Add(20 * time.Second)
	var rs []Restart
	for time.Now().Before(deadline) {
		var err error
		if rs, err = readRestarts(filepath.Join(dir, "svc.restarts")); err != nil {
			t.Fatal(err)
		}
		if len(rs) >= 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(rs) < 3 {
		t.Fatalf("%d restarts recorded in 20s; want at least 3", len(rs))
	}
	for _, r := range rs {
		if r.ExitStatus != 3 || r.ExitedPID == 0 {
			t.Errorf("restart %+v; want exit status 3 of a recorded pid", r)
		}
	}
	if _, err := readRecord(pidfile); err != nil {
		t.Errorf("pid file: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if _, err := cmd.Process.Wait(); err != nil {
		t.Errorf("keeper on SIGTERM: %v", err)
	}
}

// SIGTERM ends the keeper and leaves the running service to whoever stops
// it, so a stop never races a restart. The service sleeps far longer than
// the test takes (it is killed at the end), so a loaded machine that
// slows the test cannot end it on its own.
func TestKeeperEndsWithoutTouchingTheService(t *testing.T) {
	dir := t.TempDir()
	cmd, pidfile, restarts := startKeeper(t, dir, "0.2", "/bin/sleep", "600")
	var rec processRecord
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if rec, err = readRecord(pidfile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid file: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(rec.pid, syscall.SIGKILL) })
	if _, start, err := procs.Stat(rec.pid); err != nil || start != rec.startTime {
		t.Fatalf("pid file %+v does not name the running service (%v)", rec, err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if _, err := cmd.Process.Wait(); err != nil {
		t.Errorf("keeper on SIGTERM: %v", err)
	}
	if procs.Gone(rec.pid) {
		t.Errorf("the service ended with its keeper")
	}
	_ = syscall.Kill(rec.pid, syscall.SIGKILL)
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(restarts); err == nil {
		t.Errorf("a restart was recorded after the keeper ended")
	}
}
