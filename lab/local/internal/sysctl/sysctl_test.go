package sysctl

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// useRegister points the register at a directory of the test's own.
func useRegister(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	oldReg, oldLock := Register, registerLock
	Register, registerLock = filepath.Join(dir, "sysctls.json"), filepath.Join(dir, "sysctls.lock")
	t.Cleanup(func() { Register, registerLock = oldReg, oldLock })
}

// The register keeps the first originals it was given and the labs in
// it, and is removed with its last lab.
func TestRegisterKeepsOriginalsUntilTheLastLabLeaves(t *testing.T) {
	useRegister(t)
	if err := withRegister(func(r *registration) error {
		r.Originals["kernel.panic"] = "0"
		r.Labs = append(r.Labs, "/a", "/b")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := withRegister(func(r *registration) error {
		if r.Originals["kernel.panic"] != "0" || len(r.Labs) != 2 {
			t.Errorf("register read back as %+v", r)
		}
		r.Labs = r.Labs[1:]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(Register); err != nil {
		t.Fatalf("the register went with one of its two labs: %v", err)
	}
	if err := withRegister(func(r *registration) error { r.Labs = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(Register); !os.IsNotExist(err) {
		t.Errorf("the register outlived its last lab: %v", err)
	}
}

// The lab asks for kubelet's values, and for the limits only where the
// machine's are lower.
func TestWantedRaisesLimitsOnly(t *testing.T) {
	want, err := wanted()
	if err != nil {
		t.Skipf("sysctls unreadable here: %v", err)
	}
	for k, v := range Kubelet {
		if want[k] != v {
			t.Errorf("%s: wanted %q, kubelet needs %q", k, want[k], v)
		}
	}
	for k, min := range Minimum {
		cur, err := Read(k)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(cur)
		if _, asked := want[k]; asked != (n < min) {
			t.Errorf("%s is %d, minimum %d: asked to change it: %v", k, n, min, asked)
		}
	}
}
