package vdsoskew

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"
)

// The block is the last blockSize bytes of the vDSO mapping, which lie in
// the zero padding after the ELF image:
//
//	0   magic (8 bytes)
//	8   the offset word: seconds (int32) << 32 | nanoseconds (0..999999999)
//	16  number of records (uint32), 12 bytes reserved
//	32  maxRecords records of recordSize bytes: one per redirected function
//	128 code: for each function its stub, then its trampoline
//
// A record is what Restore needs with nothing else at hand:
//
//	0  offset of the patched bytes in the mapping (uint32)
//	4  offset of the stub they jump to (uint32)
//	8  how many bytes the patch replaces (uint8), the function's kind (uint8)
//	16 the original bytes (up to 16)
const (
	blockSize    = 512
	headerSize   = 32
	recordSize   = 32
	maxRecords   = 3
	codeStart    = headerSize + recordSize*maxRecords
	offsetWordAt = 8
	maxPatch     = 16
	jmpLen       = 5
)

var magic = [8]byte{'F', 'L', 'S', 'K', 'E', 'W', 0, 1}

// kind is which vDSO function a site is.
type kind uint8

const (
	kindClockGettime kind = 1
	kindGettimeofday kind = 2
	kindTime         kind = 3
)

// function is what the package looks for in the vDSO's symbol table. Only
// clock_gettime is required: it is how Go reads both of its clocks.
type function struct {
	kind     kind
	names    []string // the exported name first, then its alias
	required bool
}

var functions = []function{
	{kindClockGettime, []string{"__vdso_clock_gettime", "clock_gettime"}, true},
	{kindGettimeofday, []string{"__vdso_gettimeofday", "gettimeofday"}, false},
	{kindTime, []string{"__vdso_time", "time"}, false},
}

// site is one function's entry as the patch treats it. Offsets are from
// the start of the mapping, so the block's bytes are the same in every
// process on one kernel whatever address its vDSO was mapped at.
type site struct {
	kind kind
	name string
	// at is where the patched bytes begin: the entry, or just after an
	// endbr64 there (an indirect call must still land on one).
	at int
	// orig are the whole instructions the patch replaces (at least the
	// five bytes of a jmp rel32); starts are the offsets, within orig, at
	// which each of them begins (starts[0] is 0).
	orig   []byte
	starts []int
	insts  []x86asm.Inst
	// stub is the code the entry jumps to; tramp is the trampoline: orig
	// moved (each instruction the same length, a RIP-relative operand
	// aimed at the same address), then a jmp to at+len(orig).
	stub, tramp int
}

// patchBytes is what the patch writes at the site: jmp rel32 to the stub,
// and int3 over what is left of the replaced instructions, which nothing
// reaches (see the package doc).
func (s site) patchBytes() []byte {
	b := make([]byte, len(s.orig))
	b[0] = 0xe9
	binary.LittleEndian.PutUint32(b[1:], uint32(int32(s.stub-(s.at+jmpLen))))
	for i := jmpLen; i < len(b); i++ {
		b[i] = 0xcc
	}
	return b
}

// moved maps an offset on a replaced instruction other than the first to
// the same instruction in the trampoline; ok is false for any other
// offset. An offset inside an instruction is an error: no thread stops
// there.
func (s site) moved(off int) (to int, ok bool, err error) {
	if off <= s.at || off >= s.at+len(s.orig) {
		return 0, false, nil
	}
	if i := slices.Index(s.starts, off-s.at); i > 0 {
		return s.tramp + s.starts[i], true, nil
	}
	return 0, false, fmt.Errorf("%w: a thread is at %#x, inside an instruction of %s's entry", ErrUnexpectedVDSO, off, s.name)
}

// layout is the plan for one vDSO image: where the block goes, what it
// holds, and each site.
type layout struct {
	size     int
	blockOff int
	block    []byte // as this package writes it, offset word zero
	sites    []site
	skipped  map[string]string
}

// record is one record of a block in memory.
type record struct {
	at, stub int
	n        int
	kind     kind
	orig     []byte
}

// readRecords parses the block at the end of img, if there is one.
func readRecords(img []byte) (recs []record, present bool, err error) {
	off := len(img) - blockSize
	if off < 0 || !bytes.Equal(img[off:off+8], magic[:]) {
		return nil, false, nil
	}
	blk := img[off:]
	n := int(binary.LittleEndian.Uint32(blk[16:]))
	if n < 1 || n > maxRecords {
		return nil, true, fmt.Errorf("%w: the skew stub holds %d records", ErrUnexpectedVDSO, n)
	}
	for i := range n {
		r := blk[headerSize+i*recordSize:]
		rec := record{
			at:   int(binary.LittleEndian.Uint32(r[0:])),
			stub: int(binary.LittleEndian.Uint32(r[4:])),
			n:    int(r[8]),
			kind: kind(r[9]),
		}
		if rec.n < jmpLen || rec.n > maxPatch || rec.at+rec.n > off || rec.stub < off || rec.stub >= len(img) {
			return nil, true, fmt.Errorf("%w: the skew stub's record %d is malformed", ErrUnexpectedVDSO, i)
		}
		rec.orig = slices.Clone(r[16 : 16+rec.n])
		recs = append(recs, rec)
	}
	return recs, true, nil
}

// offsetWord reads the offset the block at the end of img holds.
func offsetWord(img []byte) int64 {
	return decodeOffset(binary.LittleEndian.Uint64(img[len(img)-blockSize+offsetWordAt:]))
}

// pristine is img as the kernel mapped it: the original bytes back at
// every recorded site, and the block zero.
func pristine(img []byte, recs []record) []byte {
	p := slices.Clone(img)
	for _, r := range recs {
		copy(p[r.at:], r.orig)
	}
	clear(p[len(p)-blockSize:])
	return p
}

var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// plan analyses a pristine vDSO image and lays out the block. It refuses
// anything it cannot prove the patch safe for.
func plan(img []byte) (*layout, error) {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("%w: parsing its ELF image: %v", ErrUnexpectedVDSO, err)
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%w: a %s %s vDSO (only 64-bit x86 ones are patched)", ErrUnsupported, f.Class, f.Machine)
	}
	var load *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			load = p
			break
		}
	}
	if load == nil || load.Off != 0 {
		return nil, fmt.Errorf("%w: its first loadable segment does not start the image", ErrUnexpectedVDSO)
	}
	end, err := imageEnd(img, f)
	if err != nil {
		return nil, err
	}
	l := &layout{size: len(img), blockOff: len(img) - blockSize, skipped: map[string]string{}}
	if l.blockOff < (end+15)&^15 {
		return nil, fmt.Errorf("%w: no room for the stub: the image ends at %#x and the mapping at %#x", ErrUnexpectedVDSO, end, len(img))
	}
	if slices.ContainsFunc(img[l.blockOff:], func(b byte) bool { return b != 0 }) {
		return nil, fmt.Errorf("%w: the padding after the image is not zero", ErrUnexpectedVDSO)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, fmt.Errorf("%w: reading its dynamic symbols: %v", ErrUnexpectedVDSO, err)
	}
	addrOf := map[string]int{}
	var entries []int
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		off := int(s.Value - load.Vaddr)
		if off < 0 || off >= end {
			return nil, fmt.Errorf("%w: symbol %s lies outside the image", ErrUnexpectedVDSO, s.Name)
		}
		addrOf[s.Name] = off
		entries = append(entries, off)
	}
	targets, err := branchTargets(f, load)
	if err != nil {
		return nil, err
	}
	targets = append(targets, entries...)
	for _, fn := range functions {
		s, err := findSite(img, fn, addrOf, targets)
		if err != nil {
			if fn.required {
				return nil, err
			}
			l.skipped[fn.names[0]] = err.Error()
			continue
		}
		l.sites = append(l.sites, s)
	}
	if err := l.assemble(); err != nil {
		return nil, err
	}
	return l, nil
}

// imageEnd is the end of everything the ELF file holds: headers,
// segments, sections and the section header table.
func imageEnd(img []byte, f *elf.File) (int, error) {
	if len(img) < 64 {
		return 0, fmt.Errorf("%w: image of %d bytes", ErrUnexpectedVDSO, len(img))
	}
	le := binary.LittleEndian
	end := uint64(64)
	phoff, phentsize, phnum := le.Uint64(img[0x20:]), uint64(le.Uint16(img[0x36:])), uint64(le.Uint16(img[0x38:]))
	shoff, shentsize, shnum := le.Uint64(img[0x28:]), uint64(le.Uint16(img[0x3a:])), uint64(le.Uint16(img[0x3c:]))
	end = max(end, phoff+phentsize*phnum, shoff+shentsize*shnum)
	for _, p := range f.Progs {
		end = max(end, p.Off+p.Filesz)
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS {
			end = max(end, s.Offset+s.FileSize)
		}
	}
	if end > uint64(len(img)) {
		return 0, fmt.Errorf("%w: the ELF image (%d bytes) is larger than the mapping (%d)", ErrUnexpectedVDSO, end, len(img))
	}
	return int(end), nil
}

// branchTargets decodes the vDSO's code from start to end and returns
// the target of every relative jump and call in it, as offsets in the
// image.
func branchTargets(f *elf.File, load *elf.Prog) ([]int, error) {
	text := f.Section(".text")
	if text == nil {
		return nil, fmt.Errorf("%w: no .text section", ErrUnexpectedVDSO)
	}
	code, err := text.Data()
	if err != nil {
		return nil, fmt.Errorf("%w: reading .text: %v", ErrUnexpectedVDSO, err)
	}
	base := int(text.Addr - load.Vaddr)
	var out []int
	for pc := 0; pc < len(code); {
		inst, err := x86asm.Decode(code[pc:], 64)
		if err != nil || inst.Len == 0 {
			pc++ // padding or data between functions
			continue
		}
		for _, a := range inst.Args {
			if rel, ok := a.(x86asm.Rel); ok {
				out = append(out, base+pc+inst.Len+int(rel))
			}
		}
		pc += inst.Len
	}
	return out, nil
}

// allowedInPrologue are the operations a replaced instruction may be:
// none transfers control, so each does the same wherever it runs, once a
// RIP-relative operand is aimed at the same address.
var allowedInPrologue = map[x86asm.Op]bool{
	x86asm.PUSH: true, x86asm.MOV: true, x86asm.LEA: true, x86asm.SUB: true,
	x86asm.AND: true, x86asm.CMP: true, x86asm.TEST: true,
}

// findSite resolves one function and checks its entry can be replaced.
func findSite(img []byte, fn function, addrOf map[string]int, targets []int) (site, error) {
	at, ok := addrOf[fn.names[0]]
	name := fn.names[0]
	if !ok {
		if at, ok = addrOf[fn.names[1]]; !ok {
			return site{}, fmt.Errorf("%w: no %s in its symbol table", ErrUnexpectedVDSO, fn.names[0])
		}
		name = fn.names[1]
	}
	if alias, ok := addrOf[fn.names[1]]; ok && alias != at {
		return site{}, fmt.Errorf("%w: %s at %#x and %s at %#x differ", ErrUnexpectedVDSO, fn.names[0], at, fn.names[1], alias)
	}
	s := site{kind: fn.kind, name: name, at: at}
	if bytes.HasPrefix(img[at:], endbr64) {
		s.at += len(endbr64)
	}
	for n := 0; n < jmpLen; {
		inst, err := x86asm.Decode(img[s.at+n:], 64)
		if err != nil {
			return site{}, fmt.Errorf("%w: %s: undecodable bytes % x at %#x", ErrUnexpectedPrologue, name, img[s.at+n:min(s.at+n+8, len(img))], s.at+n)
		}
		text := x86asm.GNUSyntax(inst, uint64(s.at+n), nil)
		if !allowedInPrologue[inst.Op] {
			return site{}, fmt.Errorf("%w: %s: %q at %#x is not an instruction the patch moves", ErrUnexpectedPrologue, name, text, s.at+n)
		}
		for _, a := range inst.Args {
			if _, isRel := a.(x86asm.Rel); isRel {
				return site{}, fmt.Errorf("%w: %s: %q at %#x is relative", ErrUnexpectedPrologue, name, text, s.at+n)
			}
		}
		if inst.PCRel != 0 && inst.PCRel != 4 {
			return site{}, fmt.Errorf("%w: %s: %q at %#x has a %d-byte RIP-relative displacement", ErrUnexpectedPrologue, name, text, s.at+n, inst.PCRel)
		}
		s.starts = append(s.starts, n)
		s.insts = append(s.insts, inst)
		n += inst.Len
		s.orig = img[s.at : s.at+n]
	}
	if len(s.orig) > maxPatch {
		return site{}, fmt.Errorf("%w: %s: its first instructions take %d bytes (at most %d are replaced)", ErrUnexpectedPrologue, name, len(s.orig), maxPatch)
	}
	s.orig = slices.Clone(s.orig)
	if s.at/4096 != (s.at+len(s.orig)-1)/4096 {
		return site{}, fmt.Errorf("%w: %s: the bytes to replace cross a page boundary, so one write could not replace them all at once", ErrUnexpectedVDSO, name)
	}
	for _, t := range targets {
		if t > s.at && t < s.at+len(s.orig) {
			return site{}, fmt.Errorf("%w: %s: code or a symbol at %#x leads into the bytes the patch would replace", ErrUnexpectedVDSO, name, t)
		}
	}
	return s, nil
}

// encodeOffset packs an offset into the stub's data word: whole seconds
// (rounded down) in the high half, the nanoseconds left (0..999999999) in
// the low half, so the stub needs no division.
func encodeOffset(ns int64) uint64 {
	sec, nsec := ns/1e9, ns%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	return uint64(uint32(int32(sec)))<<32 | uint64(uint32(nsec))
}

func decodeOffset(w uint64) int64 {
	return int64(int32(w>>32))*1e9 + int64(uint32(w))
}
