package vdsoskew

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// savedContextScan is how far above a stopped thread's stack pointer the
// patch looks for saved signal contexts: a signal frame lies above the
// handler running on it, on the same stack (Go's signal stacks are 32 KiB).
const savedContextScan = 256 << 10

func openMem(pid int, write bool) (*os.File, error) {
	flag := os.O_RDONLY
	if write {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), flag, 0)
	if err != nil {
		return nil, procErr(pid, "opening its memory", err)
	}
	return f, nil
}

func readAt(pid int, mem *os.File, addr uint64, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := mem.ReadAt(b, int64(addr)); err != nil {
		return nil, procErr(pid, fmt.Sprintf("reading %d bytes at %#x", n, addr), err)
	}
	return b, nil
}

func writeAt(pid int, mem *os.File, addr uint64, b []byte) error {
	if _, err := mem.WriteAt(b, int64(addr)); err != nil {
		return procErr(pid, fmt.Sprintf("writing %d bytes at %#x", len(b), addr), err)
	}
	return nil
}

// vdsoState is a process's vDSO as read now.
type vdsoState struct {
	m       mapping
	img     []byte
	recs    []record
	present bool // the block is there
}

func readVDSO(pid int, mem *os.File) (*vdsoState, error) {
	m, err := vdsoMapping(pid)
	if err != nil {
		return nil, err
	}
	img, err := readAt(pid, mem, m.start, int(m.end-m.start))
	if err != nil {
		return nil, err
	}
	recs, present, err := readRecords(img)
	if err != nil {
		return nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	return &vdsoState{m: m, img: img, recs: recs, present: present}, nil
}

// recordPatch is what the record's site holds while its entry jumps to
// the stub (as site.patchBytes writes it).
func recordPatch(r record) []byte {
	return site{at: r.at, stub: r.stub, orig: make([]byte, r.n)}.patchBytes()
}

func (v *vdsoState) redirected(r record) bool {
	return bytes.Equal(v.img[r.at:r.at+r.n], recordPatch(r))
}

// plan lays the block out for this image and checks that what is in
// memory is either untouched or exactly what this package writes.
func (v *vdsoState) plan(pid int) (*layout, map[kind]bool, error) {
	var l *layout
	var err error
	if v.present {
		l, err = plan(pristine(v.img, v.recs))
	} else {
		l, err = plan(v.img)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("pid %d: %w", pid, err)
	}
	if v.present {
		got := slices.Clone(v.img[l.blockOff:])
		clear(got[offsetWordAt : offsetWordAt+8])
		if !bytes.Equal(got, l.block) {
			return nil, nil, fmt.Errorf("pid %d: %w: its vDSO carries a skew stub of another layout (Restore still removes it)", pid, ErrUnexpectedVDSO)
		}
	}
	on := map[kind]bool{}
	for _, s := range l.sites {
		cur := v.img[s.at : s.at+len(s.orig)]
		switch {
		case bytes.Equal(cur, s.patchBytes()):
			on[s.kind] = true
		case bytes.Equal(cur, s.orig):
		default:
			return nil, nil, fmt.Errorf("pid %d: %w: %s's entry holds % x, neither its original bytes nor the patch", pid, ErrUnexpectedVDSO, s.name, cur)
		}
	}
	return l, on, nil
}

// allowed refuses the processes this package never touches.
func allowed(pid int) error {
	switch {
	case pid <= 1:
		return fmt.Errorf("pid %d: %w", pid, ErrNotAllowed)
	case pid == os.Getpid() || pid == os.Getppid():
		return fmt.Errorf("pid %d: %w: it is the program asking (or its helper)", pid, ErrNotAllowed)
	}
	st, err := status(pid)
	if err != nil {
		return err
	}
	if st["Tgid"] != fmt.Sprint(pid) {
		return fmt.Errorf("pid %d: %w: it is a thread of process %s, not a process", pid, ErrNotAllowed, st["Tgid"])
	}
	_, err = vdsoMapping(pid)
	return err
}

// untraced refuses a process another tracer holds, before this package
// stops anything (seizing it would fail on its first thread anyway).
func untraced(pid int) error {
	st, err := status(pid)
	if err != nil {
		return err
	}
	if t := st["TracerPid"]; t != "" && t != "0" {
		return fmt.Errorf("pid %d: %w (by %s)", pid, ErrTraced, tracerName(t))
	}
	return nil
}

// tracerName names the process of the tracing thread TracerPid names.
func tracerName(tid string) string {
	if st, err := os.ReadFile("/proc/" + tid + "/status"); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(line, "Tgid:"); ok && strings.TrimSpace(v) != tid {
				return fmt.Sprintf("pid %s, thread %s", strings.TrimSpace(v), tid)
			}
		}
	}
	return "pid " + tid
}

func shiftOne(pid int, offset time.Duration) (Patch, error) {
	if err := allowed(pid); err != nil {
		return Patch{}, err
	}
	mem, err := openMem(pid, true)
	if err != nil {
		return Patch{}, err
	}
	defer mem.Close()
	// Look before stopping anything, so that a refusal leaves the process
	// untouched and unstopped; then look again once nothing runs.
	v, err := readVDSO(pid, mem)
	if err != nil {
		return Patch{}, err
	}
	if _, _, err := v.plan(pid); err != nil {
		return Patch{}, err
	}
	if err := untraced(pid); err != nil {
		return Patch{}, err
	}
	st, err := stopAll(pid)
	if err != nil {
		return Patch{}, err
	}
	defer st.release()
	if v, err = readVDSO(pid, mem); err != nil {
		return Patch{}, err
	}
	l, on, err := v.plan(pid)
	if err != nil {
		return Patch{}, err
	}
	base := v.m.start
	p := Patch{PID: pid, Offset: offset, Threads: len(st.threads), Skipped: l.skipped}
	if !v.present {
		// Into zero padding nothing refers to: no thread can be there.
		if err := writeAt(pid, mem, base+uint64(l.blockOff), l.block); err != nil {
			return Patch{}, err
		}
	}
	word := make([]byte, 8)
	binary.LittleEndian.PutUint64(word, encodeOffset(offset.Nanoseconds()))
	if err := writeAt(pid, mem, base+uint64(l.blockOff+offsetWordAt), word); err != nil {
		return Patch{}, err
	}
	for _, s := range l.sites {
		p.Functions = append(p.Functions, s.name)
		if on[s.kind] {
			continue
		}
		n, err := moveThreads(st, mem, base, s)
		if err != nil {
			return Patch{}, err
		}
		p.Moved += n
		if err := writeAt(pid, mem, base+uint64(s.at), s.patchBytes()); err != nil {
			return Patch{}, err
		}
		p.Redirected = true
	}
	if err := verify(pid, mem, l, offset); err != nil {
		return Patch{}, err
	}
	return p, nil
}

// moveThreads moves every thread that would resume on a replaced
// instruction other than the first (in its registers, or in a signal
// context saved on its stack) to the same instruction in the trampoline.
func moveThreads(st *stopped, mem *os.File, base uint64, s site) (int, error) {
	moved := 0
	for _, t := range st.threads {
		to, ok, err := s.moved(int(t.regs.Rip - base))
		if err != nil {
			return 0, fmt.Errorf("pid %d: thread %d: %w", st.pid, t.tid, err)
		}
		if ok {
			t.regs.Rip = base + uint64(to)
			if err := st.setRegs(t); err != nil {
				return 0, err
			}
			moved++
		}
	}
	maps, err := readMaps(st.pid)
	if err != nil {
		return 0, err
	}
	lo, hi := base+uint64(s.at)+1, base+uint64(s.at+len(s.orig))
	for _, t := range st.threads {
		m, ok := containing(maps, t.regs.Rsp)
		if !ok {
			continue
		}
		from := t.regs.Rsp &^ 7
		to := min(m.end, from+savedContextScan)
		b, err := readAt(st.pid, mem, from, int(to-from))
		if err != nil {
			return 0, err
		}
		for i := 0; i+8 <= len(b); i += 8 {
			w := binary.LittleEndian.Uint64(b[i:])
			if w < lo || w >= hi {
				continue
			}
			// A word pointing at the start of a replaced instruction
			// is a saved resume point; any other is not one, since no
			// thread stops inside an instruction.
			dest, ok, _ := s.moved(int(w - base))
			if !ok {
				continue
			}
			nw := make([]byte, 8)
			binary.LittleEndian.PutUint64(nw, base+uint64(dest))
			if err := writeAt(st.pid, mem, from+uint64(i), nw); err != nil {
				return 0, err
			}
			moved++
		}
	}
	return moved, nil
}

// verify reads back what the patch wrote.
func verify(pid int, mem *os.File, l *layout, offset time.Duration) error {
	v, err := readVDSO(pid, mem)
	if err != nil {
		return err
	}
	if !v.present || offsetWord(v.img) != encodeAndBack(offset) {
		return fmt.Errorf("pid %d: the stub did not read back as written", pid)
	}
	for _, s := range l.sites {
		if !bytes.Equal(v.img[s.at:s.at+len(s.orig)], s.patchBytes()) {
			return fmt.Errorf("pid %d: %s's entry did not read back as written", pid, s.name)
		}
	}
	return nil
}

func encodeAndBack(d time.Duration) int64 { return decodeOffset(encodeOffset(d.Nanoseconds())) }

// restoreOne works from the records in the process's own vDSO alone.
func restoreOne(pid int) error {
	if err := allowed(pid); err != nil {
		return err
	}
	mem, err := openMem(pid, true)
	if err != nil {
		return err
	}
	defer mem.Close()
	v, err := readVDSO(pid, mem)
	if err != nil {
		return err
	}
	if !v.present || !v.needsRestore() {
		return nil
	}
	if err := untraced(pid); err != nil {
		return err
	}
	st, err := stopAll(pid)
	if err != nil {
		return err
	}
	defer st.release()
	if v, err = readVDSO(pid, mem); err != nil {
		return err
	}
	base := v.m.start
	// Offset zero first: a thread inside a stub finishes its call
	// unshifted. The stubs stay where they are, for the same reason.
	if err := writeAt(pid, mem, base+uint64(len(v.img)-blockSize+offsetWordAt), make([]byte, 8)); err != nil {
		return err
	}
	for _, r := range v.recs {
		if !v.redirected(r) {
			if !bytes.Equal(v.img[r.at:r.at+r.n], r.orig) {
				return fmt.Errorf("pid %d: %w: the entry at %#x holds % x, neither its original bytes nor the patch", pid, ErrUnexpectedVDSO, r.at, v.img[r.at:r.at+r.n])
			}
			continue
		}
		// While redirected the only instruction there is the jmp at
		// r.at: no thread can be anywhere else in those bytes.
		for _, t := range st.threads {
			if off := int(t.regs.Rip - base); off > r.at && off < r.at+r.n {
				return fmt.Errorf("pid %d: %w: thread %d is at %#x, inside the patched entry", pid, ErrUnexpectedVDSO, t.tid, off)
			}
		}
		if err := writeAt(pid, mem, base+uint64(r.at), r.orig); err != nil {
			return err
		}
	}
	after, err := readVDSO(pid, mem)
	if err != nil {
		return err
	}
	if after.needsRestore() {
		return fmt.Errorf("pid %d: the original entry bytes did not read back as written", pid)
	}
	return nil
}

// needsRestore reports whether an entry still jumps to a stub or the
// offset is not zero.
func (v *vdsoState) needsRestore() bool {
	if !v.present {
		return false
	}
	if offsetWord(v.img) != 0 {
		return true
	}
	return slices.ContainsFunc(v.recs, v.redirected)
}

func patched(pid int) (time.Duration, bool, error) {
	if pid <= 0 {
		return 0, false, fmt.Errorf("pid %d: %w", pid, ErrNotAllowed)
	}
	mem, err := openMem(pid, false)
	if err != nil {
		return 0, false, err
	}
	defer mem.Close()
	v, err := readVDSO(pid, mem)
	if err != nil {
		return 0, false, err
	}
	if !v.present {
		return 0, false, nil
	}
	active := false
	for _, r := range v.recs {
		if r.kind == kindClockGettime {
			active = v.redirected(r)
		}
	}
	return time.Duration(offsetWord(v.img)), active, nil
}
