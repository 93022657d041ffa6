package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/lab/local/internal/vdsoskew"
)

// fakeHosts stands in for the kernel's view of which processes are a
// host's: processes this test starts, listed per host.
type fakeHosts struct {
	mu  sync.Mutex
	pid map[string][]int
}

func (f *fakeHosts) of(host string) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pid[host])
}

// start runs a process "on" host. It is waited for only at cleanup: a
// wait meanwhile would be handed the ptrace stops of the helper.
func (f *fakeHosts) start(t *testing.T, host string) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Start returns once the exec began (its close-on-exec pipe closed),
	// which is before the kernel maps the new image's vDSO.
	deadline := time.Now().Add(5 * time.Second)
	for {
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", cmd.Process.Pid))
		if err == nil && strings.Contains(string(maps), "[vdso]") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d has no vDSO mapped 5s after it started", cmd.Process.Pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pid[host] = append(f.pid[host], cmd.Process.Pid)
	return cmd.Process.Pid
}

func skewLab(t *testing.T, hosts *fakeHosts, stateDir string) *Lab {
	t.Helper()
	c := loadTopology(t, "pair")
	c.StateDir = stateDir
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	l.processesOf = hosts.of
	t.Cleanup(func() { l.Close() })
	return l
}

func patchedAt(t *testing.T, pid int) (time.Duration, bool) {
	t.Helper()
	off, on, err := vdsoskew.Patched(pid)
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	return off, on
}

// TestSkewProcessesKeepsAHostShifted skews one host of a lab whose hosts'
// processes are this test's: every process of the host is shifted, the
// other host's are not, a process the host starts later is shifted by the
// reconciler, a heal run from another Lab (as `faultline heal` would, in
// another program) stops the reconciler and restores every process, and
// the host can be skewed again.
func TestSkewProcessesKeepsAHostShifted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: ptrace and /proc/<pid>/mem of another process")
	}
	ctx := context.Background()
	hosts := &fakeHosts{pid: map[string][]int{}}
	state := filepath.Join(t.TempDir(), "state")
	l := skewLab(t, hosts, state)
	w1, w2 := hosts.start(t, "pair-worker"), hosts.start(t, "pair-worker")
	cp := hosts.start(t, "pair-cp")

	if err := l.SkewProcesses(ctx, "pair-worker", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{w1, w2} {
		if off, on := patchedAt(t, pid); !on || off != 90*time.Second {
			t.Errorf("worker pid %d: patched %v at %s", pid, on, off)
		}
	}
	if _, on := patchedAt(t, cp); on {
		t.Error("the other host's process is shifted")
	}
	if st := l.skewStatus("pair-worker"); !strings.Contains(st, "1m30s") || l.skewStatus("pair-cp") != "" {
		t.Errorf("status: worker %q, cp %q", st, l.skewStatus("pair-cp"))
	}

	// A process the host starts now is shifted within a round or two.
	w3 := hosts.start(t, "pair-worker")
	deadline := time.Now().Add(5 * reconcileEvery)
	for {
		if _, on := patchedAt(t, w3); on {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new process of the host was not shifted within %s", 5*reconcileEvery)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A new offset reaches every process.
	if err := l.SkewProcesses(ctx, "pair-worker", -time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{w1, w2, w3} {
		if off, _ := patchedAt(t, pid); off != -time.Hour {
			t.Errorf("pid %d at %s after the change", pid, off)
		}
	}

	// Heal from another Lab, with nothing of the first one's state.
	other := skewLab(t, hosts, state)
	if err := other.UnskewProcesses(ctx, "pair-worker"); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{w1, w2, w3, cp} {
		if off, on := patchedAt(t, pid); on || off != 0 {
			t.Errorf("pid %d after heal: patched %v at %s", pid, on, off)
		}
	}
	// The first Lab's reconciler saw the skew file gone and stopped: a
	// process started now stays as it is.
	w4 := hosts.start(t, "pair-worker")
	time.Sleep(3 * reconcileEvery)
	if _, on := patchedAt(t, w4); on {
		t.Error("a process started after the heal was shifted")
	}
	if err := other.UnskewProcesses(ctx, "pair-worker"); err != nil {
		t.Errorf("a second heal: %v", err)
	}

	// Skewing again starts a reconciler again.
	if err := l.SkewProcesses(ctx, "pair-worker", time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{w1, w4} {
		if off, on := patchedAt(t, pid); !on || off != time.Minute {
			t.Errorf("pid %d skewed again: patched %v at %s", pid, on, off)
		}
	}
	if err := l.UnskewProcesses(ctx, "pair-worker"); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{w1, w2, w3, w4} {
		if _, on := patchedAt(t, pid); on {
			t.Errorf("pid %d still shifted", pid)
		}
	}
	if _, err := os.Stat(l.clockSkewFile("pair-worker")); !os.IsNotExist(err) {
		t.Errorf("skew file left: %v", err)
	}
}

func TestSkewProcessesRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	hosts := &fakeHosts{pid: map[string][]int{}}
	l := skewLab(t, hosts, filepath.Join(t.TempDir(), "state"))
	if err := l.SkewProcesses(ctx, "nosuch", time.Minute); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown host: %v", err)
	}
	if err := l.UnskewProcesses(ctx, "nosuch"); err == nil {
		t.Error("unknown host healed")
	}
	if os.Geteuid() == 0 {
		if err := l.SkewProcesses(ctx, "pair-worker", vdsoskew.MaxOffset+time.Second); err == nil {
			t.Error("an offset beyond the stub's accepted")
		}
	}
	if _, err := os.Stat(filepath.Join(l.cfg.StateDir, "clock-skew")); !os.IsNotExist(err) {
		t.Errorf("refused input left state: %v", err)
	}
}
