package procs

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestStatGoneAndStartedOfAChild(t *testing.T) {
	begun := time.Now()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	st, start, err := Stat(pid)
	if err != nil || start == 0 || st == 'Z' || st == 'X' {
		t.Fatalf("Stat(a running child) = %q, %d, %v", st, start, err)
	}
	if Gone(pid) {
		t.Error("a running child reads as gone")
	}
	if !slices.Contains(All(), pid) {
		t.Errorf("All does not list the child %d", pid)
	}
	if slices.Contains(All(), os.Getpid()) {
		t.Error("All lists the calling process")
	}
	// Start times have a resolution of a clock tick, and btime of a second.
	at, err := Started(pid)
	if err != nil || at.Before(begun.Add(-2*time.Second)) || at.After(time.Now().Add(2*time.Second)) {
		t.Errorf("Started = %s, %v; want about %s", at, err, begun)
	}
	if rss, err := RSS(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("RSS of this process = %d, %v", rss, err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !Gone(pid) {
		t.Error("a reaped child does not read as gone")
	}
}

// A shim's socket is where containerd puts it: sha256 of
// <address>/<namespace>/<id> under the machine-wide root.
func TestShimSocketPath(t *testing.T) {
	got := shimSocketPath("/run/containerd/containerd.sock", "k8s.io", "abc")
	if want := "/run/containerd/s/a99a1752d3a0fadfb1f869026f16760475df03a572e20f4ccea9e6c1e5470b72"; got != want {
		t.Errorf("shim socket %s, want %s", got, want)
	}
	if shimSocketPath("/a", "k8s.io", "abc") == got {
		t.Error("two containerd addresses give one shim socket")
	}
}
