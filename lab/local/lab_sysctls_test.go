//go:build lab

package local

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/sysctl"
)

// TestSysctlsRestoredByTheLastLabDown: two labs up, the first one down
// leaves the values the second needs; the last one down restores the
// machine's originals.
func TestSysctlsRestoredByTheLastLabDown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat(sysctl.Register); err == nil {
		t.Skip("another lab is up on this machine")
	}
	before := machineSysctls(t)
	var dirs []string
	for _, n := range []string{"a", "b"} {
		d := filepath.Join(t.TempDir(), n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(layout.State(d).Record(), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			_ = sysctl.Release(d)
		}
	})
	for _, d := range dirs {
		if err := sysctl.Acquire(d); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := sysctl.Read("kernel.panic"); v != sysctl.Kubelet["kernel.panic"] {
		t.Fatalf("kernel.panic is %s while labs are up", v)
	}
	if err := sysctl.Release(dirs[0]); err != nil {
		t.Fatal(err)
	}
	if v, _ := sysctl.Read("kernel.panic"); v != sysctl.Kubelet["kernel.panic"] {
		t.Errorf("kernel.panic is %s after the first of two labs went down", v)
	}
	if err := sysctl.Release(dirs[1]); err != nil {
		t.Fatal(err)
	}
	after := machineSysctls(t)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %s before, %s after the last lab went down", k, v, after[k])
		}
	}
	if _, err := os.Stat(sysctl.Register); err == nil {
		t.Error("the register outlived the last lab")
	}
}
