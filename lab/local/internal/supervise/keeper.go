package supervise

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultline/faultline/lab/local/internal/procs"
)

// Some services are restarted when they exit, as systemd or the kubelet
// restart them on a real control plane: kube-controller-manager and
// kube-scheduler exit on purpose when they lose their leader lease and
// count on that restart. The lab's services run detached from whichever
// process started them (a `lab up` that has long exited), so the restart
// needs a process of its own that lives with the service: a keeper. It is
// a small POSIX shell loop, because the hosts are namespaces without an
// init or systemd of their own, and the lab must not depend on the binary
// that started it still existing. The keeper runs inside the host's
// namespaces, so a power-off, which kills every process of the host, ends
// it with the service.
//
// The keeper starts the service as its child, records the child's
// `pid starttime` in the service's pid file (atomically, by rename), and
// waits. When the child exits it appends one line to the restarts file,
// sleeps the delay and starts the service again. SIGTERM ends the loop
// without touching the running child: the supervisor stops the keeper
// first and then the service, so a stopped service stays stopped.
const keeperScript = `pidfile=$1 restarts=$2 delay=$3
shift 3
stop=0
trap 'stop=1' TERM INT HUP
sleeper=
while [ "$stop" = 0 ]; do
	"$@" &
	pid=$!
	start=$(awk '{ sub(/^.*\) /, ""); print $20 }' /proc/$pid/stat 2>/dev/null)
	echo "$pid ${start:-0}" > "$pidfile.new" && mv -f "$pidfile.new" "$pidfile"
	wait $pid
	status=$?
	[ "$stop" = 0 ] || break
	echo "---- $(date -u +%Y-%m-%dT%H:%M:%S.%NZ) pid $pid exited with status $status; restarting in ${delay}s"
	sleep "$delay" &
	sleeper=$!
	wait $sleeper
	sleeper=
	[ "$stop" = 0 ] || break
	echo "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ) $pid $status" >> "$restarts"
done
[ -z "$sleeper" ] || kill $sleeper 2>/dev/null
exit 0
`

// KeeperName is the keeper's $0, so that ps names it.
const KeeperName = "faultline-keeper"

func (s *Supervisor) keeperFile(host, service string) string {
	return filepath.Join(s.runDir, host, service+".keeper.pid")
}

// restartsFile holds one line per restart: when, the pid that had exited
// and its exit status. It lives with the host's /run, so a power cycle or
// a reset starts the count again, as a reboot does.
func (s *Supervisor) restartsFile(host, service string) string {
	return filepath.Join(s.runDir, host, service+".restarts")
}

// keeperArgv wraps a service's argv in its keeper.
func (s *Supervisor) keeperArgv(p Spec) []string {
	secs := strconv.FormatFloat(p.RestartDelay.Seconds(), 'f', -1, 64)
	return append([]string{"/bin/sh", "-c", keeperScript, KeeperName,
		s.pidFile(p.Host, p.Service), s.restartsFile(p.Host, p.Service), secs}, p.Argv...)
}

// Keeper returns the pid of a service's keeper while it runs.
func (s *Supervisor) Keeper(host, service string) (int, bool) {
	rec, err := readRecord(s.keeperFile(host, service))
	if err != nil {
		return 0, false
	}
	st, start, err := procs.Stat(rec.pid)
	if err != nil || start != rec.startTime || st == 'Z' || st == 'X' {
		return 0, false
	}
	return rec.pid, true
}

// WaitKept waits until a kept service runs (or is frozen), for at most d:
// after its keeper started it, or restarted it after an exit.
func (s *Supervisor) WaitKept(host, service string, d time.Duration) (int, error) {
	deadline := time.Now().Add(d)
	for {
		pid, st := s.Lookup(host, service)
		if st == StateRunning || st == StateFrozen {
			return pid, nil
		}
		if _, ok := s.Keeper(host, service); !ok {
			return 0, fmt.Errorf("starting %s on %s: its keeper exited (see %s)", service, host, s.LogFile(host, service))
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("starting %s on %s: its keeper did not start it within %s (it is %s; see %s)", service, host, d, st, s.LogFile(host, service))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// endKeeper ends a service's keeper, if it has one, before the service
// itself is stopped or killed, so nothing starts the service again. It
// returns false when the keeper outlived a polite end: it may have started
// a process it had not recorded yet, which the caller stops after
// endKeeperHard.
func (s *Supervisor) endKeeper(ctx context.Context, host, service string) (int, bool) {
	kpid, ok := s.Keeper(host, service)
	if !ok {
		return 0, true
	}
	_ = syscall.Kill(kpid, syscall.SIGTERM)
	return kpid, s.waitGone(ctx, kpid, 3*time.Second)
}

// endKeeperHard kills a keeper that did not end on SIGTERM.
func (s *Supervisor) endKeeperHard(ctx context.Context, host, service string, kpid int) error {
	if !s.waitGone(ctx, kpid, 2*time.Second) {
		_ = syscall.Kill(kpid, syscall.SIGKILL)
		if !s.waitGone(ctx, kpid, 10*time.Second) {
			return fmt.Errorf("ending the keeper of %s on %s: pid %d survived SIGKILL", service, host, kpid)
		}
	}
	return nil
}

// Restart is one restart of a kept service, as its keeper recorded it.
type Restart struct {
	At         time.Time
	ExitedPID  int
	ExitStatus int
}

// Restarts reads a service's restart record; none is no restart.
func (s *Supervisor) Restarts(host, service string) ([]Restart, error) {
	return readRestarts(s.restartsFile(host, service))
}

func readRestarts(path string) ([]Restart, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Restart
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r, err := parseRestart(sc.Text())
		if err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

func parseRestart(line string) (Restart, error) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return Restart{}, fmt.Errorf("malformed restart record %q", line)
	}
	at, err1 := time.Parse(time.RFC3339Nano, f[0])
	pid, err2 := strconv.Atoi(f[1])
	status, err3 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return Restart{}, fmt.Errorf("malformed restart record %q", line)
	}
	return Restart{At: at.UTC(), ExitedPID: pid, ExitStatus: status}, nil
}
