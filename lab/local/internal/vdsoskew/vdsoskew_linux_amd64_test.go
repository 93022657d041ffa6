package vdsoskew

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// probeBin is the clockprobe program (testdata/clockprobe), built once.
var probeBin string

func TestMain(m *testing.M) {
	if os.Geteuid() == 0 {
		dir, err := os.MkdirTemp("", "vdsoskew-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		probeBin = filepath.Join(dir, "clockprobe")
		if out, err := exec.Command("go", "build", "-o", probeBin, "./testdata/clockprobe").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building the clock probe: %v\n%s", err, out)
			os.Exit(1)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: ptrace and /proc/<pid>/mem of another process")
	}
}

// probe is one running clockprobe. It is this test's child and waited
// for only at cleanup: a wait running meanwhile would be handed the ptrace
// stops the tests themselves cause.
type probe struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	addr string
	// halfTrip is half the last skew's round trip: how far the probe's
	// reading may be from the midpoint it is compared with.
	halfTrip time.Duration
}

func startProbe(t *testing.T, env ...string) *probe {
	t.Helper()
	cmd := exec.Command(probeBin)
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &probe{t: t, cmd: cmd, in: in, out: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var hello struct{ Addr string }
	p.line(&hello)
	p.addr = hello.Addr
	return p
}

func (p *probe) pid() int { return p.cmd.Process.Pid }

func (p *probe) line(v any) {
	p.t.Helper()
	if !p.out.Scan() {
		p.t.Fatalf("the probe (pid %d) said nothing more: %v (exited: %v)", p.pid(), p.out.Err(), p.exited())
	}
	if err := json.Unmarshal(p.out.Bytes(), v); err != nil {
		p.t.Fatalf("probe: %q: %v", p.out.Text(), err)
	}
}

// exited reports how the probe ended, if it has.
func (p *probe) exited() string {
	var ws unix.WaitStatus
	if got, err := unix.Wait4(p.pid(), &ws, unix.WNOHANG|unix.WALL, nil); err == nil && got == p.pid() {
		return fmt.Sprintf("%v (status %#x)", ws.Signal(), uint32(ws))
	}
	return "no"
}

func (p *probe) ask(cmd string, v any) {
	p.t.Helper()
	if _, err := fmt.Fprintln(p.in, cmd); err != nil {
		p.t.Fatalf("probe: %s: %v", cmd, err)
	}
	p.line(v)
}

type reading struct {
	UnixNS  int64
	SinceNS int64
	TID     int
}

// skew is how far the probe's wall clock is from this process's, read in
// the middle of the round trip.
func (p *probe) skew(cmd string) (time.Duration, reading) {
	p.t.Helper()
	before := time.Now()
	var r reading
	p.ask(cmd, &r)
	after := time.Now()
	p.halfTrip = after.Sub(before) / 2
	return time.Unix(0, r.UnixNS).Sub(before.Add(p.halfTrip)), r
}

// near says whether got, the last skew's reading, is within tolerance of
// want, widened by that reading's half round trip: the probe read its
// clock somewhere between the ask and the answer, and a loaded machine
// can take longer than the tolerance between them.
func (p *probe) near(got, want, tolerance time.Duration) bool {
	return near(got, want, tolerance+p.halfTrip)
}

type vdsoReading struct {
	GettimeofdayUS, TimeS, TimeStoredS, CoarseNS, MonotonicNS, UnixNS int64
}

// httpSkew is the probe's HTTP Date header against this process's clock
// (the header has whole seconds: half a second is added back).
func (p *probe) httpSkew() time.Duration {
	p.t.Helper()
	before := time.Now()
	resp, err := http.Get("http://" + p.addr + "/")
	after := time.Now()
	if err != nil {
		p.t.Fatal(err)
	}
	resp.Body.Close()
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		p.t.Fatal(err)
	}
	return d.Add(500 * time.Millisecond).Sub(before.Add(after.Sub(before) / 2))
}

func near(got, want, tolerance time.Duration) bool { return (got - want).Abs() <= tolerance }

// checkShifted reads every clock of the probe and checks each is off by
// want: time.Now on its main thread and on a thread it starts for the
// asking, gettimeofday, time and CLOCK_REALTIME_COARSE in the vDSO, its
// HTTP Date header; its monotonic clock reads the machine's.
func checkShifted(t *testing.T, p *probe, want time.Duration, threadsBefore []int) {
	t.Helper()
	if got, _ := p.skew("now"); !p.near(got, want, 250*time.Millisecond) {
		t.Errorf("pid %d: time.Now is %s off, want %s", p.pid(), got, want)
	}
	fresh := false
	for range 50 {
		got, r := p.skew("thread")
		if !p.near(got, want, 250*time.Millisecond) {
			t.Errorf("pid %d: time.Now on thread %d is %s off, want %s", p.pid(), r.TID, got, want)
		}
		if !slices.Contains(threadsBefore, r.TID) {
			fresh = true
			break
		}
	}
	if !fresh && threadsBefore != nil {
		t.Errorf("pid %d: no thread started after the patch was read", p.pid())
	}
	var v vdsoReading
	before := time.Now()
	p.ask("vdso", &v)
	after := time.Now()
	mid := before.Add(after.Sub(before) / 2)
	for _, c := range []struct {
		name string
		got  time.Time
		tol  time.Duration
	}{
		{"gettimeofday", time.UnixMicro(v.GettimeofdayUS), 250 * time.Millisecond},
		{"time", time.Unix(v.TimeS, 5e8), 1500 * time.Millisecond},
		{"time (stored)", time.Unix(v.TimeStoredS, 5e8), 1500 * time.Millisecond},
		{"CLOCK_REALTIME_COARSE", time.Unix(0, v.CoarseNS), 250 * time.Millisecond},
	} {
		if got := c.got.Sub(mid); !near(got, want, c.tol) {
			t.Errorf("pid %d: %s is %s off, want %s", p.pid(), c.name, got, want)
		}
	}
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		t.Fatal(err)
	}
	if d := time.Duration(mono.Nano() - v.MonotonicNS); d < 0 || d > time.Second {
		t.Errorf("pid %d: CLOCK_MONOTONIC is %s behind this process's", p.pid(), d)
	}
	if got := p.httpSkew(); !near(got, want, 1500*time.Millisecond) {
		t.Errorf("pid %d: HTTP Date is %s off, want %s", p.pid(), got, want)
	}
}

// vdsoOf reads a process's vDSO and the layout the patch gives it.
func vdsoOf(t *testing.T, pid int) (*vdsoState, *layout) {
	t.Helper()
	mem, err := openMem(pid, false)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	v, err := readVDSO(pid, mem)
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := v.plan(pid)
	if err != nil {
		t.Fatal(err)
	}
	return v, l
}

// entriesPristine checks each site of the process holds its original bytes.
func entriesPristine(t *testing.T, pid int) {
	t.Helper()
	v, l := vdsoOf(t, pid)
	for _, s := range l.sites {
		if got := v.img[s.at : s.at+len(s.orig)]; !slices.Equal(got, s.orig) {
			t.Errorf("pid %d: %s's entry holds % x, want the original % x", pid, s.name, got, s.orig)
		}
	}
}

func threadsOf(t *testing.T, pid int) []int {
	t.Helper()
	tids, err := tasks(pid)
	if err != nil {
		t.Fatal(err)
	}
	return tids
}

// TestShiftAndRestore shifts one process by an hour and checks every clock
// it reads on every thread, a thread started afterwards included, while a
// second process is not shifted; changes the offset; restores; and shifts
// and restores again. Each call runs in a helper of its own, so Restore
// and the offset change work from what the process's memory holds alone.
func TestShiftAndRestore(t *testing.T) {
	needRoot(t)
	a, b := startProbe(t), startProbe(t)
	start, r0 := a.skew("now")
	if !near(start, 0, 250*time.Millisecond) {
		t.Fatalf("before the patch the probe is %s off", start)
	}
	before := threadsOf(t, a.pid())

	p, err := Shift(a.pid(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shift: %+v", p)
	if !p.Redirected || p.Offset != time.Hour || p.Threads < len(before) || !slices.Contains(p.Functions, "__vdso_clock_gettime") {
		t.Errorf("Patch %+v", p)
	}
	checkShifted(t, a, time.Hour, before)
	checkShifted(t, b, 0, nil)
	_, r1 := a.skew("now")
	wall := time.Duration(r1.UnixNS-r0.UnixNS) - time.Hour
	if mono := time.Duration(r1.SinceNS - r0.SinceNS); mono <= 0 || !near(mono, wall, 250*time.Millisecond) {
		t.Errorf("time.Since moved %s while the wall clock moved %s besides the skew", mono, wall)
	}
	if off, on, err := Patched(a.pid()); err != nil || !on || off != time.Hour {
		t.Errorf("Patched(shifted) = %s %v %v", off, on, err)
	}
	if off, on, err := Patched(b.pid()); err != nil || on || off != 0 {
		t.Errorf("Patched(untouched) = %s %v %v", off, on, err)
	}

	// A new offset, to the nanosecond and backwards: only the word changes.
	back := -(30*time.Minute + 700*time.Millisecond)
	p, err = Shift(a.pid(), back)
	if err != nil {
		t.Fatal(err)
	}
	if p.Redirected || p.Moved != 0 {
		t.Errorf("changing the offset redirected again: %+v", p)
	}
	checkShifted(t, a, back, nil)
	if off, on, _ := Patched(a.pid()); !on || off != back {
		t.Errorf("Patched after the change = %s %v", off, on)
	}

	if err := Restore(a.pid()); err != nil {
		t.Fatal(err)
	}
	checkShifted(t, a, 0, nil)
	entriesPristine(t, a.pid())
	if off, on, err := Patched(a.pid()); err != nil || on || off != 0 {
		t.Errorf("Patched(restored) = %s %v %v", off, on, err)
	}
	if err := Restore(a.pid()); err != nil {
		t.Errorf("a second Restore: %v", err)
	}

	// The stub stays in the padding: shifting again reuses it.
	third := 999999999 * time.Nanosecond
	if p, err = Shift(a.pid(), 2*time.Hour+third); err != nil || !p.Redirected {
		t.Fatalf("shifting again: %+v %v", p, err)
	}
	checkShifted(t, a, 2*time.Hour+third, nil)
	if err := Restore(a.pid()); err != nil {
		t.Fatal(err)
	}
	checkShifted(t, a, 0, nil)
	checkShifted(t, b, 0, nil)
	entriesPristine(t, b.pid())
	if _, on, _ := Patched(b.pid()); on {
		t.Error("the second process reads as patched")
	}
}

// TestShiftAllIsOneHelper shifts several processes in one call.
func TestShiftAll(t *testing.T) {
	needRoot(t)
	ps := []*probe{startProbe(t), startProbe(t), startProbe(t)}
	var pids []int
	for _, p := range ps {
		pids = append(pids, p.pid())
	}
	for _, r := range ShiftAll(append(pids, 1<<30), 90*time.Second) {
		if r.PID == 1<<30 {
			if !errors.Is(r.Err, ErrGone) {
				t.Errorf("a pid that does not exist: %v, want ErrGone", r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Errorf("pid %d: %v", r.PID, r.Err)
		}
	}
	for _, p := range ps {
		if got, _ := p.skew("now"); !p.near(got, 90*time.Second, 250*time.Millisecond) {
			t.Errorf("pid %d is %s off", p.pid(), got)
		}
	}
	for _, r := range RestoreAll(pids) {
		if r.Err != nil {
			t.Errorf("restoring pid %d: %v", r.PID, r.Err)
		}
	}
	for _, p := range ps {
		if got, _ := p.skew("now"); !p.near(got, 0, 250*time.Millisecond) {
			t.Errorf("restored pid %d is %s off", p.pid(), got)
		}
	}
}

// TestStressInjectAndHeal patches and restores a process 200 times, with
// offsets changed in between, while goroutines on every core read its
// clocks in a loop: it must keep running and read true time at the end.
func TestStressInjectAndHeal(t *testing.T) {
	needRoot(t)
	p := startProbe(t)
	var n struct{ Spinning int }
	p.ask("spin 4", &n)
	var c0, c1 struct{ Calls int64 }
	p.ask("count", &c0)
	moved := 0
	started := time.Now()
	for i := range 200 {
		off := time.Duration(i%7-3) * 37 * time.Minute
		patch, err := Shift(p.pid(), off)
		if err != nil {
			t.Fatalf("round %d: shift: %v", i, err)
		}
		moved += patch.Moved
		if i%3 == 0 {
			if got, _ := p.skew("now"); !p.near(got, off, 250*time.Millisecond) {
				t.Errorf("round %d: %s off, want %s", i, got, off)
			}
		}
		if i%2 == 0 {
			// A changed offset without a restore in between.
			if _, err := Shift(p.pid(), -off); err != nil {
				t.Fatalf("round %d: changing the offset: %v", i, err)
			}
		}
		if err := Restore(p.pid()); err != nil {
			t.Fatalf("round %d: restore: %v", i, err)
		}
	}
	p.ask("count", &c1)
	t.Logf("200 rounds in %s; the probe read its clocks %d times meanwhile (%d thread positions moved)", time.Since(started).Round(time.Millisecond), c1.Calls-c0.Calls, moved)
	if c1.Calls <= c0.Calls {
		t.Errorf("the spinning goroutines stopped: %d then %d", c0.Calls, c1.Calls)
	}
	checkShifted(t, p, 0, nil)
	entriesPristine(t, p.pid())
}

// tracer single-steps one thread of a probe from this test, to put it on
// the exact instruction a test needs.
type tracer struct {
	t   *testing.T
	tid int
}

// seize attaches to tid and stops it; the caller holds its OS thread.
func seize(t *testing.T, tid int) *tracer {
	t.Helper()
	if err := unix.PtraceSeize(tid); err != nil {
		t.Fatal(err)
	}
	if err := unix.PtraceInterrupt(tid); err != nil {
		t.Fatal(err)
	}
	tr := &tracer{t: t, tid: tid}
	tr.wait()
	return tr
}

// wait waits for the next stop and returns its signal (SIGTRAP for a
// step or the interrupt).
func (tr *tracer) wait() syscall.Signal {
	tr.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var ws unix.WaitStatus
		got, err := unix.Wait4(tr.tid, &ws, unix.WALL|unix.WNOHANG, nil)
		if err != nil {
			tr.t.Fatal(err)
		}
		if got == tr.tid {
			if !ws.Stopped() {
				tr.t.Fatalf("thread %d: %#x, not a stop", tr.tid, uint32(ws))
			}
			return ws.StopSignal()
		}
		time.Sleep(100 * time.Microsecond)
	}
	tr.t.Fatalf("thread %d did not stop", tr.tid)
	return 0
}

func (tr *tracer) rip() uint64 {
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tr.tid, &regs); err != nil {
		tr.t.Fatal(err)
	}
	return regs.Rip
}

// stepTo single-steps until the thread is at one of the addresses,
// swallowing the signals that arrive meanwhile (the runtime's preemption
// requests, which it sends again).
func (tr *tracer) stepTo(addrs []uint64) uint64 {
	tr.t.Helper()
	for i := 0; i < 1_000_000; i++ {
		if rip := tr.rip(); slices.Contains(addrs, rip) {
			tr.t.Logf("thread %d reached %#x after %d steps", tr.tid, rip, i)
			return rip
		}
		if err := unix.PtraceSingleStep(tr.tid); err != nil {
			tr.t.Fatal(err)
		}
		// A step stops at once: wait without polling.
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tr.tid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
			tr.t.Fatalf("thread %d after a step: %#x %v", tr.tid, uint32(ws), err)
		}
	}
	tr.t.Fatalf("thread %d never reached %#x", tr.tid, addrs)
	return 0
}

// leaveStopped detaches with a SIGSTOP queued, so the whole probe
// group-stops with this thread exactly where it is. The trap flag is
// cleared first: the kernel clears the one it set for stepping at detach,
// but not one a stepped popf put back.
func (tr *tracer) leaveStopped(pid int) {
	tr.t.Helper()
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tr.tid, &regs); err != nil {
		tr.t.Fatal(err)
	}
	regs.Eflags &^= 0x100
	if err := unix.PtraceSetRegs(tr.tid, &regs); err != nil {
		tr.t.Fatal(err)
	}
	if err := unix.Tgkill(pid, tr.tid, unix.SIGSTOP); err != nil {
		tr.t.Fatal(err)
	}
	if err := unix.PtraceDetach(tr.tid); err != nil {
		tr.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tr.tid))
		if err != nil {
			tr.t.Fatal(err)
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); f[0] == "T" {
			return
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("thread %d did not stop: %s", tr.tid, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// noAsyncPreempt keeps the runtime from preempting the stepped goroutine
// by injecting a call to asyncPreempt, whose pushfq/popfq would save and
// restore the trap flag the stepping set, leaving it set after detach.
const noAsyncPreempt = "GODEBUG=asyncpreemptoff=1"

// interior are the addresses, in pid's vDSO, of clock_gettime's replaced
// instructions other than the first.
func interior(t *testing.T, pid int) (uint64, site, []uint64) {
	t.Helper()
	v, l := vdsoOf(t, pid)
	cg := siteOf(t, l, kindClockGettime)
	var out []uint64
	for _, s := range cg.starts[1:] {
		out = append(out, v.m.start+uint64(cg.at+s))
	}
	if len(out) == 0 {
		t.Skip("clock_gettime's replaced bytes are one instruction on this kernel: no thread can be inside them")
	}
	return v.m.start, cg, out
}

// TestThreadOnAReplacedInstruction stops a thread exactly on the second
// instruction of clock_gettime, which the jmp overwrites, and patches:
// the thread must be moved to the same instruction in the trampoline, or
// it would resume in the middle of the jmp and the probe would crash.
func TestThreadOnAReplacedInstruction(t *testing.T) {
	needRoot(t)
	p := startProbe(t, noAsyncPreempt)
	var sp struct{ TID int }
	p.ask("spinner", &sp)
	base, cg, addrs := interior(t, p.pid())

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tr := seize(t, sp.TID)
	at := tr.stepTo(addrs)
	tr.leaveStopped(p.pid())
	t.Logf("thread %d stopped at clock_gettime+%d", sp.TID, at-base-uint64(cg.at))

	patch, err := Shift(p.pid(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if patch.Moved < 1 {
		t.Errorf("Patch %+v: the thread on the replaced instruction was not moved", patch)
	}
	if err := syscall.Kill(p.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var c0, c1 struct{ Calls int64 }
	p.ask("count", &c0)
	time.Sleep(200 * time.Millisecond)
	p.ask("count", &c1)
	if c1.Calls <= c0.Calls {
		t.Errorf("the moved thread does not run: %d then %d readings", c0.Calls, c1.Calls)
	}
	checkShifted(t, p, time.Hour, nil)
	if err := Restore(p.pid()); err != nil {
		t.Fatal(err)
	}
	checkShifted(t, p, 0, nil)
}

// TestSavedContextOnAReplacedInstruction puts a signal handler's saved
// context on the second instruction of clock_gettime: the thread is
// stepped there, a signal is delivered (the step stops at the handler's
// first instruction), and the process is patched while the handler has
// not returned. Its sigreturn must land in the trampoline.
func TestSavedContextOnAReplacedInstruction(t *testing.T) {
	needRoot(t)
	p := startProbe(t, noAsyncPreempt)
	var sp struct{ TID int }
	p.ask("spinner", &sp)
	base, cg, addrs := interior(t, p.pid())

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tr := seize(t, sp.TID)
	at := tr.stepTo(addrs)
	// Step with SIGURG delivered: the kernel saves the context (RIP on
	// the replaced instruction) and stops at the handler's entry.
	if _, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SINGLESTEP, uintptr(sp.TID), 0, uintptr(unix.SIGURG), 0, 0); e != 0 {
		t.Fatal(e)
	}
	tr.wait()
	handler := tr.rip()
	if handler >= base && handler < base+8192 {
		t.Fatalf("after the signal the thread is at %#x, in the vDSO, not in a handler", handler)
	}
	tr.leaveStopped(p.pid())
	t.Logf("thread %d in its handler at %#x, its saved context at clock_gettime+%d", sp.TID, handler, at-base-uint64(cg.at))

	patch, err := Shift(p.pid(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if patch.Moved < 1 {
		t.Errorf("Patch %+v: the saved context was not moved", patch)
	}
	if err := syscall.Kill(p.pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var c0, c1 struct{ Calls int64 }
	p.ask("count", &c0)
	time.Sleep(200 * time.Millisecond)
	p.ask("count", &c1)
	if c1.Calls <= c0.Calls {
		t.Errorf("the thread does not run after its handler: %d then %d readings", c0.Calls, c1.Calls)
	}
	checkShifted(t, p, time.Hour, nil)
	if err := Restore(p.pid()); err != nil {
		t.Fatal(err)
	}
	checkShifted(t, p, 0, nil)
}

// TestRefusals: a process another tracer holds, and pids that are not a
// process this package may patch, are refused and left as they were.
func TestRefusals(t *testing.T) {
	needRoot(t)
	p := startProbe(t)

	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		seize(t, p.pid())
		defer unix.PtraceDetach(p.pid())
		_, err := Shift(p.pid(), time.Hour)
		if !errors.Is(err, ErrTraced) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
			t.Errorf("Shift(traced) = %v, want ErrTraced naming the tracer", err)
		}
		if err := Restore(p.pid()); err != nil {
			t.Errorf("Restore(traced, never patched) = %v, want nothing to do", err)
		}
	}()
	if v, _ := vdsoOf(t, p.pid()); v.present {
		t.Error("a refused process carries the stub")
	}

	var tid int
	for _, x := range threadsOf(t, p.pid()) {
		if x != p.pid() {
			tid = x
		}
	}
	for _, c := range []struct {
		name string
		pid  int
		want error
	}{
		{"pid 0", 0, ErrNotAllowed},
		{"pid -1", -1, ErrNotAllowed},
		{"init", 1, ErrNotAllowed},
		{"this process", os.Getpid(), ErrNotAllowed},
		{"a kernel thread", 2, ErrNotAllowed},
		{"a thread, not a process", tid, ErrNotAllowed},
		{"no such pid", 1 << 30, ErrGone},
	} {
		if _, err := Shift(c.pid, time.Hour); !errors.Is(err, c.want) {
			t.Errorf("Shift(%s) = %v, want %v", c.name, err, c.want)
		} else {
			t.Logf("Shift(%s): %v", c.name, err)
		}
		if err := Restore(c.pid); !errors.Is(err, c.want) {
			t.Errorf("Restore(%s) = %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := Shift(p.pid(), MaxOffset+time.Second); err == nil {
		t.Error("an offset beyond MaxOffset was accepted")
	}
	if _, _, err := Patched(1 << 30); !errors.Is(err, ErrGone) {
		t.Errorf("Patched(no such pid) = %v", err)
	}
	entriesPristine(t, p.pid())
	checkShifted(t, p, 0, nil)
}
