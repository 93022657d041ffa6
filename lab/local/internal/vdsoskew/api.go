package vdsoskew

import (
	"errors"
	"fmt"
	"time"
)

// Errors a caller can tell apart with errors.Is. Every refusal leaves the
// process as it was.
var (
	// ErrUnsupported: not linux/amd64, not root, or a process whose vDSO
	// is not a 64-bit x86 one.
	ErrUnsupported = errors.New("vDSO clock skew is not supported")
	// ErrUnexpectedPrologue: a function's first instructions are not
	// among those this package knows how to move (another kernel or
	// compiler); patching it would be a guess.
	ErrUnexpectedPrologue = errors.New("unexpected vDSO prologue")
	// ErrUnexpectedVDSO: the vDSO's layout is not one this package can
	// prove the patch safe for (no room after the image, a branch into the
	// bytes the patch would replace, bytes that are neither the original
	// nor the patch, a skew stub of another layout).
	ErrUnexpectedVDSO = errors.New("unexpected vDSO")
	// ErrTraced: another tracer (a debugger, strace, another injector) is
	// attached to the process.
	ErrTraced = errors.New("the process is already traced")
	// ErrGone: the process does not exist or exited during the operation.
	ErrGone = errors.New("no such process")
	// ErrNotAllowed: a process this package never patches (the caller
	// itself, the helper's parent, pid 1 or a kernel thread).
	ErrNotAllowed = errors.New("the process may not be patched")
)

// MaxOffset is the largest skew, either way, the stub's data word holds.
const MaxOffset = (1<<31 - 1) * time.Second

// Patch is what Shift did to one process.
type Patch struct {
	PID int `json:"pid"`
	// Offset is what CLOCK_REALTIME in the process now reads ahead of the
	// machine's clock (negative: behind).
	Offset time.Duration `json:"offset"`
	// Functions are the vDSO functions whose entry jumps to the stub.
	Functions []string `json:"functions"`
	// Skipped are the optional functions left alone, with why.
	Skipped map[string]string `json:"skipped,omitempty"`
	// Redirected is false when every entry was redirected already and
	// Shift only set the offset.
	Redirected bool `json:"redirected"`
	// Threads is how many threads were stopped while the process was
	// written.
	Threads int `json:"threads"`
	// Moved counts the thread positions (registers or saved signal
	// contexts) that lay on an instruction the patch replaced and were
	// moved to the same instruction in the stub's copy.
	Moved int `json:"moved"`
}

// Result is the outcome for one process of ShiftAll or RestoreAll.
type Result struct {
	PID   int
	Patch Patch
	Err   error
}

// Shift makes every thread of the process read CLOCK_REALTIME (and
// CLOCK_REALTIME_COARSE, gettimeofday and time) offset from the machine's
// clock. On a process shifted already it only sets the new offset.
func Shift(pid int, offset time.Duration) (Patch, error) {
	r := ShiftAll([]int{pid}, offset)[0]
	return r.Patch, r.Err
}

// ShiftAll shifts each process, one after another, in one helper.
func ShiftAll(pids []int, offset time.Duration) []Result {
	if offset > MaxOffset || offset < -MaxOffset {
		return each(pids, fmt.Errorf("offset %s is beyond the ±%s the stub holds", offset, MaxOffset))
	}
	return run(opShift, pids, offset)
}

// Restore puts the original entry bytes back and the offset to zero. It
// needs nothing but the process: the stub in the vDSO records what it
// replaced. A process never patched is left alone and is no error.
func Restore(pid int) error { return RestoreAll([]int{pid})[0].Err }

// RestoreAll restores each process, one after another, in one helper.
func RestoreAll(pids []int) []Result { return run(opRestore, pids, 0) }

// Patched reads, without stopping or attaching to the process, the offset
// its stub holds and whether its clock_gettime entry jumps to the stub.
// A process without the stub reads (0, false, nil).
func Patched(pid int) (offset time.Duration, active bool, err error) { return patched(pid) }

func each(pids []int, err error) []Result {
	out := make([]Result, len(pids))
	for i, p := range pids {
		out[i] = Result{PID: p, Err: err}
	}
	return out
}

type op string

const (
	opShift   op = "shift"
	opRestore op = "restore"
)
