// Package supervise starts, signals, stops and finds a local lab's
// services: each one a process in its host's namespaces, detached from
// whoever started it, with its pid and start time in the state dir so any
// later process finds it; and, for the services that are restarted when
// they exit, the keeper that restarts them.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/procs"
)

// Spec is how one service of one host is started.
type Spec struct {
	Host    string
	Service string
	Netns   string // the host's network namespace, entered with nsenter --net
	UTS     string // the file of the host's UTS namespace
	Argv    []string
	Env     []string
	Dir     string
	// RestartDelay, when set, has a keeper (keeper.go) start the service
	// again that long after it exits.
	RestartDelay time.Duration
}

// Supervisor owns the lab's processes. Each is started detached in its own
// session with its pid and start time in the state dir, so that a later
// `lab status` or `lab down` in another process finds it, and a recycled
// pid is never mistaken for it.
type Supervisor struct {
	runDir string // <state>/run/<host>/<service>.pid
	logDir string // <state>/logs/<host>/<service>.log

	mu     sync.Mutex
	reaped map[int]chan struct{} // children of this process, closed when waited for
}

// New is the supervisor of the lab with the given state dir.
func New(stateDir string) *Supervisor {
	return &Supervisor{
		runDir: layout.State(stateDir).RunRoot(),
		logDir: layout.State(stateDir).Logs(),
		reaped: map[int]chan struct{}{},
	}
}

func (s *Supervisor) pidFile(host, service string) string {
	return filepath.Join(s.runDir, host, service+".pid")
}

// LogFile is where a service's output goes.
func (s *Supervisor) LogFile(host, service string) string {
	return filepath.Join(s.logDir, host, service+".log")
}

// processRecord is what a pid file holds.
type processRecord struct {
	pid       int
	startTime uint64 // clock ticks since boot, /proc/<pid>/stat field 22
}

func readRecord(path string) (processRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return processRecord{}, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return processRecord{}, fmt.Errorf("pid file %s: malformed %q", path, b)
	}
	pid, err1 := strconv.Atoi(f[0])
	st, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return processRecord{}, fmt.Errorf("pid file %s: malformed %q", path, b)
	}
	return processRecord{pid: pid, startTime: st}, nil
}

// Process states as ServiceState reports them.
const (
	StateRunning = "running"
	StateFrozen  = "frozen"
	StateStopped = "stopped"
	StateExited  = "exited"
)

// Lookup returns the pid of a service and its state. A pid file whose
// process is gone or is another process reads as exited.
func (s *Supervisor) Lookup(host, service string) (int, string) {
	rec, err := readRecord(s.pidFile(host, service))
	if err != nil {
		return 0, StateStopped
	}
	st, start, err := procs.Stat(rec.pid)
	if err != nil || start != rec.startTime {
		return 0, StateExited
	}
	switch st {
	case 'Z', 'X', 'x':
		return rec.pid, StateExited
	case 'T', 't':
		return rec.pid, StateFrozen
	default:
		return rec.pid, StateRunning
	}
}

// Start starts a service unless it already runs. A service with a
// restart delay is started under its keeper; while the keeper runs, the
// keeper restarts the service and start only waits for that, so there is
// never a second copy.
func (s *Supervisor) Start(p Spec) (int, error) {
	if pid, st := s.Lookup(p.Host, p.Service); st == StateRunning || st == StateFrozen {
		return pid, nil
	}
	kept := p.RestartDelay > 0
	if _, ok := s.Keeper(p.Host, p.Service); ok && kept {
		return s.WaitKept(p.Host, p.Service, p.RestartDelay+10*time.Second)
	}
	for _, d := range []string{filepath.Dir(s.pidFile(p.Host, p.Service)), filepath.Dir(s.LogFile(p.Host, p.Service))} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, fmt.Errorf("starting %s on %s: %w", p.Service, p.Host, err)
		}
	}
	logf, err := os.OpenFile(s.LogFile(p.Host, p.Service), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("starting %s on %s: log: %w", p.Service, p.Host, err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "---- %s starting: %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(p.Argv, " "))

	// nsenter execs the service in place, so its pid is the service's.
	// `ip netns exec` is not used: it makes a private mount namespace,
	// hiding kubelet's volume mounts from runc.
	argv := append([]string{"--net=" + layout.NetnsPath(p.Netns), "--uts=" + p.UTS, "--"}, p.Argv...)
	if kept {
		argv = append([]string{"--net=" + layout.NetnsPath(p.Netns), "--uts=" + p.UTS, "--"}, s.keeperArgv(p)...)
		// The keeper writes the pid file; an old one must not be taken
		// for the new process.
		if err := os.Remove(s.pidFile(p.Host, p.Service)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("starting %s on %s: %w", p.Service, p.Host, err)
		}
	}
	cmd := exec.Command("nsenter", argv...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = p.Dir
	cmd.Env = append(baseEnv(), p.Env...)
	// A new session: the service outlives this process and its terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s on %s: %w", p.Service, p.Host, err)
	}
	pid := cmd.Process.Pid
	done := make(chan struct{})
	s.mu.Lock()
	s.reaped[pid] = done
	s.mu.Unlock()
	go func() {
		// Reap our own children so they do not linger as zombies while
		// this process lives; after it exits, init does.
		_ = cmd.Wait()
		close(done)
	}()
	_, start, err := procs.Stat(pid)
	if err != nil {
		return 0, fmt.Errorf("starting %s on %s: it exited at once (see %s)", p.Service, p.Host, s.LogFile(p.Host, p.Service))
	}
	rec := fmt.Sprintf("%d %d\n", pid, start)
	if kept {
		if err := os.WriteFile(s.keeperFile(p.Host, p.Service), []byte(rec), 0o644); err != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return 0, fmt.Errorf("starting %s on %s: recording its keeper's pid: %w", p.Service, p.Host, err)
		}
		return s.WaitKept(p.Host, p.Service, 10*time.Second)
	}
	if err := os.WriteFile(s.pidFile(p.Host, p.Service), []byte(rec), 0o644); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return 0, fmt.Errorf("starting %s on %s: recording pid: %w", p.Service, p.Host, err)
	}
	return pid, nil
}

// Signal sends sig to a running or frozen service.
func (s *Supervisor) Signal(host, service string, sig syscall.Signal) error {
	pid, st := s.Lookup(host, service)
	if st != StateRunning && st != StateFrozen {
		return fmt.Errorf("signal %v to %s on %s: it is %s", sig, service, host, st)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal %v to %s on %s (pid %d): %w", sig, service, host, pid, err)
	}
	// Signals arrive asynchronously; wait until a stop or continue shows,
	// so that a state read right after Signal returns is already true.
	var want func(string) bool
	switch sig {
	case syscall.SIGSTOP, syscall.SIGTSTP:
		want = func(st string) bool { return st == StateFrozen }
	case syscall.SIGCONT:
		want = func(st string) bool { return st != StateFrozen }
	default:
		return nil
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, st := s.Lookup(host, service); want(st) {
			return nil
		}
	}
	return fmt.Errorf("signal %v to %s on %s (pid %d): its state did not change", sig, service, host, pid)
}

// Stop ends a service: its keeper first, so nothing restarts it, then
// SIGTERM (and SIGCONT, so a frozen one sees it), SIGKILL after grace. Its
// pid file is removed once it is gone.
func (s *Supervisor) Stop(ctx context.Context, host, service string, grace time.Duration) error {
	kpid, keeperGone := s.endKeeper(ctx, host, service)
	if err := s.stopProcess(ctx, host, service, grace); err != nil {
		return err
	}
	if !keeperGone {
		if err := s.endKeeperHard(ctx, host, service, kpid); err != nil {
			return err
		}
		// What it started before it ended.
		if err := s.stopProcess(ctx, host, service, grace); err != nil {
			return err
		}
	}
	return removeIfExists(s.keeperFile(host, service))
}

func (s *Supervisor) stopProcess(ctx context.Context, host, service string, grace time.Duration) error {
	pid, st := s.Lookup(host, service)
	if st == StateRunning || st == StateFrozen {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		_ = syscall.Kill(pid, syscall.SIGCONT)
		if !s.waitGone(ctx, pid, grace) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if !s.waitGone(ctx, pid, 10*time.Second) {
				return fmt.Errorf("stopping %s on %s: pid %d survived SIGKILL", service, host, pid)
			}
		}
	}
	if err := os.Remove(s.pidFile(host, service)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stopping %s on %s: %w", service, host, err)
	}
	return nil
}

// Kill sends SIGKILL at once, as a power cut does, to the service's
// keeper and then to the service.
func (s *Supervisor) Kill(ctx context.Context, host, service string) error {
	if kpid, ok := s.Keeper(host, service); ok {
		_ = syscall.Kill(kpid, syscall.SIGKILL)
		if !s.waitGone(ctx, kpid, 10*time.Second) {
			return fmt.Errorf("killing the keeper of %s on %s: pid %d survived SIGKILL", service, host, kpid)
		}
	}
	if err := removeIfExists(s.keeperFile(host, service)); err != nil {
		return err
	}
	pid, st := s.Lookup(host, service)
	if st == StateRunning || st == StateFrozen {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !s.waitGone(ctx, pid, 10*time.Second) {
			return fmt.Errorf("killing %s on %s: pid %d survived SIGKILL", service, host, pid)
		}
	}
	if err := os.Remove(s.pidFile(host, service)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("killing %s on %s: %w", service, host, err)
	}
	return nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// waitGone waits until pid has exited (reaped, or a zombie of another
// parent, or gone).
func (s *Supervisor) waitGone(ctx context.Context, pid int, d time.Duration) bool {
	s.mu.Lock()
	done := s.reaped[pid]
	s.mu.Unlock()
	deadline := time.Now().Add(d)
	for {
		if done != nil {
			select {
			case <-done:
				return true
			default:
			}
		} else if procs.Gone(pid) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// baseEnv is the environment every service starts with: the machine's
// PATH and nothing of the caller's, so a service behaves the same whoever
// started the lab.
func baseEnv() []string {
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
	}
}
