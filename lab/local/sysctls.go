package local

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

// Machine-wide sysctls are shared by every lab on the machine, so they are
// tracked in one place: the first lab up records the machine's original
// values, every lab registers itself, and the last one down restores them.
// Per-lab records would restore values another lab had set.
//
// The register lives under /run: it is gone after a reboot, as are the
// values it protects.
var (
	sysctlRegister     = "/run/faultline/sysctls.json"
	sysctlRegisterLock = "/run/faultline/sysctls.lock"
)

type sysctlRegistration struct {
	// Originals are the machine's values before any lab changed them.
	Originals map[string]string `json:"originals"`
	// Labs are the state dirs of the labs relying on the changed values.
	Labs []string `json:"labs"`
}

func withSysctlRegister(f func(r *sysctlRegistration) error) error {
	if err := os.MkdirAll(filepath.Dir(sysctlRegister), 0o755); err != nil {
		return err
	}
	lf, err := os.OpenFile(sysctlRegisterLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("sysctl register: %w", err)
	}
	defer lf.Close()
	if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("sysctl register: lock: %w", err)
	}
	defer unix.Flock(int(lf.Fd()), unix.LOCK_UN)
	r := &sysctlRegistration{Originals: map[string]string{}}
	if b, err := os.ReadFile(sysctlRegister); err == nil {
		if err := json.Unmarshal(b, r); err != nil {
			return fmt.Errorf("sysctl register %s: %w", sysctlRegister, err)
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
		if err := os.Remove(sysctlRegister); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := sysctlRegister + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, sysctlRegister)
}

// wantedSysctls are the values the lab needs: kubelet's, and the limits it
// raises where they are lower.
func wantedSysctls() (map[string]string, error) {
	want := map[string]string{}
	for k, v := range kubeletSysctls {
		want[k] = v
	}
	for k, min := range minimumSysctls {
		cur, err := readSysctl(k)
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

// acquireSysctls registers the lab and sets the values it needs,
// recording originals first.
func acquireSysctls(stateDir string) error {
	want, err := wantedSysctls()
	if err != nil {
		return err
	}
	return withSysctlRegister(func(r *sysctlRegistration) error {
		for k := range want {
			if _, ok := r.Originals[k]; ok {
				continue
			}
			v, err := readSysctl(k)
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
			if err := writeSysctl(k, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// releaseSysctls unregisters the lab; the last lab out restores the
// originals. Labs whose state dir is gone (removed without down) no longer
// count.
func releaseSysctls(stateDir string) error {
	return withSysctlRegister(func(r *sysctlRegistration) error {
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
			if err := writeSysctl(k, v); err != nil {
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

func sysctlPath(key string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(key, ".", "/"))
}

func readSysctl(key string) (string, error) {
	b, err := os.ReadFile(sysctlPath(key))
	if err != nil {
		return "", fmt.Errorf("reading sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func writeSysctl(key, val string) error {
	if err := os.WriteFile(sysctlPath(key), []byte(val), 0o644); err != nil {
		return fmt.Errorf("setting sysctl %s=%s: %w", key, val, err)
	}
	return nil
}
