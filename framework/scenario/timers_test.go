package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/timers"
)

// The scenario package's tests link no backend (see
// TestOpenLabFromEnvSaysWhatIsWrong): what TimersFromEnv reads through a
// backend is tested by the suites, which link them all. Here, what needs
// none.
func TestTimersFromEnvWithoutABackend(t *testing.T) {
	t.Setenv(EnvLabs, "")
	t.Setenv(EnvPool, "")
	t.Setenv(EnvLab, "")
	p, err := TimersFromEnv()
	if want, _ := timers.Get(timers.KubernetesDefaults); err != nil || p != want.Timers() {
		t.Errorf("no lab: %+v %v, want kubernetes-defaults' timers", p, err)
	}
	dir := t.TempDir()
	t.Setenv(EnvLab, filepath.Join(dir, "missing.yaml"))
	if _, err := TimersFromEnv(); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("a missing lab file: err %v, want one naming it", err)
	}
	file := filepath.Join(dir, "x.yaml")
	if err := os.WriteFile(file, []byte("name: x\nkind: local\nlab: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvLab, file)
	if _, err := TimersFromEnv(); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "links no backend") {
		t.Errorf("a lab file of a kind no backend linked serves: err %v, want one naming the file and the missing backend", err)
	}
}

// The node-fault window of both profiles, as the suites that size their
// windows from it used them before it moved here: moving it changes no
// window.
func TestNodeFaultWindowOfBothProfiles(t *testing.T) {
	for name, want := range map[string]time.Duration{
		timers.Fast:               66 * time.Second,  // grace 12 s, toleration 30 s
		timers.KubernetesDefaults: 450 * time.Second, // grace 50 s, toleration 300 s
	} {
		p, err := timers.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		tm := p.Timers()
		got := NodeFaultWindow(tm)
		if got != want {
			t.Errorf("%s: node-fault window %s, was %s", name, got, want)
		}
		// The window must outlast the notice and the eviction, or a
		// scenario would heal before what it is about can happen.
		if evict := tm.NodeMonitorGracePeriod + tm.UnreachableToleration; got <= evict {
			t.Errorf("%s: node-fault window %s does not outlast notice and eviction (%s)", name, got, evict)
		}
	}
	if got := NodeFaultWindow(lab.Timers{NodeMonitorGracePeriod: time.Second, UnreachableToleration: 10 * time.Second}); got != 13*time.Second {
		t.Errorf("grace 1 s, toleration 10 s: %s, want 13 s (grace + toleration + 2 grace)", got)
	}
}
