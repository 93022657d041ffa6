package csidriver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// shortDir is a temporary directory whose sockets fit a socket address
// (t.TempDir's paths can be long).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func dial(t *testing.T, sock string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// The kubelet's side of registration, as its plugin watcher does it:
// GetInfo on the registration socket, NodeGetInfo on the endpoint it
// names, then NotifyRegistrationStatus.
func TestRegistrationAsTheKubeletSeesIt(t *testing.T) {
	dir := shortDir(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunNode(ctx, NodeConfig{NodeID: "worker1", Export: dir, KubeletRoot: filepath.Join(dir, "k"), Kinds: []Kind{KindBlock}, Log: quiet})
	}()
	regSock := RegistrationSocket(filepath.Join(dir, "k", "plugins_registry"), BlockDriverName)
	waitFor(t, regSock)

	reg := registerapi.NewRegistrationClient(dial(t, regSock))
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != BlockDriverName || info.Endpoint != NodeSocket(filepath.Join(dir, "k"), BlockDriverName) ||
		len(info.SupportedVersions) != 1 || info.SupportedVersions[0] != "1.0.0" {
		t.Fatalf("plugin info %v", info)
	}
	nodeInfo, err := csi.NewNodeClient(dial(t, info.Endpoint)).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || nodeInfo.NodeId != "worker1" {
		t.Fatalf("NodeGetInfo at the endpoint: %v %v", nodeInfo, err)
	}
	pi, err := csi.NewIdentityClient(dial(t, info.Endpoint)).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil || pi.Name != BlockDriverName {
		t.Fatalf("GetPluginInfo at the endpoint: %v %v", pi, err)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A driver that stops takes its registration socket away, which is how
	// the kubelet learns it is gone.
	for _, s := range []string{regSock, info.Endpoint} {
		if _, err := os.Lstat(s); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the driver stopped: %v", s, err)
		}
	}
}

func TestRegistrationStatus(t *testing.T) {
	r, err := NewRegistration(BlockDriverName, "/run/x.sock", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Status(); err == nil || !strings.Contains(err.Error(), "not registered it yet") {
		t.Errorf("before any notice: %v", err)
	}
	r.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{Error: "version 0.3 is not supported"})
	if err := r.Status(); err == nil || !strings.Contains(err.Error(), "version 0.3") {
		t.Errorf("after a refusal: %v", err)
	}
	r.NotifyRegistrationStatus(context.Background(), &registerapi.RegistrationStatus{PluginRegistered: true})
	if err := r.Status(); err != nil {
		t.Errorf("after registration: %v", err)
	}
	if _, err := NewRegistration(BlockDriverName, "relative.sock", quiet); err == nil {
		t.Error("a relative endpoint was accepted")
	}
}

func TestListen(t *testing.T) {
	dir := shortDir(t)
	if _, err := Listen(filepath.Join(dir, strings.Repeat("x", 120))); err == nil || !strings.Contains(err.Error(), "more than a unix socket address holds") {
		t.Errorf("a long path: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o644)
	if _, err := Listen(plain); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a regular file: %v", err)
	}
	sock := filepath.Join(dir, "sub", "s.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := Listen(sock); err == nil || !strings.Contains(err.Error(), "another process serves it") {
		t.Errorf("a live socket: %v", err)
	}
	// A socket whose server is gone (killed, say) is replaced.
	stale := filepath.Join(dir, "stale.sock")
	sl, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	sl.(*net.UnixListener).SetUnlinkOnClose(false)
	sl.Close()
	l2, err := Listen(stale)
	if err != nil {
		t.Fatalf("a stale socket: %v", err)
	}
	l2.Close()
	l.Close()
}

func TestRunNodeRefusesBadConfig(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cfg  NodeConfig
		says string
	}{
		{NodeConfig{Export: "/x", KubeletRoot: "/k"}, "--node-id"},
		{NodeConfig{NodeID: "w1", KubeletRoot: "/k"}, "--export"},
		{NodeConfig{NodeID: "w1", Export: "/x", KubeletRoot: "k"}, "--kubelet-root"},
		{NodeConfig{NodeID: "w1", Export: "/x", KubeletRoot: "/" + strings.Repeat("k", 90)}, "use a shorter kubelet root"},
	} {
		c.cfg.Log = quiet
		if err := RunNode(ctx, c.cfg); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want it to say %q", c.cfg, err, c.says)
		}
	}
	if err := RunController(ctx, ControllerConfig{Export: "/x", SocketDir: "/s", Provision: true, Log: quiet}); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Errorf("provisioning without a kubeconfig: %v", err)
	}
}

func waitFor(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}
