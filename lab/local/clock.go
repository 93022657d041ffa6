package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/procs"
	"github.com/faultline/faultline/lab/local/internal/vdsoskew"
)

// sharedClock says why the local lab cannot step one host's clock.
const sharedClock = "every host of the local lab is a network namespace on one kernel, which has one CLOCK_REALTIME; " +
	"time namespaces offset only CLOCK_MONOTONIC and CLOCK_BOOTTIME, and Go programs (etcd, kubelet, the API server) read the " +
	"wall clock through the vDSO, so LD_PRELOAD tools such as libfaketime never reach them; stepping the machine's clock would " +
	"skew every host and the test runner alike"

// SharesWallClock reports that every host reads the machine's one wall
// clock (lab.SharedWallClock); ProcessClockSkewer emulates a host whose
// clock is off.
func (l *Lab) SharesWallClock() (bool, string) { return true, sharedClock }

var _ lab.ProcessClockSkewer = (*Lab)(nil)

// processSkewEmulation is what every clock-skew run on the local lab
// records.
const processSkewEmulation = "emulated: per-process vDSO skew (every process of the host, containers included, reads CLOCK_REALTIME, gettimeofday and time shifted; " +
	"a process the host starts is shifted within about a second); kernel-stamped times (file mtimes, socket timestamps), " +
	"absolute-time kernel timers, raw clock_gettime system calls and a process's first moments after exec are not skewed"

// ProcessSkewEmulation says what the skew does not reach.
func (l *Lab) ProcessSkewEmulation() string { return processSkewEmulation }

// reconcileEvery is how often a skewed host's processes are looked at
// for ones not yet shifted.
const reconcileEvery = time.Second

// skews is the lab's clock skews in this program: one reconciler per
// skewed host.
type skews struct {
	mu    sync.Mutex
	hosts map[string]*reconciler
	// lastErr is what a host's latest round failed on, for its status.
	lastErr map[string]string
}

type reconciler struct {
	stop chan struct{}
	done chan struct{}
}

// clockSkewFile records, in the state dir, the offset a skewed host's
// processes are kept at. It is what keeps a reconciler going: a heal in
// another program removes it, and the reconciler stops at its next round.
func (l *Lab) clockSkewFile(host string) string {
	return filepath.Join(l.cfg.StateDir, "clock-skew", host)
}

func (l *Lab) readSkew(host string) (time.Duration, bool) {
	b, err := os.ReadFile(l.clockSkewFile(host))
	if err != nil {
		return 0, false
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(b)))
	return d, err == nil
}

// hostProcesses lists a host's processes (its network namespace and its
// cgroup tree: services, shims, containers); a test replaces it.
func (l *Lab) hostProcesses(host string) []int {
	if l.processesOf != nil {
		return l.processesOf(host)
	}
	return procs.OfHost(l.cfg.Name, host)
}

// SkewProcesses shifts every process of the host by offset and keeps
// shifting the ones the host starts, once a second, until
// UnskewProcesses (or the end of this program: `faultline heal` then
// restores what was shifted). It fails if a process of the host cannot be
// shifted at a second try, naming it and why (the processes shifted stay
// so, for the heal the failed inject is followed by); processes that exit
// meanwhile do not count.
func (l *Lab) SkewProcesses(ctx context.Context, host string, offset time.Duration) error {
	if _, err := l.Host(host); err != nil {
		return err
	}
	if err := requireRoot("clock skew"); err != nil {
		return err
	}
	if offset > vdsoskew.MaxOffset || offset < -vdsoskew.MaxOffset {
		return fmt.Errorf("clock skew on %s: offset %s is beyond ±%s", host, offset, vdsoskew.MaxOffset)
	}
	if err := os.MkdirAll(filepath.Dir(l.clockSkewFile(host)), 0o755); err != nil {
		return fmt.Errorf("clock skew on %s: %w", host, err)
	}
	if err := writeFileAtomic(l.clockSkewFile(host), []byte(offset.String()+"\n")); err != nil {
		return fmt.Errorf("clock skew on %s: %w", host, err)
	}
	if _, err := l.shiftHost(host, offset); err != nil {
		// A process caught exec'ing or starting threads as it was
		// stopped can fail once; what fails twice is refused.
		time.Sleep(200 * time.Millisecond)
		if _, err := l.shiftHost(host, offset); err != nil {
			return fmt.Errorf("clock skew on %s: %w", host, err)
		}
	}
	l.skews.mu.Lock()
	defer l.skews.mu.Unlock()
	if l.skews.hosts == nil {
		l.skews.hosts = map[string]*reconciler{}
	}
	if _, running := l.skews.hosts[host]; !running {
		r := &reconciler{stop: make(chan struct{}), done: make(chan struct{})}
		l.skews.hosts[host] = r
		go l.reconcile(host, r)
	}
	return nil
}

// shiftHost shifts every process of the host that does not read offset
// yet, and returns them.
func (l *Lab) shiftHost(host string, offset time.Duration) ([]int, error) {
	var need []int
	for _, pid := range l.hostProcesses(host) {
		off, on, err := vdsoskew.Patched(pid)
		if err != nil {
			if errors.Is(err, vdsoskew.ErrGone) || errors.Is(err, vdsoskew.ErrNotAllowed) {
				continue
			}
			return nil, err
		}
		if !on || off != offset {
			need = append(need, pid)
		}
	}
	var done []int
	var errs []error
	for _, r := range vdsoskew.ShiftAll(need, offset) {
		switch {
		case r.Err == nil:
			done = append(done, r.PID)
		case errors.Is(r.Err, vdsoskew.ErrGone):
		default:
			errs = append(errs, fmt.Errorf("%s: %w", describePID(r.PID), r.Err))
		}
	}
	return done, errors.Join(errs...)
}

// reconcile shifts, each round, the host's processes not shifted yet,
// while the host's skew file says to. A round that finds the file gone
// after shifting undoes what it shifted: a heal that removed the file
// may have looked at the host before.
func (l *Lab) reconcile(host string, r *reconciler) {
	defer close(r.done)
	defer func() {
		l.skews.mu.Lock()
		if l.skews.hosts[host] == r {
			delete(l.skews.hosts, host)
		}
		l.skews.mu.Unlock()
	}()
	tick := time.NewTicker(reconcileEvery)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		offset, ok := l.readSkew(host)
		if !ok {
			return
		}
		shifted, err := l.shiftHost(host, offset)
		if err != nil {
			l.noteSkewError(host, err)
		}
		if _, still := l.readSkew(host); !still {
			vdsoskew.RestoreAll(shifted)
			return
		}
	}
}

// noteSkewError keeps what the last round failed on, for the host's
// status; the next round tries again.
func (l *Lab) noteSkewError(host string, err error) {
	l.skews.mu.Lock()
	defer l.skews.mu.Unlock()
	if l.skews.lastErr == nil {
		l.skews.lastErr = map[string]string{}
	}
	l.skews.lastErr[host] = time.Now().UTC().Format(time.RFC3339) + ": " + err.Error()
}

// stopReconciler ends this program's reconciler of the host, if any, and
// waits for its round to finish.
func (l *Lab) stopReconciler(host string) {
	l.skews.mu.Lock()
	r := l.skews.hosts[host]
	delete(l.skews.hosts, host)
	l.skews.mu.Unlock()
	if r != nil {
		close(r.stop)
		<-r.done
	}
}

// UnskewProcesses removes the host's skew file (which stops a reconciler
// in any program), stops this program's, and restores every process of
// the host whose vDSO says it is shifted, until a look finds none. A
// second look a round later catches a process a reconciler or its helper
// elsewhere shifted while the first ran.
func (l *Lab) UnskewProcesses(ctx context.Context, host string) error {
	if _, err := l.Host(host); err != nil {
		return err
	}
	if err := os.Remove(l.clockSkewFile(host)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("healing clock skew on %s: %w", host, err)
	}
	l.stopReconciler(host)
	if os.Geteuid() != 0 {
		return fmt.Errorf("healing clock skew on %s: %w", host, vdsoskew.ErrUnsupported)
	}
	deadline := time.Now().Add(30 * time.Second)
	for quiet := 0; quiet < 2; {
		n, err := l.restoreHost(host)
		switch {
		case err != nil && time.Now().After(deadline):
			return fmt.Errorf("healing clock skew on %s: %w", host, err)
		case err != nil || n > 0:
			quiet = 0
		default:
			quiet++
		}
		if quiet < 2 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("healing clock skew on %s: %w", host, ctx.Err())
			case <-time.After(reconcileEvery + 200*time.Millisecond):
			}
		}
	}
	return nil
}

// restoreHost restores the host's shifted processes and says how many it
// found.
func (l *Lab) restoreHost(host string) (int, error) {
	var need []int
	for _, pid := range l.hostProcesses(host) {
		off, on, err := vdsoskew.Patched(pid)
		if err == nil && (on || off != 0) {
			need = append(need, pid)
		}
	}
	var errs []error
	for _, r := range vdsoskew.RestoreAll(need) {
		if r.Err != nil && !errors.Is(r.Err, vdsoskew.ErrGone) {
			errs = append(errs, fmt.Errorf("%s: %w", describePID(r.PID), r.Err))
		}
	}
	return len(need), errors.Join(errs...)
}

// endClockSkews forgets every host's skew: the reset that calls it
// restarts every process, so none stays shifted.
func (l *Lab) endClockSkews() {
	for _, h := range l.hosts {
		_ = os.Remove(l.clockSkewFile(h.Name()))
		l.stopReconciler(h.Name())
	}
}

// stopReconcilers ends this program's reconcilers and leaves every skew
// in place, for the heal ledger to heal.
func (l *Lab) stopReconcilers() {
	for _, h := range l.hosts {
		l.stopReconciler(h.Name())
	}
}

// skewStatus is a host's line about its clock skew in `lab status`.
func (l *Lab) skewStatus(host string) string {
	offset, ok := l.readSkew(host)
	if !ok {
		return ""
	}
	msg := fmt.Sprintf("every process's clock skewed by %s (emulated)", offset)
	l.skews.mu.Lock()
	defer l.skews.mu.Unlock()
	if e := l.skews.lastErr[host]; e != "" {
		msg += "; last failure: " + e
	}
	return msg
}

// describePID names a process by its command.
func describePID(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return fmt.Sprintf("pid %d", pid)
	}
	return fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(b)))
}

// writeFileAtomic writes path by renaming a file written beside it.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
