package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/csidriver"
	"github.com/faultline/faultline/lab/local/internal/cgroups"
	"github.com/faultline/faultline/lab/local/internal/components"
	"github.com/faultline/faultline/lab/local/internal/hostns"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/mounts"
	"github.com/faultline/faultline/lab/local/internal/procs"
	"github.com/faultline/faultline/lab/local/internal/state"
	"github.com/faultline/faultline/lab/local/internal/supervise"
	"github.com/faultline/faultline/lab/local/internal/sysctl"
)

// clearVolumes makes sure the CSI drivers' volumes hold nothing in the
// kernel once the lab's mounts are gone: no mount of a volume anywhere
// (a bind mount outside the state dir is unmounted here) and no loop
// device over an image (they detach at their last close, so they are
// waited for a few seconds). A lab with no storage host has none.
func clearVolumes(ctx context.Context, cfg *lab.Config) error {
	export := components.ExportPath(cfg, layout.State(cfg.StateDir))
	if export == "" {
		return nil
	}
	st := csidriver.Store{Root: export}
	left, err := csidriver.FindLeftovers(st)
	if err != nil {
		return fmt.Errorf("volumes of %s: %w", export, err)
	}
	if len(left.Mounts) > 0 {
		if err := mounts.UnmountAll(left.Mounts...); err != nil {
			return fmt.Errorf("volumes of %s: %w", export, err)
		}
	}
	err = lab.WaitFor(ctx, "the volumes' loop devices to detach", 10*time.Second, 200*time.Millisecond, func(context.Context) (bool, error) {
		left, err = csidriver.FindLeftovers(st)
		return err == nil && left.Empty(), err
	})
	if err != nil {
		return fmt.Errorf("volumes of %s: %s left: %w", export, left, err)
	}
	return nil
}

// teardown removes every trace of a lab: processes, mounts, namespaces,
// links, bridges, iptables rules, cgroups, machine-wide sysctls and the
// state dir. Each step runs even when an earlier one failed; all failures
// are returned together.
func teardown(ctx context.Context, cfg *lab.Config, rec *state.Record) error {
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	sup := supervise.New(cfg.StateDir)
	for _, h := range cfg.Hosts {
		// Stop the recorded services politely first (API servers before
		// etcd, as a clean shutdown needs), then kill whatever is left.
		for _, name := range components.StopOrder {
			note(sup.Kill(ctx, h.Name, name))
		}
	}
	for _, h := range cfg.Hosts {
		note(procs.KillHost(ctx, cfg.Name, h.Name))
	}
	// Its sessions went with the hosts' processes.
	note(removeSudoUser(ctx, cfg.Name))
	var nsPaths []string
	for _, h := range cfg.Hosts {
		nsPaths = append(nsPaths, layout.NetnsPath(layout.NetnsName(cfg.Name, h.Name)))
	}
	note(mounts.UnmountAll(append([]string{cfg.StateDir}, nsPaths...)...))
	note(clearVolumes(ctx, cfg))
	for _, h := range cfg.Hosts {
		ns := layout.NetnsName(cfg.Name, h.Name)
		// Unmounted above; the namespace ends with its last process.
		if err := os.Remove(layout.NetnsPath(ns)); err != nil && !errors.Is(err, os.ErrNotExist) {
			note(fmt.Errorf("deleting network namespace %s: %w", ns, err))
		}
	}
	note(hostns.ReleaseNetnsDir())
	note(hostns.DeleteLabLinks(cfg.Name))
	note(hostns.DeleteIptablesRules(ctx, cfg.Name))
	for _, h := range cfg.Hosts {
		note(cgroups.RemoveNode(layout.CgroupName(cfg.Name, h.Name)))
	}
	note(removeContainerLogLinks(cfg.StateDir))
	if rec != nil {
		// Records of older labs hold their own originals.
		note(sysctl.Restore(rec.Sysctls))
	}
	note(sysctl.Release(cfg.StateDir))
	if rec != nil {
		note(removeCreatedShared(cfg.Name, rec.CreatedShared))
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(cfg.StateDir); err != nil {
			note(fmt.Errorf("removing state dir: %w", err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("lab %s down: %w", cfg.Name, errors.Join(errs...))
	}
	return nil
}

// removeCreatedShared removes the machine-wide directories the lab's
// components created, but only when nothing else could be using them: no
// other lab's namespace exists and no kubelet, containerd or shim runs.
func removeCreatedShared(labName string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	if ents, err := os.ReadDir(layout.NetnsDir); err == nil && len(ents) > 0 {
		return nil
	}
	for _, pid := range procs.All() {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue
		}
		switch b := filepath.Base(exe); {
		case b == "kubelet", b == "containerd", strings.HasPrefix(b, "containerd-shim"):
			return nil
		}
	}
	var errs []error
	for _, p := range paths {
		if mps, err := mounts.Under(p); err != nil || len(mps) > 0 {
			continue // never remove through a mount
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// containerLogDir is kubelet's fixed directory of container log links; it
// is shared by every kubelet on the machine.
const containerLogDir = "/var/log/containers"

// removeContainerLogLinks removes the links kubelet made in the shared
// container log directory that point into this lab's state dir.
func removeContainerLogLinks(stateDir string) error {
	ents, err := os.ReadDir(containerLogDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading %s: %w", containerLogDir, err)
	}
	for _, e := range ents {
		p := filepath.Join(containerLogDir, e.Name())
		t, err := os.Readlink(p)
		if err != nil {
			continue
		}
		if strings.HasPrefix(t, strings.TrimSuffix(stateDir, "/")+"/") {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("removing %s: %w", p, err)
			}
		}
	}
	return nil
}
