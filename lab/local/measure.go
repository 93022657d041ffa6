package local

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// UpTimings is how long the parts of the last Up took.
type UpTimings struct {
	// Provision builds namespaces, links and SSH.
	Provision time.Duration
	// ColdBoot is from the first service start to every node Ready.
	ColdBoot time.Duration
	// Snapshot stops the fleet, copies it and boots it again.
	Snapshot time.Duration
}

// LastUp returns the timings of this Lab value's last Up.
func (l *Lab) LastUp() UpTimings { return l.timings }

// HostRSS is the resident memory of every process of a host, its pods
// included, and the number of processes counted.
func (l *Lab) HostRSS(host string) (bytes int64, procs int, err error) {
	if _, ok := l.byName[host]; !ok {
		return 0, 0, fmt.Errorf("lab %s has no host %q", l.cfg.Name, host)
	}
	for _, pid := range hostProcesses(l.cfg.Name, host) {
		rss, err := processRSS(pid)
		if err != nil {
			continue // exited meanwhile
		}
		bytes += rss
		procs++
	}
	return bytes, procs, nil
}

func processRSS(pid int) (int64, error) {
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
