package local

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/lab/local/internal/procs"
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
func (l *Lab) HostRSS(host string) (bytes int64, counted int, err error) {
	if _, ok := l.byName[host]; !ok {
		return 0, 0, fmt.Errorf("lab %s has no host %q", l.cfg.Name, host)
	}
	for _, pid := range procs.OfHost(l.cfg.Name, host) {
		rss, err := procs.RSS(pid)
		if err != nil {
			continue // exited meanwhile
		}
		bytes += rss
		counted++
	}
	return bytes, counted, nil
}
