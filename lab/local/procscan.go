package local

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

// netnsInode is the inode that identifies a named namespace.
func netnsInode(name string) (uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(layout.NetnsPath(name), &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

func allPids() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

func pidNetnsInode(pid int) (uint64, bool) {
	l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return 0, false
	}
	l = strings.TrimSuffix(strings.TrimPrefix(l, "net:["), "]")
	n, err := strconv.ParseUint(l, 10, 64)
	return n, err == nil
}

// pidInCgroup reports whether pid is in the named top-level cgroup (or
// below it) in any hierarchy.
func pidInCgroup(pid int, name string) bool {
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

// hostProcesses lists the live processes of one host.
func hostProcesses(lab, host string) []int {
	ino, haveNS := netnsInode(layout.NetnsName(lab, host))
	cg := layout.CgroupName(lab, host)
	var out []int
	for _, pid := range allPids() {
		if gone(pid) {
			continue // a zombie waiting for its parent holds nothing
		}
		if haveNS {
			if n, ok := pidNetnsInode(pid); ok && n == ino {
				out = append(out, pid)
				continue
			}
		}
		if pidInCgroup(pid, cg) {
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

// killHostProcesses SIGKILLs every process of a host until none is left:
// a supervisor (kubelet, containerd) may start more while it is killed.
// The sockets of killed container shims, which live in a machine-wide
// directory, are removed too.
func killHostProcesses(ctx context.Context, lab, host string) error {
	deadline := time.Now().Add(30 * time.Second)
	sockets := map[string]bool{}
	defer func() {
		for s := range sockets {
			_ = os.Remove(s)
		}
	}()
	for {
		pids := hostProcesses(lab, host)
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
			if gone(pid) {
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
