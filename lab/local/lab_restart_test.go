//go:build lab

package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/binpaths"
	"github.com/faultline/faultline/lab/local/internal/components"
	"github.com/faultline/faultline/lab/local/internal/procs"
	"github.com/faultline/faultline/lab/local/internal/supervise"
	"github.com/faultline/faultline/lab/local/pki"
	"github.com/faultline/faultline/lab/timers"
)

// restartLab is one host running etcd and the control plane, on addresses
// of its own, so the test needs no worker and no other lab's plan.
const restartLab = `name: rst
kind: local
lab: true
kubernetes: {version: v1.36.3, etcdVersion: v3.6.8, timerProfile: fast}
network:
  management: 10.231.53.0/24
  pods: 10.231.152.0/22
  services: 10.250.53.0/24
hosts:
  - {name: cp, roles: [etcd, control-plane], address: 10.231.53.11}
`

// running counts the host's processes whose executable is named exe.
func running(lab, host, exe string) int {
	n := 0
	for _, pid := range procs.OfHost(lab, host) {
		if p, err := os.Readlink("/proc/" + itoa(pid) + "/exe"); err == nil && filepath.Base(p) == exe {
			n++
		}
	}
	return n
}

func serviceOf(ctx context.Context, t *testing.T, h lab.Host, name string) lab.ServiceState {
	t.Helper()
	svcs, err := h.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("%s has no service %s", h.Name(), name)
	return lab.ServiceState{}
}

// provisionWithBins builds the lab's hosts and PKI and gives it the binaries
// bins names, so a test can start services phase by phase without a whole
// lab up.
func provisionWithBins(t *testing.T, ctx context.Context, l *Lab, bins binpaths.Paths) {
	t.Helper()
	if err := l.provisionHosts(ctx); err != nil {
		t.Fatal(err)
	}
	files, err := pki.Ensure(ctx, l.cfg, l.dirs.PKI())
	if err != nil {
		t.Fatal(err)
	}
	prof, err := timers.Get(l.cfg.Kubernetes.TimerProfile)
	if err != nil {
		t.Fatal(err)
	}
	l.comp.SetEnv(&components.Env{Bins: bins, PKI: files, Profile: prof})
}

// TestComponentRestartPolicy boots etcd, an API server, a controller-manager
// and a scheduler, and checks the restart policy of the last two: an exit
// (SIGKILL here, as the Kill fault does) is followed by a restart that is
// recorded; a frozen process is left frozen; a stopped one stays stopped
// until started; starting one whose restart is pending makes no second
// copy; a power-off leaves nothing to restart it; down leaves nothing.
func TestComponentRestartPolicy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bins := filepath.Join(binpaths.CacheDir(), "bins", "kubernetes-"+binpaths.KubernetesVersion)
	etcd := filepath.Join(binpaths.CacheDir(), "bins", "etcd-"+binpaths.EtcdVersion, "etcd")
	for _, b := range []string{etcd, filepath.Join(bins, "kube-apiserver"), filepath.Join(bins, "kube-controller-manager"), filepath.Join(bins, "kube-scheduler")} {
		if _, err := os.Stat(b); err != nil {
			t.Skipf("not built: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "rst.yaml")
	if err := os.WriteFile(path, []byte(restartLab), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := lab.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	c.StateDir = filepath.Join(t.TempDir(), "state")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the keeper check comes after the lab is down.
	t.Cleanup(func() {
		for _, pid := range procs.All() {
			if b, err := os.ReadFile("/proc/" + itoa(pid) + "/cmdline"); err == nil && strings.Contains(string(b), supervise.KeeperName) && strings.Contains(string(b), c.StateDir) {
				t.Errorf("keeper left after down: pid %d", pid)
			}
		}
	})
	downAtCleanup(t, l, c)
	provisionWithBins(t, ctx, l, binpaths.Paths{Etcd: etcd, KubeAPIServer: filepath.Join(bins, "kube-apiserver"),
		KubeControllerManager: filepath.Join(bins, "kube-controller-manager"), KubeScheduler: filepath.Join(bins, "kube-scheduler")})
	hh, err := l.Host("cp")
	if err != nil {
		t.Fatal(err)
	}
	h := hh.(*Host)
	for _, p := range []components.Phase{components.PhaseSSH, components.PhaseEtcd, components.PhaseAPIServer, components.PhaseControlPlane} {
		if err := h.startServices(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	const cm, sched = lab.ServiceControllerManager, lab.ServiceScheduler
	settle := 3 * components.ComponentRestartDelay

	// An exit is followed by a restart, recorded with the pid that exited.
	before := serviceOf(ctx, t, h, cm)
	if before.State != supervise.StateRunning || before.Restarts != 0 || before.Started.IsZero() {
		t.Fatalf("%s before: %+v; want running, no restart, a start time", cm, before)
	}
	killed := time.Now()
	if err := h.Signal(ctx, cm, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var after lab.ServiceState
	if err := lab.WaitFor(ctx, cm+" restarted", components.ComponentRestartDelay+15*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		after = serviceOf(ctx, t, h, cm)
		return after.State == supervise.StateRunning && after.PID != before.PID, nil
	}); err != nil {
		t.Fatal(err)
	}
	if after.Restarts != 1 || after.LastRestart.Before(killed.Add(components.ComponentRestartDelay-time.Second)) || !after.Started.After(before.Started) {
		t.Errorf("%s after SIGKILL: %+v; want one restart at least %s after the kill (%s), a later start than %s", cm, after, components.ComponentRestartDelay, killed.UTC(), before.Started)
	}
	rs, err := l.sup.Restarts("cp", cm)
	if err != nil || len(rs) != 1 || rs[0].ExitedPID != before.PID || rs[0].ExitStatus != 128+int(syscall.SIGKILL) {
		t.Errorf("restart record %+v (%v); want one restart of pid %d, status %d", rs, err, before.PID, 128+int(syscall.SIGKILL))
	}
	if log, err := os.ReadFile(l.sup.LogFile("cp", cm)); err != nil || !strings.Contains(string(log), "pid "+itoa(before.PID)+" exited with status 137; restarting") {
		t.Errorf("the log of %s does not tell of the restart (%v)", cm, err)
	}
	if err := lab.WaitFor(ctx, cm+" healthy after its restart", time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		s, _ := h.service(cm)
		err := s.Ready(ctx, h.lab.comp, h.component())
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}

	// Starting it while its restart is pending (what the Kill fault's
	// heal does) leaves one copy.
	pid := after.PID
	if err := h.Signal(ctx, cm, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := h.StartService(ctx, cm); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle)
	if n := running(c.Name, "cp", "kube-controller-manager"); n != 1 {
		t.Errorf("%d kube-controller-manager processes after a kill and a start; want 1", n)
	}
	if s := serviceOf(ctx, t, h, cm); s.State != supervise.StateRunning || s.PID == pid || s.Restarts != 2 {
		t.Errorf("%s after a kill and a start: %+v; want running under a new pid, two restarts", cm, s)
	}

	// A frozen process is not an exit: it stays frozen, not restarted.
	frozen := serviceOf(ctx, t, h, sched)
	if err := h.Signal(ctx, sched, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle)
	if s := serviceOf(ctx, t, h, sched); s.State != supervise.StateFrozen || s.PID != frozen.PID || s.Restarts != 0 {
		t.Errorf("%s frozen for %s: %+v; want frozen, pid %d, no restart", sched, settle, s, frozen.PID)
	}
	if err := h.Signal(ctx, sched, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	// A stop is not an exit: it stays stopped until started.
	if err := h.StopService(ctx, sched); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle)
	if s := serviceOf(ctx, t, h, sched); s.State != supervise.StateStopped || s.PID != 0 {
		t.Errorf("%s %s after a stop: %+v; want stopped", sched, settle, s)
	}
	if n := running(c.Name, "cp", "kube-scheduler"); n != 0 {
		t.Errorf("%d kube-scheduler processes after a stop; want none", n)
	}
	if _, ok := l.sup.Keeper("cp", sched); ok {
		t.Errorf("the keeper of %s runs after a stop", sched)
	}
	if err := h.StartService(ctx, sched); err != nil {
		t.Fatal(err)
	}
	if s := serviceOf(ctx, t, h, sched); s.State != supervise.StateRunning || s.PID == frozen.PID {
		t.Errorf("%s after a start: %+v; want running under a new pid", sched, s)
	}

	// A power-off ends every process of the host, keepers included, and
	// nothing comes back.
	if err := h.PowerOff(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle)
	if pids := procs.OfHost(c.Name, "cp"); len(pids) != 0 {
		t.Errorf("processes of cp %s after its power-off: %v", settle, pids)
	}
	for _, name := range []string{cm, sched} {
		if s := serviceOf(ctx, t, h, name); s.State == supervise.StateRunning {
			t.Errorf("%s runs after the power-off: %+v", name, s)
		}
	}
}
