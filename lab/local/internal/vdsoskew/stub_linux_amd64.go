package vdsoskew

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// asm assembles code at a known offset of the mapping, resolving labels
// for rel8, rel32 and RIP-relative operands once everything is placed.
// The instructions are few and fixed, so they are written as bytes, each
// with its assembly beside it; a unit test decodes the result back.
type asm struct {
	org    int // mapping offset of buf[0]
	buf    []byte
	labels map[string]int // label → mapping offset
	fixups []fixup
}

type fixup struct {
	at    int // index in buf of the field
	size  int // 1 or 4
	label string
	end   int // mapping offset the displacement is counted from
}

func newAsm(org int) *asm { return &asm{org: org, labels: map[string]int{}} }

func (a *asm) pc() int { return a.org + len(a.buf) }

func (a *asm) emit(b ...byte) { a.buf = append(a.buf, b...) }

func (a *asm) label(name string) { a.labels[name] = a.pc() }

// rel emits op followed by a size-byte displacement to label, counted
// from the end of the instruction.
func (a *asm) rel(size int, label string, op ...byte) {
	a.emit(op...)
	a.fixups = append(a.fixups, fixup{at: len(a.buf), size: size, label: label, end: a.pc() + size})
	a.emit(make([]byte, size)...)
}

// ripRel emits an instruction whose RIP-relative displacement (4 bytes
// after prefix) points at label; suffix is what follows the displacement.
func (a *asm) ripRel(label string, prefix []byte, suffix ...byte) {
	a.emit(prefix...)
	a.fixups = append(a.fixups, fixup{at: len(a.buf), size: 4, label: label, end: a.pc() + 4 + len(suffix)})
	a.emit(0, 0, 0, 0)
	a.emit(suffix...)
}

// moved emits the site's replaced instructions at the current position,
// each the same length, a RIP-relative displacement re-aimed at the
// address the original pointed at.
func (a *asm) moved(s site) {
	for i, inst := range s.insts {
		from := s.at + s.starts[i]
		b := slices.Clone(s.orig[s.starts[i] : s.starts[i]+inst.Len])
		if inst.PCRel == 4 {
			old := int32(binary.LittleEndian.Uint32(b[inst.PCRelOff:]))
			target := from + inst.Len + int(old)
			to := a.pc()
			binary.LittleEndian.PutUint32(b[inst.PCRelOff:], uint32(int32(target-(to+inst.Len))))
		}
		a.emit(b...)
	}
}

// absolute defines a label at a mapping offset outside the code.
func (a *asm) absolute(name string, off int) { a.labels[name] = off }

func (a *asm) resolve() error {
	for _, f := range a.fixups {
		to, ok := a.labels[f.label]
		if !ok {
			return fmt.Errorf("stub: no label %q", f.label)
		}
		d := to - f.end
		switch f.size {
		case 1:
			if d < -128 || d > 127 {
				return fmt.Errorf("stub: %q is %d bytes away for a rel8", f.label, d)
			}
			a.buf[f.at] = byte(int8(d))
		case 4:
			binary.LittleEndian.PutUint32(a.buf[f.at:], uint32(int32(d)))
		}
	}
	return nil
}

// The three stubs. Each is entered by the jmp at its function's entry, so
// it runs with the caller's return address on the stack and the C calling
// convention's arguments in rdi, rsi; it keeps every callee-saved
// register, and calls the original code only with rsp 16-byte aligned.
// Every stub and trampoline stays valid whether or not the entry jumps to
// it, so a thread inside one finishes its call correctly after Restore.

// clockGettime: clock_gettime(clockid edi, struct timespec *rsi).
// CLOCK_REALTIME (0) and CLOCK_REALTIME_COARSE (5) call the original and
// add the offset to a successful result; every other clock falls through
// into the trampoline, so it runs the original code as if never patched.
func (a *asm) clockGettime(s site) {
	a.label("cg")
	a.emit(0x83, 0xff, 0x00)                         // cmp edi, 0
	a.rel(1, "cg.skew", 0x74)                        // je cg.skew
	a.emit(0x83, 0xff, 0x05)                         // cmp edi, 5
	a.rel(1, "cg.skew", 0x74)                        // je cg.skew
	a.label("cg.tramp")                              // (falls through)
	a.moved(s)                                       // the replaced instructions
	a.rel(4, "cg.back", 0xe9)                        // jmp entry+len
	a.label("cg.skew")                               //
	a.emit(0x56)                                     // push rsi           (rsp 16-aligned)
	a.rel(4, "cg.tramp", 0xe8)                       // call cg.tramp      (the original)
	a.emit(0x5e)                                     // pop rsi
	a.emit(0x85, 0xc0)                               // test eax, eax
	a.rel(1, "cg.done", 0x75)                        // jnz cg.done        (an error: as it is)
	a.ripRel("offset", []byte{0x48, 0x8b, 0x15})     // mov rdx, [rip+offset]
	a.emit(0x48, 0x89, 0xd1)                         // mov rcx, rdx
	a.emit(0x48, 0xc1, 0xf9, 0x20)                   // sar rcx, 32        (seconds)
	a.emit(0x89, 0xd2)                               // mov edx, edx       (nanoseconds)
	a.emit(0x48, 0x01, 0x0e)                         // add [rsi], rcx     (tv_sec)
	a.emit(0x48, 0x03, 0x56, 0x08)                   // add rdx, [rsi+8]   (+ tv_nsec)
	a.emit(0x48, 0x81, 0xfa, 0x00, 0xca, 0x9a, 0x3b) // cmp rdx, 1000000000
	a.rel(1, "cg.store", 0x7c)                       // jl cg.store
	a.emit(0x48, 0x81, 0xea, 0x00, 0xca, 0x9a, 0x3b) // sub rdx, 1000000000
	a.emit(0x48, 0xff, 0x06)                         // inc qword [rsi]
	a.label("cg.store")                              //
	a.emit(0x48, 0x89, 0x56, 0x08)                   // mov [rsi+8], rdx   (eax is still 0)
	a.label("cg.done")                               //
	a.emit(0xc3)                                     // ret
	a.absolute("cg.back", s.at+len(s.orig))
}

// gettimeofday: gettimeofday(struct timeval *rdi, struct timezone *rsi).
// The original fills both; a successful call with a timeval gets the
// offset's seconds and microseconds (the nanoseconds divided by 1000 with
// a multiply: 274877907 = ceil(2^38/1000) is exact below 4.9e9).
func (a *asm) gettimeofday(s site) {
	a.label("gt")
	a.emit(0x57)                                     // push rdi           (rsp 16-aligned)
	a.rel(4, "gt.tramp", 0xe8)                       // call gt.tramp      (the original)
	a.emit(0x5f)                                     // pop rdi
	a.emit(0x85, 0xc0)                               // test eax, eax
	a.rel(1, "gt.done", 0x75)                        // jnz gt.done
	a.emit(0x48, 0x85, 0xff)                         // test rdi, rdi
	a.rel(1, "gt.done", 0x74)                        // jz gt.done
	a.ripRel("offset", []byte{0x48, 0x8b, 0x15})     // mov rdx, [rip+offset]
	a.emit(0x48, 0x89, 0xd1)                         // mov rcx, rdx
	a.emit(0x48, 0xc1, 0xf9, 0x20)                   // sar rcx, 32        (seconds)
	a.emit(0x48, 0x01, 0x0f)                         // add [rdi], rcx     (tv_sec)
	a.emit(0x89, 0xd0)                               // mov eax, edx       (nanoseconds)
	a.emit(0x48, 0x69, 0xc0, 0xd3, 0x4d, 0x62, 0x10) // imul rax, rax, 274877907
	a.emit(0x48, 0xc1, 0xe8, 0x26)                   // shr rax, 38        (microseconds)
	a.emit(0x48, 0x03, 0x47, 0x08)                   // add rax, [rdi+8]   (+ tv_usec)
	a.emit(0x48, 0x3d, 0x40, 0x42, 0x0f, 0x00)       // cmp rax, 1000000
	a.rel(1, "gt.store", 0x7c)                       // jl gt.store
	a.emit(0x48, 0x2d, 0x40, 0x42, 0x0f, 0x00)       // sub rax, 1000000
	a.emit(0x48, 0xff, 0x07)                         // inc qword [rdi]
	a.label("gt.store")                              //
	a.emit(0x48, 0x89, 0x47, 0x08)                   // mov [rdi+8], rax
	a.emit(0x31, 0xc0)                               // xor eax, eax       (success)
	a.label("gt.done")                               //
	a.emit(0xc3)                                     // ret
	a.label("gt.tramp")                              //
	a.moved(s)                                       // the replaced instructions
	a.rel(4, "gt.back", 0xe9)                        // jmp entry+len
	a.absolute("gt.back", s.at+len(s.orig))
}

// time: time(time_t *rdi). It reads CLOCK_REALTIME_COARSE through the
// clock_gettime stub, whose seconds are what the original time() returns
// (both read the kernel's coarse wall clock), so time and clock_gettime
// agree on the shifted second. Its trampoline is never called: it is
// there for a thread that was on a replaced instruction of time's entry.
func (a *asm) time(s site) {
	a.label("ti")
	a.emit(0x57)                         // push rdi
	a.emit(0x48, 0x83, 0xec, 0x10)       // sub rsp, 16        (a timespec; rsp 16-aligned)
	a.emit(0xbf, 0x05, 0x00, 0x00, 0x00) // mov edi, 5        (CLOCK_REALTIME_COARSE)
	a.emit(0x48, 0x89, 0xe6)             // mov rsi, rsp
	a.rel(4, "cg", 0xe8)                 // call cg
	a.emit(0x48, 0x8b, 0x04, 0x24)       // mov rax, [rsp]     (tv_sec)
	a.emit(0x48, 0x83, 0xc4, 0x10)       // add rsp, 16
	a.emit(0x5f)                         // pop rdi
	a.emit(0x48, 0x85, 0xff)             // test rdi, rdi
	a.rel(1, "ti.done", 0x74)            // jz ti.done
	a.emit(0x48, 0x89, 0x07)             // mov [rdi], rax
	a.label("ti.done")                   //
	a.emit(0xc3)                         // ret
	a.label("ti.tramp")                  //
	a.moved(s)                           // the replaced instructions
	a.rel(4, "ti.back", 0xe9)            // jmp entry+len
	a.absolute("ti.back", s.at+len(s.orig))
}

var stubLabels = map[kind][2]string{
	kindClockGettime: {"cg", "cg.tramp"},
	kindGettimeofday: {"gt", "gt.tramp"},
	kindTime:         {"ti", "ti.tramp"},
}

// assemble writes the block: header, records, and each site's stub and
// trampoline, in the order of functions (clock_gettime first: time's stub
// calls it). The offset word is left zero.
func (l *layout) assemble() error {
	a := newAsm(l.blockOff + codeStart)
	a.absolute("offset", l.blockOff+offsetWordAt)
	for _, s := range l.sites {
		switch s.kind {
		case kindClockGettime:
			a.clockGettime(s)
		case kindGettimeofday:
			a.gettimeofday(s)
		case kindTime:
			a.time(s)
		}
	}
	if err := a.resolve(); err != nil {
		return err
	}
	if codeStart+len(a.buf) > blockSize {
		return fmt.Errorf("stub: %d bytes of code do not fit the block", len(a.buf))
	}
	blk := make([]byte, blockSize)
	copy(blk, magic[:])
	binary.LittleEndian.PutUint32(blk[16:], uint32(len(l.sites)))
	for i := range l.sites {
		s := &l.sites[i]
		names := stubLabels[s.kind]
		s.stub, s.tramp = a.labels[names[0]], a.labels[names[1]]
		r := blk[headerSize+i*recordSize:]
		binary.LittleEndian.PutUint32(r[0:], uint32(s.at))
		binary.LittleEndian.PutUint32(r[4:], uint32(s.stub))
		r[8], r[9] = byte(len(s.orig)), byte(s.kind)
		copy(r[16:], s.orig)
	}
	copy(blk[codeStart:], a.buf)
	l.block = blk
	return nil
}
