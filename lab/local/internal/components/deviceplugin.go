package components

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

// devicePluginDir is where every kubelet serves its device-plugin
// registration socket. The path is compiled into kubelet (it does not
// follow --root-dir), so all the kubelets on the machine share it. A
// kubelet starting removes the sockets it finds there and then listens on
// kubelet.sock; two kubelets starting together can both remove before
// either listens, and the second to listen then finds the first's socket
// and exits ("Failed to start ContainerManager ... address already in
// use"). Kubelets are therefore launched one at a time through that step.
const devicePluginDir = "/var/lib/kubelet/device-plugins"

const devicePluginSocket = devicePluginDir + "/kubelet.sock"

// devicePluginWait bounds how long the next kubelet waits for the one
// before it to listen. A kubelet reaches that step only once its container
// runtime answers, so a kubelet whose runtime is down holds the others back
// this long at most, and then they take their chance.
const devicePluginWait = time.Minute

// startKubeletAlone launches a kubelet while holding an exclusive lock on
// the device-plugin directory (a flock, so kubelets started by other
// faultline processes, of this lab or another, wait too), and keeps the
// lock until the new kubelet's socket is there, the kubelet exited, or
// devicePluginWait passed. A kubelet that already runs is left alone.
func startKubeletAlone(ctx context.Context, c *Cluster, h Host, launch func() (int, error)) (int, error) {
	if _, st := c.Sup.Lookup(h.Name, lab.ServiceKubelet); st == supervise.StateRunning || st == supervise.StateFrozen {
		return launch()
	}
	if err := os.MkdirAll(devicePluginDir, 0o750); err != nil {
		return 0, fmt.Errorf("host %s: kubelet: %w", h.Name, err)
	}
	unlock, err := lockDir(ctx, devicePluginDir)
	if err != nil {
		return 0, fmt.Errorf("host %s: kubelet: waiting for the other kubelets to start: %w", h.Name, err)
	}
	defer unlock()
	before, _ := os.Lstat(devicePluginSocket)
	pid, err := launch()
	if err != nil {
		return pid, err
	}
	deadline := time.Now().Add(devicePluginWait)
	for time.Now().Before(deadline) {
		if socketReplaced(before, devicePluginSocket) {
			return pid, nil
		}
		if _, st := c.Sup.Lookup(h.Name, lab.ServiceKubelet); st != supervise.StateRunning && st != supervise.StateFrozen {
			return pid, nil // the caller finds it exited and says so
		}
		select {
		case <-ctx.Done():
			return pid, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return pid, nil
}

// socketReplaced says whether path holds a socket other than before (nil
// when there was none): another file, or the same inode number reused for
// a new file with another modification time.
func socketReplaced(before os.FileInfo, path string) bool {
	now, err := os.Lstat(path)
	if err != nil || now.Mode()&os.ModeSocket == 0 {
		return false
	}
	if before == nil {
		return true
	}
	return !os.SameFile(before, now) || !now.ModTime().Equal(before.ModTime())
}

// lockDir takes an exclusive flock on a directory, polling so that ctx
// can end the wait, and returns its release.
func lockDir(ctx context.Context, dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
