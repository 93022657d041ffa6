// Package cgroups makes and removes a local lab node's cgroup root, the
// cgroupRoot its kubelet puts its pods under, in every hierarchy.
package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Roots are the mounted cgroup hierarchies (v1 controllers, the
// named systemd one, and the unified v2 tree).
func Roots() []string {
	ents, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range ents {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.procs"); err == nil {
			out = append(out, "/sys/fs/cgroup")
		}
	}
	return out
}

// CreateNode makes the node's cgroup root in every hierarchy, so
// that kubelet's cgroupRoot exists wherever it looks; cpuset needs its
// cpus and mems filled in before anything can join it.
func CreateNode(name string) error {
	for _, root := range Roots() {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", p, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				continue
			}
			if cur, _ := os.ReadFile(filepath.Join(p, f)); strings.TrimSpace(string(cur)) != "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(p, f), parent, 0o644); err != nil {
				return fmt.Errorf("cgroup %s: %s: %w", p, f, err)
			}
		}
	}
	return nil
}

// RemoveNode removes the node's cgroup trees, deepest first (cgroup
// directories can only be removed empty, with rmdir).
func RemoveNode(name string) error {
	var errs []string
	for _, root := range Roots() {
		top := filepath.Join(root, name)
		if _, err := os.Stat(top); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			var err error
			for try := 0; try < 50; try++ {
				// A cgroup whose last task just died can be busy for
				// a moment.
				if err = syscall.Rmdir(d); err == nil || err == syscall.ENOENT {
					err = nil
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", d, err))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("removing cgroups: %s", strings.Join(errs, "; "))
	}
	return nil
}
