// Package sysctl sets the machine-wide sysctls a local lab's kubelets need
// and restores the machine's own values once no lab needs them.
package sysctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/faultline/faultline/lab/local/internal/layout"
)

// Kubelet are the machine-wide sysctls kubelet insists on. With protectKernelDefaults
// it refuses to start unless they are already set (instead of setting them
// itself), so the lab presets them and restores the originals at down.
var Kubelet = map[string]string{
	"vm.overcommit_memory":      "1",
	"vm.panic_on_oom":           "0",
	"kernel.panic":              "10",
	"kernel.panic_on_oops":      "1",
	"kernel.keys.root_maxkeys":  "1000000",
	"kernel.keys.root_maxbytes": "25000000",
}

// Minimum are machine-wide limits that many kubelets, containerds
// and kube-proxies on one machine exhaust at their defaults (each takes
// inotify instances; 128 is Debian's default): raised, never lowered.
var Minimum = map[string]int{
	"fs.inotify.max_user_instances": 8192,
	"fs.inotify.max_user_watches":   524288,
}

// Machine-wide sysctls are shared by every lab on the machine, so they are
// tracked in one place: the first lab up records the machine's original
// values, every lab registers itself, and the last one down restores them.
// Per-lab records would restore values another lab had set.
//
// The register lives under /run: it is gone after a reboot, as are the
// values it protects. Register is where it is, for tests that look for it.
var (
	Register     = "/run/faultline/sysctls.json"
	registerLock = "/run/faultline/sysctls.lock"
)

// registration is what the register holds.
type registration struct {
	// Originals are the machine's values before any lab changed them.
	Originals map[string]string `json:"originals"`
	// Labs are the state dirs of the labs relying on the changed values.
	Labs []string `json:"labs"`
}

// withRegister runs f on the register under its lock and writes back
// what f left, removing the register when no lab is left in it.
func withRegister(f func(r *registration) error) error {
	if err := os.MkdirAll(filepath.Dir(Register), 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(registerLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("sysctl register: %w", err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("sysctl register: lock: %w", err)
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	r := &registration{Originals: map[string]string{}}
	if b, err := os.ReadFile(Register); err == nil {
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("sysctl register %s: %w", Register, err)
		}
		if r.Originals == nil {
			r.Originals = map[string]string{}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sysctl register: %w", err)
	}
	if err := f(r); err != nil {
		return err
	}
	if len(r.Labs) == 0 {
		if err := os.Remove(Register); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := Register + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, Register)
}

// wanted are the values the lab needs: kubelet's, and the limits it
// raises where they are lower.
func wanted() (map[string]string, error) {
	want := map[string]string{}
	for k, v := range Kubelet {
		want[k] = v
	}
	for k, min := range Minimum {
		cur, err := Read(k)
		if err != nil {
			return nil, err
		}
		if n, err := strconv.Atoi(cur); err == nil && n >= min {
			continue
		}
		want[k] = strconv.Itoa(min)
	}
	return want, nil
}

// Acquire registers the lab and sets the values it needs,
// recording originals first.
func Acquire(stateDir string) error {
	want, err := wanted()
	if err != nil {
		return err
	}
	return withRegister(func(r *registration) error {
		for k := range want {
			if _, ok := r.Originals[k]; ok {
				continue
			}
			v, err := Read(k)
			if err != nil {
				return err
			}
			r.Originals[k] = v
		}
		if !containsString(r.Labs, stateDir) {
			r.Labs = append(r.Labs, stateDir)
			sort.Strings(r.Labs)
		}
		for k, v := range want {
			if err := write(k, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// Release unregisters the lab; the last lab out restores the
// originals. Labs whose state dir is gone (removed without down) no longer
// count.
func Release(stateDir string) error {
	return withRegister(func(r *registration) error {
		var keep []string
		for _, d := range r.Labs {
			if d == stateDir {
				continue
			}
			if _, err := os.Stat(layout.State(d).Record()); err != nil {
				continue
			}
			keep = append(keep, d)
		}
		r.Labs = keep
		if len(keep) > 0 {
			return nil
		}
		var errs []error
		for k, v := range r.Originals {
			if err := write(k, v); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func path(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

// Read returns a sysctl's value ("kernel.panic").
func Read(key string) (string, error) {
	b, err := os.ReadFile(path(key))
	if err != nil {
		return "", fmt.Errorf("reading sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func write(key, val string) error {
	if err := os.WriteFile(path(key), []byte(val), 0o644); err != nil {
		return fmt.Errorf("setting sysctl %s=%s: %w", key, val, err)
	}
	return nil
}

// Restore writes back the values a record of an older lab holds.
func Restore(orig map[string]string) error {
	var errs []error
	for k, v := range orig {
		if err := write(k, v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
