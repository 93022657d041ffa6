package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// ExportLogs copies every host's logs into dest, one folder per host:
// each service's log as the supervisor wrote it (dest/<host>/<service>.log)
// and, on a node, its containers' logs as its kubelet wrote them
// (dest/<host>/pods/<namespace>_<pod>_<uid>/<container>/<n>.log). A
// host's folder under dest is replaced; the rest of dest is left as it is.
func (l *Lab) ExportLogs(ctx context.Context, dest string) error {
	if dest == "" {
		return fmt.Errorf("lab %s: exporting logs: no destination", l.cfg.Name)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("lab %s: exporting logs: %w", l.cfg.Name, err)
	}
	exported := 0
	for _, h := range l.hosts {
		src := filepath.Join(l.dirs.Logs(), h.cfg.Name)
		if !isDir(src) {
			continue
		}
		hostDest := filepath.Join(dest, h.cfg.Name)
		if err := copyTree(ctx, src, hostDest); err != nil {
			return fmt.Errorf("lab %s: exporting logs: %w", l.cfg.Name, err)
		}
		exported++
		if pods := l.dirs.PodLogs(h.cfg.Name); isDir(pods) {
			if err := copyTree(ctx, pods, filepath.Join(hostDest, "pods")); err != nil {
				return fmt.Errorf("lab %s: exporting logs: %w", l.cfg.Name, err)
			}
		}
	}
	if exported == 0 {
		return fmt.Errorf("lab %s: exporting logs: no host has logs under %s (is the lab up?)", l.cfg.Name, l.dirs.Logs())
	}
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
