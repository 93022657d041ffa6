// Package procs finds a local lab's processes from the kernel: a
// process's state and start time from /proc, and every process of a host,
// in its network namespace or its cgroup tree, found without trusting any
// record the lab wrote.
package procs

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faultline/faultline/lab/local/internal/layout"
)

// A host's processes are found from the kernel, not from what the lab
// recorded: everything in its network namespace (its services and the
// container shims they started) and everything in its cgroup tree (its
// pods, which live in their own network namespaces).

// NamedNetnsInode is the inode that identifies a named namespace.
func NamedNetnsInode(name string) (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(layout.NetnsPath(name), &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// All lists every process on the machine but this one.
func All() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// NetnsInode is the inode of the network namespace a process is in.
func NetnsInode(pid int) (uint64, bool) {
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return 0, false
	}
	l = strings.TrimSuffix(strings.TrimPrefix(l, "net:["), "]")
	n, err := strconv.ParseUint(l, 10, 64)
	return n, err == nil
}

// inCgroup reports whether pid is in the named top-level cgroup (or
// below it) in any hierarchy.
func inCgroup(pid int, name string) bool {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	top := "/" + name
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[2] == top || strings.HasPrefix(parts[2], top+"/") {
			return true
		}
	}
	return false
}

// OfHost lists the live processes of one host.
func OfHost(lab, host string) []int {
	ino, haveNS := NamedNetnsInode(layout.NetnsName(lab, host))
	cg := layout.CgroupName(lab, host)
	var out []int
	for _, pid := range All() {
		if Gone(pid) {
			continue // a zombie waiting for its parent holds nothing
		}
		if haveNS {
			if n, ok := NetnsInode(pid); ok && n == ino {
				out = append(out, pid)
				continue
			}
		}
		if inCgroup(pid, cg) {
			out = append(out, pid)
		}
	}
	return out
}

// shimSocketRoot is where containerd shims put their sockets whatever the
// containerd's own state dir; it is shared by every containerd on the
// machine.
const shimSocketRoot = "/run/containerd/s"

// shimSocket returns the socket a containerd shim process serves on,
// derived from its command line as containerd derives it
// (sha256 of <containerd address>/<namespace>/<id>, and of
// <…>/<id>/debug for the debug socket).
func shimSocket(pid int) (string, bool) {
	s, ok := shimSocketParts(pid)
	if !ok {
		return "", false
	}
	return shimSocketPath(s[0], s[1], s[2]), true
}

// shimSocketParts returns a shim's containerd address, namespace and id.
func shimSocketParts(pid int) ([3]string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return [3]string{}, false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
		return [3]string{}, false
	}
	var ns, id, addr string
	for i := 1; i+1 < len(args); i++ {
		switch args[i] {
		case "-namespace", "--namespace":
			ns = args[i+1]
		case "-id", "--id":
			id = args[i+1]
		case "-address", "--address":
			addr = args[i+1]
		}
	}
	if ns == "" || id == "" || addr == "" {
		return [3]string{}, false
	}
	return [3]string{addr, ns, id}, true
}

func shimDebugSocket(pid int) (string, bool) {
	s, ok := shimSocketParts(pid)
	if !ok {
		return "", false
	}
	return shimSocketPath(s[0], s[1], filepath.Join(s[2], "debug")), true
}

func shimSocketPath(address, ns, id string) string {
	sum := sha256.Sum256([]byte(filepath.Join(address, ns, id)))
	return filepath.Join(shimSocketRoot, hex.EncodeToString(sum[:]))
}

// KillHost SIGKILLs every process of a host until none is left:
// a supervisor (kubelet, containerd) may start more while it is killed.
// The sockets of killed container shims, which live in a machine-wide
// directory, are removed too.
func KillHost(ctx context.Context, lab, host string) error {
	deadline := time.Now().Add(30 * time.Second)
	sockets := map[string]bool{}
	defer func() {
		for s := range sockets {
			_ = os.Remove(s)
		}
	}()
	for {
		pids := OfHost(lab, host)
		for _, pid := range pids {
			if s, ok := shimSocket(pid); ok {
				sockets[s] = true
			}
			if s, ok := shimDebugSocket(pid); ok {
				sockets[s] = true
			}
		}
		alive := 0
		for _, pid := range pids {
			if Gone(pid) {
				continue
			}
			alive++
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if alive == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("host %s: %d processes survive SIGKILL: %v", host, alive, pids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stat returns a process's state letter and start time.
func Stat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return f[0][0], start, nil
}

// Gone reports whether a process no longer runs (absent or a zombie).
func Gone(pid int) bool {
	st, _, err := Stat(pid)
	return err != nil || st == 'Z' || st == 'X'
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's start time: 100
// on every Linux architecture the lab runs on (the kernel fixes it for
// user space whatever its internal HZ).
const clockTicks = 100

// Started returns when a process started, from its start time in
// clock ticks since boot and the boot time in /proc/stat.
func Started(pid int) (time.Time, error) {
	_, ticks, err := Stat(pid)
	if err != nil {
		return time.Time{}, err
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat: btime: %w", err)
			}
			return time.Unix(boot, 0).Add(time.Duration(ticks) * time.Second / clockTicks).UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("/proc/stat: no btime")
}

// RSS is a process's resident memory in bytes.
func RSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}
