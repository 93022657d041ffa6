package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/faultline/faultline/lab/local/binpaths"
	"github.com/faultline/faultline/lab/local/internal/components"
	"github.com/faultline/faultline/lab/local/internal/procs"
	"github.com/faultline/faultline/lab/local/internal/state"
	"github.com/faultline/faultline/lab/local/internal/sysctl"
)

// Up builds the lab from nothing, boots it in order, waits until every
// node is Ready, and takes the cold snapshot: the whole fleet stopped, one
// copy of every host's data, then started again.
func (l *Lab) Up(ctx context.Context) error {
	// A socket path too long to listen on is a fault of the lab file
	// (its stateDir), named before anything else and before anything is
	// touched: the components would start and fail one by one. New opens
	// such a lab all the same, so that one already up can be brought down.
	if err := l.comp.CheckSocketPaths(); err != nil {
		return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
	}
	if err := requireRoot("lab up"); err != nil {
		return err
	}
	l.began()
	// Name missing binaries, images and a taken address plan before
	// touching anything.
	if _, err := binpaths.Locate(l.cfg); err != nil {
		return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
	}
	l.logf("building node images")
	if _, err := l.comp.BuildImages(); err != nil {
		return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
	}
	if l.comp.AgentsAsPods() {
		if _, err := l.comp.AgentImages(); err != nil {
			return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
		}
	}
	if !l.asked.Equal(l.cfg.Kubernetes) {
		return fmt.Errorf("lab %s up: the lab is up with Kubernetes %s, etcd %s, timer profile %s; bring it down before bringing it up with %s, %s, %s",
			l.cfg.Name, l.cfg.Kubernetes.Version, l.cfg.Kubernetes.EtcdVersion, l.cfg.Kubernetes.TimerProfile,
			l.asked.Version, l.asked.EtcdVersion, l.asked.TimerProfile)
	}
	if !state.Exists(l.cfg.StateDir) {
		if err := checkCoexistsWithUp(l.cfg); err != nil {
			return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
		}
		if err := l.net.CheckFree(); err != nil {
			return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
		}
	}
	if _, err := l.comp.Env(ctx); err != nil {
		return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
	}
	t0 := time.Now()
	l.logf("building hosts")
	if err := l.provisionHosts(ctx); err != nil {
		return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
	}
	if err := l.comp.RecordImages(); err != nil {
		return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
	}
	t1 := time.Now()
	l.timings.Provision = t1.Sub(t0)
	if err := l.boot(ctx, t1, false); err != nil {
		return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
	}
	t2 := time.Now()
	l.timings.ColdBoot = t2.Sub(t1)
	if rec := l.loadOrNewRecord(); rec.Snapshot {
		return nil
	}
	l.logf("every node Ready; taking the cold snapshot")
	if err := l.takeColdSnapshot(ctx); err != nil {
		return fmt.Errorf("lab %s up: cold snapshot: %w", l.cfg.Name, err)
	}
	l.logf("up")
	l.timings.Snapshot = time.Since(t2)
	return nil
}

// boot starts every service phase by phase (etcd, API servers, the rest of
// the control plane, runtimes, node agents), each phase on every host at
// once and ready before the next, then waits for a healthy cluster.
//
// restored says the hosts' data comes from the cold snapshot (a reset, or
// the boot that follows taking it): etcd then holds the addons, so none is
// created, and what nothing in the order needs is not waited for: the
// container runtimes start beside the API servers (they ask nothing of
// the cluster), and the nodes' kubelets and agents beside the
// controller-managers and schedulers (they need the API servers only), as
// a fleet powered on together comes up. The first boot of lab up keeps the
// strict order: its node agents need the RBAC the addons create.
func (l *Lab) boot(ctx context.Context, since time.Time, restored bool) error {
	if _, err := l.comp.Env(ctx); err != nil {
		return err
	}
	if err := sysctl.Acquire(l.cfg.StateDir); err != nil {
		return err
	}
	stages := [][]components.Phase{
		{components.PhaseSSH}, {components.PhaseEtcd}, {components.PhaseAPIServer},
		{components.PhaseControlPlane}, {components.PhaseRuntime}, {components.PhaseNode},
	}
	if restored {
		stages = [][]components.Phase{
			{components.PhaseSSH}, {components.PhaseEtcd},
			{components.PhaseAPIServer, components.PhaseRuntime},
			{components.PhaseControlPlane, components.PhaseNode},
		}
	}
	for _, stage := range stages {
		errs := make([]error, len(stage))
		var wg sync.WaitGroup
		for i, p := range stage {
			wg.Go(func() { errs[i] = l.bootPhase(ctx, p, restored) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	l.logf("waiting for every node Ready and the leader leases")
	return l.waitHealthy(ctx, since)
}

// bootPhase starts every host's services of one phase and waits until
// they are ready; after the control plane of a first boot, it creates the
// addons, and after the runtimes it loads the node images where they are
// missing.
func (l *Lab) bootPhase(ctx context.Context, p components.Phase, restored bool) error {
	l.logf("starting %s", p)
	if err := l.forEachHost(func(h *Host) error { return h.startServices(ctx, p) }); err != nil {
		return err
	}
	l.logf("%s ready", p)
	if p == components.PhaseControlPlane && !restored {
		// Before the node agents start: they need their RBAC.
		if err := l.applyAddons(ctx); err != nil {
			return err
		}
	}
	if p == components.PhaseRuntime {
		return l.forEachHost(func(h *Host) error {
			if h.node == nil {
				return nil
			}
			return l.comp.ImportImages(ctx, h.component())
		})
	}
	return nil
}

// waitHealthy waits until every node is Ready with a kubelet that renewed
// its lease since the given moment and both leader leases are held.
func (l *Lab) waitHealthy(ctx context.Context, since time.Time) error {
	if err := l.waitNodesReady(ctx, since, 3*time.Minute); err != nil {
		return err
	}
	if err := l.labelControlPlaneNodes(ctx); err != nil {
		return err
	}
	if err := l.waitLeaders(ctx, since, time.Minute); err != nil {
		return err
	}
	l.logf("leader leases held")
	if err := l.waitAgentPods(ctx); err != nil {
		return err
	}
	return nil
}

// WaitHealthy waits, as Up and Reset do before they return, until every
// node is Ready with a kubelet that renewed its lease since the call and
// both leader leases are held: the cluster of a lab that is up, checked
// live rather than taken from its conditions.
func (l *Lab) WaitHealthy(ctx context.Context) error {
	if err := l.waitHealthy(ctx, time.Now()); err != nil {
		return fmt.Errorf("lab %s: %w", l.cfg.Name, err)
	}
	return nil
}

// forEachHost runs f on every host at once and joins the errors.
func (l *Lab) forEachHost(f func(h *Host) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(l.hosts))
	for i, h := range l.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(h)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopFleet stops every host. Gracefully, as a fleet shut down in order
// would: node agents, then the control plane, API servers before etcd;
// otherwise at once, as pulling the power does. Then whatever still runs
// (containers, shims) is killed and what RAM held is dropped.
func (l *Lab) stopFleet(ctx context.Context, graceful bool) error {
	for _, name := range components.StopOrder {
		if !graceful {
			break
		}
		if err := l.forEachHost(func(h *Host) error {
			s, err := h.service(name)
			if err != nil {
				return nil // the host does not run it
			}
			return l.sup.Stop(ctx, h.cfg.Name, s.Name, s.StopGrace)
		}); err != nil {
			return err
		}
	}
	if err := l.forEachHost(func(h *Host) error {
		if err := procs.KillHost(ctx, l.cfg.Name, h.cfg.Name); err != nil {
			return err
		}
		for _, s := range h.services() {
			if err := l.sup.Kill(ctx, h.cfg.Name, s.Name); err != nil {
				return err
			}
		}
		h.ssh.Disconnect()
		return l.dropVolatile(h.cfg.Name)
	}); err != nil {
		return err
	}
	// The volumes' images are copied or restored next: nothing may hold
	// them.
	return clearVolumes(ctx, l.cfg)
}

// rebuildHostNetwork makes a stopped host's namespace and links anew.
func (l *Lab) rebuildHostNetwork(ctx context.Context, h *Host) error {
	if err := procs.KillHost(ctx, l.cfg.Name, h.cfg.Name); err != nil {
		return err
	}
	if err := l.net.RemoveHost(h.cfg.Name); err != nil {
		return fmt.Errorf("host %s: %w", h.cfg.Name, err)
	}
	if err := l.net.CreateHost(h.hostNet()); err != nil {
		return fmt.Errorf("host %s: %w", h.cfg.Name, err)
	}
	h.ssh.Disconnect()
	return nil
}

// snapshotted is what the cold snapshot holds: every host's data and the
// certificates.
func (l *Lab) snapshotted() []string { return []string{"hosts", "pki"} }

func copyTree(ctx context.Context, src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("clearing %s: %w", dst, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", "--reflink=auto", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copying %s to %s: %v: %s", src, dst, err, out)
	}
	return nil
}

// takeColdSnapshot stops the whole fleet, copies every host's data at that
// one moment, and boots again. The record says a snapshot exists only once
// the copy is complete.
func (l *Lab) takeColdSnapshot(ctx context.Context) error {
	// A clean shutdown, so that the copy holds what every component
	// wrote on its way down.
	l.logf("stopping the fleet")
	if err := l.stopFleet(ctx, true); err != nil {
		return err
	}
	l.logf("copying")
	tmp := l.dirs.Cold() + ".new"
	for _, d := range l.snapshotted() {
		if err := copyTree(ctx, filepath.Join(l.cfg.StateDir, d), filepath.Join(tmp, d)); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(l.dirs.Cold()); err != nil {
		return err
	}
	if err := os.Rename(tmp, l.dirs.Cold()); err != nil {
		return err
	}
	rec := l.loadOrNewRecord()
	rec.Snapshot = true
	if err := state.Save(l.cfg.StateDir, rec); err != nil {
		return err
	}
	return l.boot(ctx, time.Now(), true)
}

// Reset stops everything, restores every host from the one cold copy,
// boots in order and waits until every node is Ready and the control plane
// healthy.
func (l *Lab) Reset(ctx context.Context) error {
	if err := requireRoot("lab reset"); err != nil {
		return err
	}
	rec, err := state.Load(l.cfg.StateDir)
	if err != nil {
		return fmt.Errorf("lab %s reset: is it up? %w", l.cfg.Name, err)
	}
	if !rec.Snapshot {
		return fmt.Errorf("lab %s reset: no cold snapshot (the lab's up did not finish; run lab down and lab up)", l.cfg.Name)
	}
	since := time.Now()
	l.began()
	// Everything running now is thrown away with its data, as a VM
	// revert does: no need to stop it gently.
	l.logf("stopping the fleet")
	if err := l.stopFleet(ctx, false); err != nil {
		return fmt.Errorf("lab %s reset: %w", l.cfg.Name, err)
	}
	l.endClockSkews()
	for _, h := range l.hosts {
		// Every host's network as at boot, powered-off hosts included,
		// as a VM revert followed by power-on gives.
		if err := l.rebuildHostNetwork(ctx, h); err != nil {
			return fmt.Errorf("lab %s reset: %w", l.cfg.Name, err)
		}
	}
	l.logf("restoring the cold snapshot")
	for _, d := range l.snapshotted() {
		if err := copyTree(ctx, filepath.Join(l.dirs.Cold(), d), filepath.Join(l.cfg.StateDir, d)); err != nil {
			return fmt.Errorf("lab %s reset: restoring: %w", l.cfg.Name, err)
		}
	}
	if err := l.boot(ctx, since, true); err != nil {
		return fmt.Errorf("lab %s reset: %w", l.cfg.Name, err)
	}
	return nil
}
