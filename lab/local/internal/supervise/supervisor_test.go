package supervise

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/lab/local/internal/procs"
)

// writePidFile records pid with the given start time, as Start does.
func writePidFile(t *testing.T, s *Supervisor, host, service string, pid int, start uint64) {
	t.Helper()
	p := s.pidFile(host, service)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(fmt.Sprintf("%d %d\n", pid, start)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Lookup trusts a pid file only while its pid is the process it recorded:
// the same pid with another start time is a recycled pid, not the service.
func TestLookupReadsPidFilesAndSeesThroughRecycledPids(t *testing.T) {
	s := New(t.TempDir())
	if pid, st := s.Lookup("h", "svc"); pid != 0 || st != StateStopped {
		t.Errorf("no pid file: %d %s, want stopped", pid, st)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	_, start, err := procs.Stat(pid)
	if err != nil {
		t.Fatal(err)
	}
	writePidFile(t, s, "h", "svc", pid, start)
	if got, st := s.Lookup("h", "svc"); got != pid || st != StateRunning {
		t.Errorf("a running service: %d %s, want %d running", got, st, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, st := s.Lookup("h", "svc"); st != StateFrozen && time.Now().Before(deadline); _, st = s.Lookup("h", "svc") {
		time.Sleep(10 * time.Millisecond)
	}
	if _, st := s.Lookup("h", "svc"); st != StateFrozen {
		t.Errorf("a stopped process: %s, want frozen", st)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	writePidFile(t, s, "h", "svc", pid, start+1)
	if got, st := s.Lookup("h", "svc"); got != 0 || st != StateExited {
		t.Errorf("a pid file naming another start time: %d %s, want exited", got, st)
	}
	if err := os.WriteFile(s.pidFile("h", "svc"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readRecord(s.pidFile("h", "svc")); err == nil {
		t.Error("a malformed pid file was read")
	}
}
