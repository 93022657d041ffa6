package vdsoskew

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/arch/x86/x86asm"
)

// ownVDSO is this test process's vDSO image, as the kernel mapped it.
func ownVDSO(t *testing.T) []byte {
	t.Helper()
	mem, err := openMem(os.Getpid(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	v, err := readVDSO(os.Getpid(), mem)
	if err != nil {
		t.Fatal(err)
	}
	if v.present {
		t.Fatal("this test process's own vDSO carries a skew stub")
	}
	return v.img
}

func siteOf(t *testing.T, l *layout, k kind) site {
	t.Helper()
	for _, s := range l.sites {
		if s.kind == k {
			return s
		}
	}
	t.Fatalf("no site of kind %d (skipped: %v)", k, l.skipped)
	return site{}
}

// disassemble decodes code placed at mapping offset org, one line per
// instruction in GNU syntax (as objdump prints it), targets as mapping
// offsets.
func disassemble(t *testing.T, code []byte, org int) []string {
	t.Helper()
	var out []string
	for pc := 0; pc < len(code); {
		inst, err := x86asm.Decode(code[pc:], 64)
		if err != nil {
			t.Fatalf("undecodable at %#x: % x", org+pc, code[pc:min(pc+8, len(code))])
		}
		out = append(out, x86asm.GNUSyntax(inst, uint64(org+pc), nil))
		pc += inst.Len
	}
	return normalise(out)
}

// TestStubsOnThisKernel lays the block out for this machine's vDSO and
// reads the machine code back: the stubs say what the package doc says,
// every trampoline is its function's first instructions, each the same
// length and aimed at the same addresses, followed by a jmp back to the
// first byte not replaced, and each entry's patch is a jmp to its stub.
func TestStubsOnThisKernel(t *testing.T) {
	img := ownVDSO(t)
	l, err := plan(img)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(l.sites) != 3 {
		t.Errorf("%d sites, skipped %v; want clock_gettime, gettimeofday and time", len(l.sites), l.skipped)
	}
	if !bytes.Equal(l.block[:8], magic[:]) || binary.LittleEndian.Uint64(l.block[offsetWordAt:]) != 0 {
		t.Errorf("block header % x", l.block[:16])
	}
	for _, s := range l.sites {
		patch := disassemble(t, s.patchBytes()[:jmpLen], s.at)
		if want := []string{"jmp " + hex(s.stub)}; !slices.Equal(patch, want) {
			t.Errorf("%s: patch decodes as %q, want %q", s.name, patch, want)
		}
		for _, b := range s.patchBytes()[jmpLen:] {
			if b != 0xcc {
				t.Errorf("%s: patch % x: filler is not int3", s.name, s.patchBytes())
			}
		}
		trampLen := len(s.orig) + jmpLen
		tramp := l.block[s.tramp-l.blockOff : s.tramp-l.blockOff+trampLen]
		for i, inst := range s.insts {
			got, err := x86asm.Decode(tramp[s.starts[i]:], 64)
			if err != nil || got.Len != inst.Len || got.Op != inst.Op {
				t.Fatalf("%s: trampoline instruction %d: %v %v, want %v", s.name, i, got, err, inst)
			}
			from, to := s.at+s.starts[i], s.tramp+s.starts[i]
			if g, w := x86asm.GNUSyntax(got, uint64(to), nil), x86asm.GNUSyntax(inst, uint64(from), nil); inst.PCRel == 0 && g != w {
				t.Errorf("%s: moved %q, want %q", s.name, g, w)
			}
			if inst.PCRel == 4 {
				target := func(in x86asm.Inst, b []byte, at int) int {
					return at + in.Len + int(int32(binary.LittleEndian.Uint32(b[in.PCRelOff:])))
				}
				if g, w := target(got, tramp[s.starts[i]:], to), target(inst, s.orig[s.starts[i]:], from); g != w {
					t.Errorf("%s: moved RIP-relative operand aims at %#x, the original at %#x", s.name, g, w)
				}
			}
		}
		back := disassemble(t, tramp[len(s.orig):], s.tramp+len(s.orig))
		if want := []string{"jmp " + hex(s.at+len(s.orig))}; !slices.Equal(back, want) {
			t.Errorf("%s: trampoline ends %q, want %q", s.name, back, want)
		}
	}

	cg := siteOf(t, l, kindClockGettime)
	off := hex(l.blockOff + offsetWordAt)
	code := l.block[cg.stub-l.blockOff : cg.tramp-l.blockOff]
	want := []string{"cmp $0x0,%edi", "je " + hex(cg.tramp+len(cg.orig)+jmpLen), "cmp $0x5,%edi", "je " + hex(cg.tramp+len(cg.orig)+jmpLen)}
	if got := disassemble(t, code, cg.stub); !slices.Equal(got, want) {
		t.Errorf("clock_gettime stub dispatch:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	skew := cg.tramp + len(cg.orig) + jmpLen
	gt := siteOf(t, l, kindGettimeofday)
	got := disassemble(t, l.block[skew-l.blockOff:gt.stub-l.blockOff], skew)
	for i := range got {
		// RIP-relative loads print their displacement, not the target.
		if strings.Contains(got[i], "(%rip)") {
			got[i] = "load offset"
		}
	}
	want = []string{
		"push %rsi", "call " + hex(cg.tramp), "pop %rsi", "test %eax,%eax", "jne " + hex(gt.stub-1),
		"load offset", "mov %rdx,%rcx", "sar $0x20,%rcx", "mov %edx,%edx",
		"add %rcx,(%rsi)", "add 0x8(%rsi),%rdx", "cmp $0x3b9aca00,%rdx", "jl " + hex(gt.stub-5),
		"sub $0x3b9aca00,%rdx", "incq (%rsi)", "mov %rdx,0x8(%rsi)", "ret",
	}
	if !slices.Equal(got, want) {
		t.Errorf("clock_gettime skew path:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Every RIP-relative load of a stub reads the offset word.
	for pc := l.blockOff + codeStart; pc < len(img); {
		inst, err := x86asm.Decode(l.block[pc-l.blockOff:], 64)
		if err != nil || inst.Op == 0 || (inst.Op == x86asm.ADD && inst.Len == 2 && l.block[pc-l.blockOff] == 0) {
			break
		}
		if inst.Op == x86asm.MOV && inst.PCRel == 4 {
			d := int(int32(binary.LittleEndian.Uint32(l.block[pc-l.blockOff+inst.PCRelOff:])))
			if hex(pc+inst.Len+d) != off {
				t.Errorf("the load at %#x reads %#x, not the offset word %s", pc, pc+inst.Len+d, off)
			}
		}
		pc += inst.Len
	}
}

// normalise prints calls and jumps as objdump's GNU syntax does without
// the q suffix, which x86asm adds.
func normalise(in []string) []string {
	out := slices.Clone(in)
	for i, s := range out {
		for _, p := range [][2]string{{"callq ", "call "}, {"retq", "ret"}, {"jmpq ", "jmp "}} {
			s = strings.Replace(s, p[0], p[1], 1)
		}
		out[i] = s
	}
	return out
}

func hex(off int) string { return fmt.Sprintf("%#x", off) }

func TestOffsetWord(t *testing.T) {
	for _, d := range []time.Duration{0, time.Hour, -30 * time.Minute, time.Hour + 999999999, -(30*time.Minute + 700*time.Millisecond), -1, 1, MaxOffset, -MaxOffset} {
		w := encodeOffset(d.Nanoseconds())
		if got := decodeOffset(w); got != d.Nanoseconds() {
			t.Errorf("%s: word %#x decodes to %s", d, w, time.Duration(got))
		}
		if ns := uint32(w); ns >= 1e9 {
			t.Errorf("%s: nanoseconds %d not below a second", d, ns)
		}
	}
	if got := int32(encodeOffset((-1500 * time.Millisecond).Nanoseconds()) >> 32); got != -2 {
		t.Errorf("-1.5s: seconds %d, want -2 (rounded down, so the nanoseconds are positive)", got)
	}
}

// TestPlanRefuses changes a copy of this machine's vDSO the ways another
// kernel might differ, and checks that each is refused with its reason.
func TestPlanRefuses(t *testing.T) {
	img := ownVDSO(t)
	l, err := plan(img)
	if err != nil {
		t.Fatal(err)
	}
	cg, gt := siteOf(t, l, kindClockGettime), siteOf(t, l, kindGettimeofday)
	for _, c := range []struct {
		name   string
		change func([]byte)
		want   []error
		text   string
	}{
		{"a call first", func(b []byte) { copy(b[cg.at:], []byte{0xe8, 0, 0, 0, 0}) }, []error{ErrUnexpectedPrologue}, "callq"},
		{"a breakpoint first", func(b []byte) { b[cg.at] = 0xcc }, []error{ErrUnexpectedPrologue}, "int3"},
		{"padding not zero", func(b []byte) { b[len(b)-1] = 1 }, []error{ErrUnexpectedVDSO}, "padding"},
		{"a jump into the replaced bytes", func(b []byte) {
			// Overwrite gettimeofday's entry with a jmp to clock_gettime+1.
			b[gt.at] = 0xe9
			binary.LittleEndian.PutUint32(b[gt.at+1:], uint32(int32(cg.at+1-(gt.at+5))))
		}, []error{ErrUnexpectedVDSO}, "leads into"},
		{"a 32-bit image", func(b []byte) { b[4] = 1 }, []error{ErrUnexpectedVDSO, ErrUnsupported}, ""},
	} {
		b := slices.Clone(img)
		c.change(b)
		_, err := plan(b)
		if err == nil || !slices.ContainsFunc(c.want, func(w error) bool { return errors.Is(err, w) }) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: plan = %v, want %v saying %q", c.name, err, c.want, c.text)
		}
	}
	// An optional function that cannot be patched is skipped, not fatal.
	b := slices.Clone(img)
	b[gt.at] = 0xcc
	l2, err := plan(b)
	if err != nil || len(l2.sites) != 2 || !strings.Contains(l2.skipped[gt.name], "unexpected vDSO prologue") {
		t.Errorf("gettimeofday with a breakpoint: %v, %d sites, skipped %v", err, len(l2.sites), l2.skipped)
	}
}

// TestRecordsGiveThePristineImageBack patches a copy of the image as the
// helper does and reads what Restore needs back from the copy alone.
func TestRecordsGiveThePristineImageBack(t *testing.T) {
	img := ownVDSO(t)
	l, err := plan(img)
	if err != nil {
		t.Fatal(err)
	}
	patched := slices.Clone(img)
	copy(patched[l.blockOff:], l.block)
	binary.LittleEndian.PutUint64(patched[l.blockOff+offsetWordAt:], encodeOffset(int64(90*time.Second)))
	for _, s := range l.sites {
		copy(patched[s.at:], s.patchBytes())
	}
	recs, present, err := readRecords(patched)
	if err != nil || !present || len(recs) != len(l.sites) {
		t.Fatalf("records: %v %v %d", err, present, len(recs))
	}
	v := &vdsoState{img: patched, recs: recs, present: true}
	for _, r := range recs {
		if !v.redirected(r) {
			t.Errorf("record at %#x does not read as redirected", r.at)
		}
	}
	if got := time.Duration(offsetWord(patched)); got != 90*time.Second {
		t.Errorf("offset word reads %s", got)
	}
	if !bytes.Equal(pristine(patched, recs), img) {
		t.Error("the records do not give the original image back")
	}
	l2, on, err := v.plan(0)
	if err != nil || len(on) != len(l.sites) || !bytes.Equal(l2.block, l.block) {
		t.Errorf("planning the patched image again: %v, redirected %v", err, on)
	}
	if _, present, _ := readRecords(img); present {
		t.Error("the pristine image reads as carrying a stub")
	}
}
