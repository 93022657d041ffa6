package components

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func listenUnix(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
}

func TestSocketReplaced(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "kubelet.sock")
	if socketReplaced(nil, sock) {
		t.Error("no socket yet reads as replaced")
	}
	listenUnix(t, sock)
	if !socketReplaced(nil, sock) {
		t.Error("a socket where there was none does not read as replaced")
	}
	before, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if socketReplaced(before, sock) {
		t.Error("the same socket reads as replaced")
	}
	// What the next kubelet does: remove the socket, listen anew.
	time.Sleep(20 * time.Millisecond)
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	if socketReplaced(before, sock) {
		t.Error("a removed socket reads as replaced")
	}
	listenUnix(t, sock)
	if !socketReplaced(before, sock) {
		t.Error("a socket made anew does not read as replaced")
	}
	// A plain file is not a kubelet's socket.
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if socketReplaced(nil, plain) {
		t.Error("a plain file reads as a socket")
	}
}

func TestLockDirIsExclusiveAndEndsWithItsContext(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockDir(ctx, dir); err == nil {
		t.Fatal("a second lock was taken while the first was held")
	}
	got := make(chan error, 1)
	go func() {
		u, err := lockDir(context.Background(), dir)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the waiting lock returned (%v) before the first was released", err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting lock was not taken after the release")
	}
	if _, err := lockDir(context.Background(), filepath.Join(dir, "absent")); err == nil {
		t.Error("locking a directory that does not exist succeeded")
	}
}
