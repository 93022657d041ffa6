package hostns

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Every host has a UTS namespace of its own, so its processes see its name
// as the hostname, as on a VM: leader-election identities, kubelet's
// hostname and `hostname` over SSH name the host, not the machine.

// EnsureUTS makes the host's UTS namespace, bound to a file in the state
// dir, unless it exists.
func EnsureUTS(path, hostname string) error {
	var st unix.Statfs_t
	if unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	errc := make(chan error, 1)
	go func() {
		// The thread ends with this goroutine (it stays locked), so the
		// namespace switch never leaks into other goroutines.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWUTS); err != nil {
			errc <- fmt.Errorf("new UTS namespace: %w", err)
			return
		}
		if err := unix.Sethostname([]byte(hostname)); err != nil {
			errc <- fmt.Errorf("setting hostname %s: %w", hostname, err)
			return
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/uts", unix.Gettid())
		if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("binding UTS namespace to %s: %w", path, err)
			return
		}
		errc <- nil
	}()
	return <-errc
}
