package vdsoskew

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// mapping is one line of /proc/<pid>/maps.
type mapping struct {
	start, end uint64
	perms      string
	name       string
}

func readMaps(pid int) ([]mapping, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, procErr(pid, "reading its maps", err)
	}
	var out []mapping
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		m := mapping{start: start, end: end, perms: f[1]}
		if len(f) >= 6 {
			m.name = strings.Join(f[5:], " ")
		}
		out = append(out, m)
	}
	return out, nil
}

// vdsoMapping finds the process's [vdso].
func vdsoMapping(pid int) (mapping, error) {
	ms, err := readMaps(pid)
	if err != nil {
		return mapping{}, err
	}
	for _, m := range ms {
		if m.name == "[vdso]" {
			return m, nil
		}
	}
	return mapping{}, fmt.Errorf("pid %d: %w: no [vdso] in its maps (a kernel thread, or a kernel booted with vdso=0)", pid, ErrNotAllowed)
}

// containing returns the mapping holding addr.
func containing(ms []mapping, addr uint64) (mapping, bool) {
	for _, m := range ms {
		if addr >= m.start && addr < m.end {
			return m, true
		}
	}
	return mapping{}, false
}

// procErr names what failed on pid, and reads a vanished process as ErrGone.
func procErr(pid int, doing string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errESRCH) {
		return fmt.Errorf("pid %d: %s: %w (%v)", pid, doing, ErrGone, err)
	}
	return fmt.Errorf("pid %d: %s: %w", pid, doing, err)
}

// status reads fields of /proc/<pid>/status.
func status(pid int) (map[string]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, procErr(pid, "reading its status", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// tasks lists the process's threads.
func tasks(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, procErr(pid, "listing its threads", err)
	}
	var out []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, tid)
		}
	}
	return out, nil
}
