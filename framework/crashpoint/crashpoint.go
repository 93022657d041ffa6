// Package crashpoint lets a test kill the process at a named moment: at
// every boundary between the phases of a run, and inside every inject and
// heal that changes the lab in more than one step (between the parts of a
// compound fault, between the hosts of a multi-host fault, midway through
// an etcd fork). The environment variable FAULTLINE_CRASH_AT names the
// point; the process sends itself SIGKILL when it reaches it, so nothing
// deferred runs and nothing is flushed, as when the machine's OOM killer
// or an operator's kill -9 ends a run. A test then heals the lab from the
// heal ledger in a fresh process and checks nothing was left behind.
//
// Unset (every production run), Reach is one comparison of the name with
// an empty string: the variable is read once, at the first Reach.
//
// FAULTLINE_CRASH_AT=<point> kills the process the first time it reaches
// the point; <point>#<n> the n-th time (a point inside a loop over hosts or
// parts is reached once per host or part). Every point is declared in
// Points, with what has happened when it is reached; README.md lists them.
package crashpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Env is the environment variable naming the point to crash at.
const Env = "FAULTLINE_CRASH_AT"

// Line is how the line a process writes to stderr just before it kills
// itself begins; a test reads it to know the process died at the point and
// not elsewhere.
const Line = "faultline: crash point "

// armed is the point named in the environment, read once.
type armed struct {
	name string
	nth  int64
	hits atomic.Int64
	err  error
}

var (
	once sync.Once
	arm  *armed
)

func armedPoint() *armed {
	once.Do(func() { arm = parse(os.Getenv(Env)) })
	return arm
}

// parse reads "<point>" or "<point>#<n>".
func parse(v string) *armed {
	a := &armed{nth: 1}
	v = strings.TrimSpace(v)
	if v == "" {
		return a
	}
	name, count, counted := strings.Cut(v, "#")
	a.name = name
	if counted {
		n, err := strconv.ParseInt(count, 10, 64)
		if err != nil || n < 1 {
			a.err = fmt.Errorf("%s=%q: the count after # must be a whole number from 1", Env, v)
			a.name = ""
			return a
		}
		a.nth = n
	}
	if _, ok := Lookup(name); !ok {
		a.err = fmt.Errorf("%s=%q names no declared crash point (see crashpoint.Points)", Env, v)
	}
	return a
}

// Reach kills this process with SIGKILL when the environment names this
// point (and this is the n-th time it is reached, when a count is given).
// Otherwise it returns at once.
func Reach(name string) {
	a := armedPoint()
	if a.name == "" || a.name != name {
		return
	}
	if a.hits.Add(1) != a.nth {
		return
	}
	crash(fmt.Sprintf("%s%s#%d reached: killing this process (SIGKILL)\n", Line, name, a.nth))
}

// crash writes line to stderr and sends this process SIGKILL. The signal
// is delivered before the kill system call returns to a process sending
// it to itself; the goroutine blocks meanwhile, so no step after the
// point runs.
func crash(line string) {
	_, _ = os.Stderr.WriteString(line)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// Check says what is wrong with the environment's crash point: a name no
// point is declared under, or a bad count; nil when it is unset or
// declared. A test calls it before it relies on the point being reached.
func Check() error { return armedPoint().err }

// Armed is the point the environment names ("" when none), with its count.
func Armed() (name string, nth int) {
	a := armedPoint()
	return a.name, int(a.nth)
}
