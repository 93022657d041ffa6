package vdsoskew

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const errESRCH = syscall.ESRCH

// stopTimeout bounds how long one thread may take to stop: a thread in
// uninterruptible sleep (D) stops only when the sleep ends.
const stopTimeout = 5 * time.Second

// tracee is one thread, seized and stopped.
type tracee struct {
	tid int
	// sig is the signal whose delivery the stop intercepted, passed on at
	// detach so that no signal is lost.
	sig  int
	regs unix.PtraceRegs
}

// stopped is a process every thread of which is in a ptrace stop. All
// ptrace requests must come from the OS thread that seized: the helper
// runs on its locked main thread.
type stopped struct {
	pid     int
	threads []*tracee
}

// stopAll seizes and interrupts every thread of pid. A thread not yet
// stopped can start another, so the thread list is read again until a
// reading finds no thread that is not stopped: from then on no thread
// runs, and none can appear.
func stopAll(pid int) (*stopped, error) {
	s := &stopped{pid: pid}
	seen := map[int]bool{}
	for round := 0; ; round++ {
		tids, err := tasks(pid)
		if err != nil {
			s.release()
			return nil, err
		}
		fresh := 0
		for _, tid := range tids {
			if seen[tid] {
				continue
			}
			seen[tid] = true
			t, err := stopThread(pid, tid)
			if errors.Is(err, ErrGone) {
				continue // it exited since the list was read
			}
			if err != nil {
				s.release()
				return nil, err
			}
			s.threads = append(s.threads, t)
			fresh++
		}
		if fresh == 0 {
			break
		}
		if round == 1000 {
			s.release()
			return nil, fmt.Errorf("pid %d: threads kept appearing while it was being stopped", pid)
		}
	}
	if len(s.threads) == 0 {
		return nil, fmt.Errorf("pid %d: %w: every thread exited while it was being stopped", pid, ErrGone)
	}
	for _, t := range s.threads {
		if err := unix.PtraceGetRegs(t.tid, &t.regs); err != nil {
			s.release()
			return nil, procErr(pid, fmt.Sprintf("reading thread %d's registers", t.tid), err)
		}
	}
	return s, nil
}

func stopThread(pid, tid int) (*tracee, error) {
	if err := unix.PtraceSeize(tid); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, procErr(pid, fmt.Sprintf("seizing thread %d", tid), err)
		}
		if errors.Is(err, unix.EPERM) {
			if st, serr := status(tid); serr == nil && st["TracerPid"] != "0" {
				return nil, fmt.Errorf("pid %d: thread %d: %w (by %s)", pid, tid, ErrTraced, tracerName(st["TracerPid"]))
			}
		}
		return nil, procErr(pid, fmt.Sprintf("seizing thread %d", tid), err)
	}
	t := &tracee{tid: tid}
	if err := unix.PtraceInterrupt(tid); err != nil {
		_ = unix.PtraceDetach(tid)
		return nil, procErr(pid, fmt.Sprintf("interrupting thread %d", tid), err)
	}
	deadline := time.Now().Add(stopTimeout)
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return nil, procErr(pid, fmt.Sprintf("waiting for thread %d to stop", tid), err)
		}
		if got == tid {
			switch {
			case ws.Exited() || ws.Signaled():
				return nil, fmt.Errorf("pid %d: thread %d: %w: it exited", pid, tid, ErrGone)
			case ws.Stopped() && uint32(ws)>>16 == unix.PTRACE_EVENT_STOP:
				return t, nil // the interrupt, or a group stop (it stays stopped after detach)
			case ws.Stopped():
				t.sig = int(ws.StopSignal()) // a signal on its way in: pass it on at detach
				return t, nil
			}
		}
		if time.Now().After(deadline) {
			_ = unix.PtraceDetach(tid)
			return nil, fmt.Errorf("pid %d: thread %d did not stop within %s", pid, tid, stopTimeout)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// setRegs writes a thread's registers back.
func (s *stopped) setRegs(t *tracee) error {
	if err := unix.PtraceSetRegs(t.tid, &t.regs); err != nil {
		return procErr(s.pid, fmt.Sprintf("writing thread %d's registers", t.tid), err)
	}
	return nil
}

// release detaches from every thread, handing each the signal its stop
// intercepted.
func (s *stopped) release() {
	for _, t := range s.threads {
		_, _, _ = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(t.tid), 0, uintptr(t.sig), 0, 0)
	}
	s.threads = nil
}
