package static

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/lab"
)

// A static lab's hosts are usually machines of their own, each with its
// own wall clock; but a file may describe hosts that are network
// namespaces of one machine (a local lab reached through SSH), where
// stepping one host's clock steps the machine's. The hosts say which:
// two hosts with one kernel boot id run on one kernel.

var _ lab.SharedWallClock = (*Lab)(nil)

// bootIDTimeout bounds the question to every host.
const bootIDTimeout = 15 * time.Second

// wallClock is the hosts' answer, asked once per lab.
type wallClock struct {
	mu     sync.Mutex
	known  bool
	shared bool
	why    string
}

// SharesWallClock asks every host for its kernel's boot id, once: hosts
// that share one share a wall clock. Where fewer than two hosts answer,
// it cannot tell, and says the clock is shared (a fault then refuses to
// step it) without keeping the answer.
func (l *Lab) SharesWallClock() (bool, string) {
	l.clock.mu.Lock()
	defer l.clock.mu.Unlock()
	if l.clock.known {
		return l.clock.shared, l.clock.why
	}
	ctx, cancel := context.WithTimeout(context.Background(), bootIDTimeout)
	defer cancel()
	hosts := l.nodeHosts()
	ids := make([]string, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			res, err := h.Run(ctx, "cat /proc/sys/kernel/random/boot_id")
			if err == nil && res.ExitCode == 0 {
				ids[i] = strings.TrimSpace(res.Stdout)
			}
		})
	}
	wg.Wait()
	byID := map[string][]string{}
	answered := 0
	for i, id := range ids {
		if id != "" {
			answered++
			byID[id] = append(byID[id], hosts[i].Name())
		}
	}
	if answered < 2 && len(hosts) > 1 {
		return true, fmt.Sprintf("lab %s: %d of %d hosts said their kernel's boot id, too few to tell whether they share a wall clock", l.cfg.Name, answered, len(hosts))
	}
	var shared []string
	for _, names := range byID {
		if len(names) > 1 {
			sort.Strings(names)
			shared = append(shared, strings.Join(names, ", "))
		}
	}
	sort.Strings(shared)
	l.clock.known = true
	if len(shared) > 0 {
		l.clock.shared = true
		l.clock.why = fmt.Sprintf("lab %s: hosts %s run on one kernel (one boot id), so stepping one's wall clock steps the others'", l.cfg.Name, strings.Join(shared, "; "))
	}
	return l.clock.shared, l.clock.why
}
