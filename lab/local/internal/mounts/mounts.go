// Package mounts finds and detaches the mounts under a local lab's paths:
// those kubelet, containerd and runc make in its state dir, and the
// namespace bind mounts.
package mounts

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Under lists mount points at or below any of the prefixes, deepest
// first so they can be unmounted in that order.
func Under(prefixes ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescape(fields[4])
		for _, p := range prefixes {
			if mp == p || strings.HasPrefix(mp, strings.TrimSuffix(p, "/")+"/") {
				if !seen[mp] {
					seen[mp] = true
					out = append(out, mp)
				}
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.Count(out[i], "/") > strings.Count(out[j], "/")
	})
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes of space, tab,
// newline and backslash.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// UnmountAll detaches every mount at or below the prefixes, stacked ones
// included.
func UnmountAll(prefixes ...string) error {
	for round := 0; round < 10; round++ {
		mps, err := Under(prefixes...)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
				return fmt.Errorf("unmounting %s: %w", mp, err)
			}
		}
	}
	mps, _ := Under(prefixes...)
	if len(mps) > 0 {
		return fmt.Errorf("mounts remain after unmounting: %v", mps)
	}
	return nil
}
