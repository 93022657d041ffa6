// Package vdsoskew shifts the wall clock one running process reads, and
// only that process, by patching its own copy of the vDSO.
//
// Every host of the local lab is a network namespace on one kernel, which
// has one CLOCK_REALTIME. Go programs (etcd, the API server, kubelet,
// containerd) read it, and CLOCK_MONOTONIC, through the vDSO's
// clock_gettime; C programs through glibc, which calls the vDSO's
// clock_gettime, gettimeofday and time. The vDSO pages of a process are
// private and copy-on-write: writing them through /proc/<pid>/mem changes
// that process and no other (a fork made later shares the changed pages;
// an exec maps a fresh vDSO).
//
// # What is written
//
// Into the zero padding after the vDSO's ELF image, the last 512 bytes of
// the mapping, goes a block: a magic marker, the offset (one 8-byte word:
// whole seconds, rounded down, in the high half, nanoseconds 0..999999999
// in the low half), one record per patched function (where its entry is,
// how many bytes the patch replaced and what they were), and code:
//
//   - clock_gettime's stub: clocks other than CLOCK_REALTIME (0) and
//     CLOCK_REALTIME_COARSE (5) fall through into its trampoline, which
//     runs the original; those two call the trampoline and, on success,
//     add the offset to the timespec, carrying nanoseconds over 1e9 into
//     the seconds;
//   - gettimeofday's stub: calls the original and adds the offset's seconds
//     and microseconds to a timeval it was given;
//   - time's stub: reads CLOCK_REALTIME_COARSE through clock_gettime's
//     stub (time reads the same coarse clock) and returns, and stores
//     where asked, its seconds.
//
// A trampoline is the function's first instructions, copied so that each
// keeps its length and a RIP-relative operand still points at the address
// the original did, then a jmp back to the first byte not replaced. Then
// each function's entry is overwritten with a jmp to its stub (after an
// endbr64, if one begins it), the rest of the replaced instructions with
// int3. The stubs use only the C calling convention's scratch registers,
// keep the stack 16-byte aligned at every call, and make no system call
// of their own, so nothing is injected into the process and its seccomp
// filter, whatever it is, has nothing to refuse.
//
// The block's bytes depend only on the vDSO image, not on where it was
// mapped, so every process on one kernel gets the same block. Changing the
// offset writes one word. Restore needs nothing but the process: it reads
// the records back from the block, sets the offset to zero and puts each
// function's original bytes back.
//
// # What is refused
//
// A function's entry is patched only when every instruction the jmp
// replaces is a push, mov, lea, sub, and, cmp or test (none transfers
// control; one with a RIP-relative operand is re-aimed), the replaced bytes
// fit in 16 and lie in one page (so one write replaces them all), and no
// relative jump or call anywhere in the vDSO's code and no symbol points
// into them past their first byte (checked by decoding the whole of
// .text). Anything else is ErrUnexpectedPrologue or ErrUnexpectedVDSO:
// clock_gettime must pass, gettimeofday and time are skipped (Patch.Skipped
// says why) if they do not. Also refused: a vDSO with no room after the
// image or padding that is not zero, bytes at an entry that are neither
// the original nor this package's patch, a block this package would not
// write, a process already traced (ErrTraced), this program and pid 1,
// processes without a vDSO (kernel threads), and other architectures
// (ErrUnsupported; the implementation is linux/amd64 only). Every refusal
// is made before the process is written.
//
// # Why no thread can go wrong
//
// The process is written only while every one of its threads is in a
// ptrace stop: each thread of /proc/<pid>/task is seized and interrupted,
// and the list is read again until a reading finds no thread that is not
// stopped; a stopped thread cannot start another, so from then on none
// runs and none can appear. A thread that was stopped on its way into a
// signal handler gets that signal back at detach, and one in a group stop
// (a SIGSTOP, the lab's freeze fault) stays stopped. Threads resume only
// after every write has completed, through the kernel, on an x86
// processor whose instruction fetch sees the stores.
//
// A thread resumes where its registers say, or, when a signal handler
// returns, where the context the kernel saved on its stack says. Neither
// can be inside an instruction. So, for each write:
//
//   - The block goes into zero padding that nothing refers to, before any
//     entry points at it: no thread, and no saved context, is there.
//   - The jmp replaces whole instructions. A thread or saved context at
//     the first of them runs the jmp: correct. One at any other of them
//     (the entry is push rbp; mov rbp,rsp; push r14 on the kernel this was
//     built on, so entry+1 and entry+4) would resume inside the jmp; the
//     patch moves each such position to the same instruction in the
//     trampoline, which does exactly what the original would have done
//     and returns to the original code after the replaced bytes. Registers
//     are moved with PTRACE_SETREGS; saved contexts by rewriting, in the
//     256 KiB above each thread's stack pointer (where the frame of any
//     handler it is in lies: the kernel puts the frame on the stack the
//     handler then runs on, Go's signal stacks are 32 KiB), every aligned
//     word equal to such an address. Moving a register rather than
//     single-stepping the thread out means the thread executes nothing,
//     so no pending signal can be delivered on the way and save a context
//     there. Any other word holding such an address would be changed the
//     same way; none is known to exist, since no return address or
//     function pointer can point past the first byte of an entry.
//   - Nothing else leads into the replaced bytes past their first: that
//     is checked (no branch target, no symbol), and no call instruction
//     ends there, so no return address points there.
//   - The offset word: a thread inside a stub has either loaded it (and
//     finishes with the old offset) or not (and uses the new one); the
//     stub loads it with one 8-byte load.
//   - Restore writes the original bytes back. While redirected, the only
//     instruction boundary in those bytes is the jmp at the first byte
//     (the int3 after it is never reached), which is where the original
//     instruction begins too, so no thread or saved context can be
//     anywhere else in them; a thread found elsewhere is refused. The
//     stubs and trampolines are not removed: a thread inside one (an
//     interrupted call) finishes it correctly, the trampolines returning
//     to original code that was never changed, with the offset now zero.
//     Shifting again reuses them.
//
// The tests put a thread on entry+1 (single-stepped there by the test) and
// a saved signal context on entry+1 (a signal delivered while stepping,
// the thread held in its handler) and check that the patched process runs
// on; with the moving switched off both crash it.
//
// # The helper process
//
// The ptrace work runs in a helper: this program run again from
// /proc/self/exe with FAULTLINE_VDSOSKEW_HELPER=1, which this package's
// init turns into the helper before main. A ptrace stop of a process that
// is also the tracer's child is reported to every wait of the tracer's
// process, whatever its options, so a goroutine waiting for that child to
// exit (os/exec's Wait, which the lab's supervisor runs for each service
// it starts) would take the stop for an exit. The helper is nobody's
// parent. If it is killed midway its tracees are detached by the kernel;
// every state between two writes above is one a thread runs correctly in,
// and Restore undoes any of them.
//
// # What it does not cover
//
// Times the kernel stamps itself (file times, socket and packet
// timestamps, the times in /proc), absolute-time kernel timers
// (timerfd, clock_nanosleep with TIMER_ABSTIME, POSIX timers on
// CLOCK_REALTIME), a raw clock_gettime system call, programs that never
// call the vDSO, and processes started by exec after the patch, which map
// a fresh vDSO until they are patched themselves. Attaching interrupts
// blocking system calls as a SIGSTOP and SIGCONT would: calls the kernel
// does not restart return EINTR, which well-behaved programs (Go's runtime
// among them) retry.
package vdsoskew
