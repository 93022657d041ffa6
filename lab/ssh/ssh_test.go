package ssh_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/internal/sshdtest"
	"github.com/faultline/faultline/lab/ssh"
)

// fixture is one sshd on loopback and the lab settings that reach it.
type fixture struct {
	server *sshdtest.Server
	client sshdtest.Key
	ssh    *lab.SSHConfig
	host   lab.HostConfig
}

func newFixture(t testing.TB, cfg sshdtest.Config) *fixture {
	t.Helper()
	sshdtest.Require(t)
	dir := t.TempDir()
	client := sshdtest.NewKey(t, dir, "id_ed25519")
	cfg.AuthorizedKeys = append(cfg.AuthorizedKeys, client)
	srv := sshdtest.Start(t, cfg)
	known := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(known, []byte(srv.KnownHostsLine("127.0.0.1")), 0o600); err != nil {
		t.Fatal(err)
	}
	return &fixture{
		server: srv,
		client: client,
		ssh: &lab.SSHConfig{
			User: "root", Port: srv.Port, IdentityFile: client.Path, KnownHosts: known,
			CommandTimeout: lab.Duration{Duration: 20 * time.Second},
		},
		host: lab.HostConfig{Name: "node1", Roles: []lab.Role{lab.RoleWorker}, Address: "127.0.0.1"},
	}
}

func (f *fixture) newHost(t testing.TB, opts ...ssh.HostOption) *ssh.Host {
	t.Helper()
	h, err := ssh.NewHost(f.host, f.ssh, opts...)
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRunReportsOutputAndExitStatus(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t)
	res, err := h.Run(testContext(t), "echo out; echo err >&2; exit 3")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Stdout != "out\n" || res.Stderr != "err\n" || res.ExitCode != 3 {
		t.Fatalf("Run = %+v, want stdout out, stderr err, exit 3", res)
	}
}

func TestUnknownHostKeyIsRefused(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	if err := os.WriteFile(f.ssh.KnownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h := f.newHost(t)
	_, err := h.Run(testContext(t), "true")
	if err == nil {
		t.Fatal("Run against a host missing from known_hosts succeeded")
	}
	for _, want := range []string{"node1", "unknown", f.ssh.KnownHosts, "acceptNewHostKeys"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if data, _ := os.ReadFile(f.ssh.KnownHosts); len(data) != 0 {
		t.Errorf("known_hosts was written without acceptNewHostKeys: %q", data)
	}
	if !errors.Is(err, ssh.ErrHostKey) {
		t.Errorf("error %q does not wrap ssh.ErrHostKey", err)
	}
	// Waiting does not make an unknown key known: no retries until ctx ends.
	if err := h.WaitReachable(testContext(t)); !errors.Is(err, ssh.ErrHostKey) {
		t.Errorf("WaitReachable with an unknown host key: %v, want ssh.ErrHostKey at once", err)
	}
}

func TestChangedHostKeyIsRefusedEvenWithAcceptNew(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	other := sshdtest.NewKey(t, t.TempDir(), "other_host_key")
	line := sshdtest.KnownHostsLine("127.0.0.1", f.server.Port, other)
	if err := os.WriteFile(f.ssh.KnownHosts, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, accept := range []bool{false, true} {
		f.ssh.AcceptNewHostKeys = accept
		h := f.newHost(t)
		_, err := h.Run(testContext(t), "true")
		if err == nil {
			t.Fatalf("acceptNewHostKeys=%v: Run against a host with a changed key succeeded", accept)
		}
		for _, want := range []string{"node1", "CHANGED", f.ssh.KnownHosts + " line 1"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("acceptNewHostKeys=%v: error %q does not mention %q", accept, err, want)
			}
		}
		if data, _ := os.ReadFile(f.ssh.KnownHosts); string(data) != line {
			t.Errorf("acceptNewHostKeys=%v: known_hosts changed to %q", accept, data)
		}
	}
}

func TestAcceptNewHostKeysAddsTheKeyOnce(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	f.ssh.KnownHosts = filepath.Join(t.TempDir(), "sub", "known_hosts")
	f.ssh.AcceptNewHostKeys = true
	h := f.newHost(t)
	if _, err := h.Run(testContext(t), "true"); err != nil {
		t.Fatalf("Run with acceptNewHostKeys: %v", err)
	}
	data, err := os.ReadFile(f.ssh.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != f.server.KnownHostsLine("127.0.0.1") {
		t.Fatalf("known_hosts = %q, want the server's key", data)
	}
	// The key is now known: a strict client connects, and a second
	// accept-new connection does not add it again.
	f.ssh.AcceptNewHostKeys = false
	if _, err := f.newHost(t).Run(testContext(t), "true"); err != nil {
		t.Fatalf("Run after the key was added: %v", err)
	}
	f.ssh.AcceptNewHostKeys = true
	if _, err := f.newHost(t).Run(testContext(t), "true"); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(f.ssh.KnownHosts); string(again) != string(data) {
		t.Fatalf("known_hosts grew to %q", again)
	}
}

func TestMissingKnownHostsFileIsAnError(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	f.ssh.KnownHosts = filepath.Join(t.TempDir(), "absent")
	_, err := f.newHost(t).Run(testContext(t), "true")
	if err == nil || !strings.Contains(err.Error(), f.ssh.KnownHosts) {
		t.Fatalf("Run with a missing known_hosts file: %v, want an error naming it", err)
	}
}

func TestWrongKeyIsRefusedWithoutLeakingIt(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	stranger := sshdtest.NewKey(t, t.TempDir(), "stranger")
	f.ssh.IdentityFile = stranger.Path
	_, err := ssh.Dial(testContext(t), mustOptions(t, f))
	if err == nil {
		t.Fatal("Dial with a key the server does not authorize succeeded")
	}
	if !errors.Is(err, ssh.ErrAuth) || !strings.Contains(err.Error(), stranger.Path) {
		t.Errorf("error %q does not say authentication was refused with which key file", err)
	}
	secret, _ := os.ReadFile(stranger.Path)
	for _, line := range strings.Split(string(secret), "\n") {
		if len(line) > 20 && !strings.HasPrefix(line, "-----") && strings.Contains(err.Error(), line) {
			t.Fatalf("error contains key material: %q", err)
		}
	}
}

func TestUnreadableIdentityFileIsAnErrorBeforeConnecting(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	bad := filepath.Join(t.TempDir(), "not-a-key")
	os.WriteFile(bad, []byte("hello"), 0o600)
	f.ssh.IdentityFile = bad
	_, err := ssh.NewHost(f.host, f.ssh)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("NewHost with a non-key identity file: %v, want an error naming it", err)
	}
}

func mustOptions(t testing.TB, f *fixture) ssh.Options {
	t.Helper()
	o, err := ssh.OptionsFor(f.host.Name, f.host.Address, f.ssh)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestJumpHostReachesAHostTheClientCannot(t *testing.T) {
	sshdtest.Require(t)
	dir := t.TempDir()
	client := sshdtest.NewKey(t, dir, "id_ed25519")
	target := sshdtest.Start(t, sshdtest.Config{OwnNetNS: true, AuthorizedKeys: []sshdtest.Key{client}})
	jump := sshdtest.StartJumpInto(t, target, sshdtest.Config{AuthorizedKeys: []sshdtest.Key{client}})
	known := filepath.Join(dir, "known_hosts")
	os.WriteFile(known, []byte(target.KnownHostsLine("127.0.0.1")+jump.KnownHostsLine("127.0.0.1")), 0o600)
	cfg := &lab.SSHConfig{
		User: "root", Port: target.Port, IdentityFile: client.Path, KnownHosts: known,
		CommandTimeout: lab.Duration{Duration: 20 * time.Second},
	}
	hc := lab.HostConfig{Name: "behind", Roles: []lab.Role{lab.RoleWorker}, Address: "127.0.0.1"}

	direct, err := ssh.NewHost(hc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if _, err := direct.Run(testContext(t), "true"); err == nil {
		t.Fatal("the target answered without the jump host: the test does not isolate it")
	}

	cfg.Jump = fmt.Sprintf("root@127.0.0.1:%d", jump.Port)
	h, err := ssh.NewHost(hc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	res, err := h.Run(testContext(t), `echo "$SSH_CONNECTION"`)
	if err != nil {
		t.Fatalf("Run through the jump host: %v", err)
	}
	// SSH_CONNECTION is "client-ip client-port server-ip server-port".
	f := strings.Fields(res.Stdout)
	if len(f) != 4 || f[3] != fmt.Sprint(target.Port) {
		t.Fatalf("SSH_CONNECTION = %q, want the target's port %d", res.Stdout, target.Port)
	}
}

func TestHostsShareOneJumpConnection(t *testing.T) {
	sshdtest.Require(t)
	dir := t.TempDir()
	client := sshdtest.NewKey(t, dir, "id_ed25519")
	target := sshdtest.Start(t, sshdtest.Config{OwnNetNS: true, AuthorizedKeys: []sshdtest.Key{client}})
	jump := sshdtest.StartJumpInto(t, target, sshdtest.Config{AuthorizedKeys: []sshdtest.Key{client}})
	known := filepath.Join(dir, "known_hosts")
	os.WriteFile(known, []byte(target.KnownHostsLine("127.0.0.1")+jump.KnownHostsLine("127.0.0.1")), 0o600)
	cfg := &lab.SSHConfig{
		User: "root", Port: target.Port, IdentityFile: client.Path, KnownHosts: known,
		Jump: fmt.Sprintf("root@127.0.0.1:%d", jump.Port), CommandTimeout: lab.Duration{Duration: 20 * time.Second},
	}
	shared, err := ssh.NewJump(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	ctx := testContext(t)
	for _, name := range []string{"a", "b", "c"} {
		h, err := ssh.NewHost(lab.HostConfig{Name: name, Roles: []lab.Role{lab.RoleWorker}, Address: "127.0.0.1"}, cfg, ssh.WithJump(shared))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Run(ctx, "true"); err != nil {
			t.Fatalf("host %s through the shared jump: %v", name, err)
		}
		// Closing a host leaves the shared jump open for the others.
		h.Close()
	}
	if n := jump.Connections(); n != 1 {
		t.Fatalf("the jump server accepted %d connections, want 1 shared by the hosts", n)
	}
}

func TestCommandTimeoutEndsTheCommandNotTheConnection(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	f.ssh.CommandTimeout = lab.Duration{Duration: time.Second}
	h := f.newHost(t)
	ctx := testContext(t)
	_, err := h.Run(ctx, "sleep 30")
	if err == nil {
		t.Fatal("a command longer than ssh.commandTimeout succeeded")
	}
	if !strings.Contains(err.Error(), "ssh.commandTimeout") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %q does not name the command timeout", err)
	}
	res, err := h.Run(ctx, "echo still here")
	if err != nil || res.Stdout != "still here\n" {
		t.Fatalf("Run after a timeout = %+v, %v", res, err)
	}
}

func TestCallerContextBoundsTheCommand(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t)
	ctx, cancel := context.WithTimeout(testContext(t), 500*time.Millisecond)
	defer cancel()
	_, err := h.Run(ctx, "sleep 30")
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "ssh.commandTimeout") {
		t.Fatalf("Run with an expiring caller context: %v, want a deadline error not blamed on ssh.commandTimeout", err)
	}
}

func TestReconnectsAfterTheServerRestarts(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t)
	ctx := testContext(t)
	before, err := h.Run(ctx, `echo "$SSH_CONNECTION"`)
	if err != nil {
		t.Fatal(err)
	}
	f.server.Stop()
	if _, err := h.Run(ctx, "true"); err == nil {
		t.Fatal("Run while the server is down succeeded")
	}
	f.server.Restart()
	after, err := h.Run(ctx, `echo "$SSH_CONNECTION"`)
	if err != nil {
		t.Fatalf("Run after the server came back: %v", err)
	}
	// A new connection has a new client port.
	if strings.Fields(before.Stdout)[1] == strings.Fields(after.Stdout)[1] {
		t.Fatalf("same client port before and after the restart (%q): not a new connection", after.Stdout)
	}
}

func TestWaitReachableWaitsForTheServer(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t)
	ctx := testContext(t)
	f.server.Stop()
	started := make(chan struct{})
	go func() {
		time.Sleep(1500 * time.Millisecond)
		f.server.Restart()
		close(started)
	}()
	if err := h.WaitReachable(ctx); err != nil {
		t.Fatalf("WaitReachable: %v", err)
	}
	select {
	case <-started:
	default:
		t.Fatal("WaitReachable returned before the server was started")
	}
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	f.server.Stop()
	if err := h.WaitReachable(short); err == nil || !strings.Contains(err.Error(), "node1") {
		t.Fatalf("WaitReachable with the server down: %v, want an error naming the host", err)
	}
}

func TestConcurrentRunsShareTheHost(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t)
	ctx := testContext(t)
	const n = 24 // more than OpenSSH allows sessions on one connection
	var wg sync.WaitGroup
	errs := make([]error, n)
	conns := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h.Run(ctx, fmt.Sprintf(`sleep 0.2; echo %d "$SSH_CONNECTION"`, i))
			f := strings.Fields(res.Stdout)
			if err == nil && (len(f) != 5 || f[0] != fmt.Sprint(i)) {
				err = fmt.Errorf("stdout %q", res.Stdout)
			}
			if err == nil {
				conns[i] = f[2] // the client's port
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	for i := range conns {
		if conns[i] != conns[0] {
			t.Fatalf("runs used connections from ports %v, want one connection", conns)
		}
	}
}

func TestPowerWithoutABackendIsUnsupported(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	h := f.newHost(t, ssh.WithLabKind("static"))
	for name, op := range map[string]func(context.Context) error{"off": h.PowerOff, "on": h.PowerOn} {
		err := op(testContext(t))
		if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "static") {
			t.Errorf("power %s: %v, want lab.ErrUnsupported naming the static kind", name, err)
		}
	}
}

func TestPowerOnRunsTheBackendThenWaitsForSSH(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	var calls []string
	off := func(context.Context) error { calls = append(calls, "off"); f.server.Stop(); return nil }
	on := func(context.Context) error {
		calls = append(calls, "on")
		go func() { time.Sleep(time.Second); f.server.Restart() }()
		return nil
	}
	h := f.newHost(t, ssh.WithPower(off, on))
	ctx := testContext(t)
	if _, err := h.Run(ctx, "true"); err != nil {
		t.Fatal(err)
	}
	if err := h.PowerOff(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.PowerOn(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := h.Run(ctx, "echo up"); err != nil || res.Stdout != "up\n" {
		t.Fatalf("Run after PowerOn = %+v, %v", res, err)
	}
	if strings.Join(calls, ",") != "off,on" {
		t.Fatalf("backend calls %v", calls)
	}
}

// fakeSystemd writes a systemctl standing in for the host's systemd: it
// records its arguments and answers `show` from files the test writes.
func fakeSystemd(t *testing.T) (binDir string) {
	t.Helper()
	binDir = t.TempDir()
	script := `#!/bin/sh
echo "$*" >> "$(dirname "$0")/systemctl.calls"
case "$1" in
show)
	case "$2" in
	-p) case "$3" in
		LoadState) cat "$(dirname "$0")/loadstate" 2>/dev/null || echo loaded ;;
		MainPID) cat "$(dirname "$0")/mainpid" ;;
		esac ;;
	*) cat "$(dirname "$0")/show" ;;
	esac ;;
stop|start) exit 0 ;;
*) echo "unexpected: $*" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(binDir, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return binDir
}

func TestServicesGoThroughSystemctl(t *testing.T) {
	sshdtest.Require(t)
	bin := fakeSystemd(t)
	f := newFixture(t, sshdtest.Config{PathPrefix: bin})
	h := f.newHost(t)
	ctx := testContext(t)
	show := "Id=kubelet.service\nLoadState=loaded\nActiveState=active\nSubState=running\nMainPID=4242\nFreezerState=running\n\n" +
		"Id=etcd.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0\nFreezerState=running\n\n" +
		"Id=containerd.service\nLoadState=loaded\nActiveState=active\nSubState=running\nMainPID=77\nFreezerState=frozen\n\n" +
		"Id=keepalived.service\nLoadState=loaded\nActiveState=failed\nSubState=failed\nMainPID=0\nFreezerState=running\n"
	os.WriteFile(filepath.Join(bin, "show"), []byte(show), 0o644)

	states, err := h.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, s := range states {
		parts = append(parts, fmt.Sprintf("{%s %d %s}", s.Name, s.PID, s.State))
	}
	got := "[" + strings.Join(parts, " ") + "]"
	want := "[{kubelet 4242 running} {containerd 77 frozen} {keepalived 0 exited}]"
	if got != want {
		t.Fatalf("Services = %s, want %s", got, want)
	}
	if err := h.StopService(ctx, lab.ServiceKubelet); err != nil {
		t.Fatal(err)
	}
	if err := h.StartService(ctx, lab.ServiceKubelet); err != nil {
		t.Fatal(err)
	}
	if err := h.StopService(ctx, "kubelet; reboot"); err == nil {
		t.Fatal("a service name with shell syntax was accepted")
	}
	calls, _ := os.ReadFile(filepath.Join(bin, "systemctl.calls"))
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 5 || lines[2] != "stop -- kubelet" || lines[4] != "start -- kubelet" {
		t.Fatalf("systemctl calls %q", lines)
	}

	// No unit at all (a kubeadm control plane): the lab cannot, rather
	// than tried and failed.
	os.WriteFile(filepath.Join(bin, "loadstate"), []byte("not-found\n"), 0o644)
	for op, err := range map[string]error{
		"stop":   h.StopService(ctx, lab.ServiceAPIServer),
		"start":  h.StartService(ctx, lab.ServiceAPIServer),
		"signal": h.Signal(ctx, lab.ServiceAPIServer, syscall.SIGSTOP),
	} {
		if !errors.Is(err, lab.ErrUnsupported) || !strings.Contains(err.Error(), "kube-apiserver") || !strings.Contains(err.Error(), "node1") {
			t.Errorf("%s of a service without a unit: %v, want lab.ErrUnsupported naming service and host", op, err)
		}
	}
	calls, _ = os.ReadFile(filepath.Join(bin, "systemctl.calls"))
	if strings.Contains(string(calls), "stop -- kube-apiserver") || strings.Contains(string(calls), "start -- kube-apiserver") {
		t.Errorf("systemctl was asked to act on a unit that does not exist: %s", calls)
	}
}

func TestSignalReachesTheServicesMainProcess(t *testing.T) {
	sshdtest.Require(t)
	bin := fakeSystemd(t)
	f := newFixture(t, sshdtest.Config{PathPrefix: bin})
	h := f.newHost(t)
	ctx := testContext(t)

	service := exec.Command("sleep", "300")
	if err := service.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { service.Process.Kill(); service.Wait() })
	os.WriteFile(filepath.Join(bin, "mainpid"), []byte(fmt.Sprintf("%d\n", service.Process.Pid)), 0o644)

	if err := h.Signal(ctx, lab.ServiceKubelet, syscall.SIGTERM); err != nil {
		t.Fatalf("Signal: %v", err)
	}
	err := service.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("service process ended with %v, want killed by SIGTERM", err)
	}

	os.WriteFile(filepath.Join(bin, "mainpid"), []byte("0\n"), 0o644)
	if err := h.Signal(ctx, lab.ServiceKubelet, syscall.SIGTERM); err == nil || !strings.Contains(err.Error(), "no main process") {
		t.Fatalf("Signal to a stopped service: %v, want an error saying it has no main process", err)
	}
}

func TestSudoWrapsCommandsIntact(t *testing.T) {
	sshdtest.Require(t)
	bin := t.TempDir()
	// Stands in for sudo: checks it is called non-interactively, records
	// the command, and runs it.
	script := `#!/bin/sh
[ "$1" = -n ] || { echo "sudo called without -n" >&2; exit 90; }
shift
echo "$*" >> "$(dirname "$0")/sudo.calls"
exec "$@"
`
	os.WriteFile(filepath.Join(bin, "sudo"), []byte(script), 0o755)
	f := newFixture(t, sshdtest.Config{PathPrefix: bin})
	f.ssh.Sudo = true
	h := f.newHost(t)
	res, err := h.Run(testContext(t), `echo "it's $((1+1))"`)
	if err != nil || res.ExitCode != 0 || res.Stdout != "it's 2\n" {
		t.Fatalf("Run under sudo = %+v, %v", res, err)
	}
	calls, _ := os.ReadFile(filepath.Join(bin, "sudo.calls"))
	if !strings.HasPrefix(string(calls), "sh -c ") {
		t.Fatalf("sudo calls %q, want the command run through sh -c", calls)
	}
}

// A lab whose hosts manage their services with a command of their own
// (ssh.serviceCommand) has its services stopped, started, signalled and
// listed through it, {host} its name; a service it does not know is
// unsupported, as a unit systemd lacks.
func TestServiceCommandStandsInForSystemd(t *testing.T) {
	f := newFixture(t, sshdtest.Config{})
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := filepath.Join(dir, "svc")
	body := `#!/bin/sh
echo "$@" >> ` + log + `
shift 2
case "$1" in
list) printf 'kubelet running 42\ncontainerd stopped 0\n' ;;
stop|start) [ "$2" = kubelet ] || exit 64 ;;
signal) [ "$3" = kubelet ] || exit 64 ;;
*) exit 2 ;;
esac
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	f.ssh.ServiceCommand = script + " --host {host}"
	h := f.newHost(t)
	ctx := testContext(t)
	if err := h.StopService(ctx, "kubelet"); err != nil {
		t.Fatal(err)
	}
	if err := h.StartService(ctx, "kubelet"); err != nil {
		t.Fatal(err)
	}
	if err := h.Signal(ctx, "kubelet", syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := h.StopService(ctx, "etcd"); !errors.Is(err, lab.ErrUnsupported) {
		t.Errorf("stopping a service the command does not know: %v, want unsupported", err)
	}
	states, err := h.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0] != (lab.ServiceState{Name: "kubelet", State: "running", PID: 42}) || states[1].State != "stopped" {
		t.Errorf("services %+v", states)
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "--host node1 stop kubelet\n--host node1 start kubelet\n--host node1 signal STOP kubelet\n--host node1 stop etcd\n--host node1 list\n"
	if string(calls) != want {
		t.Errorf("calls\n%s\nwant\n%s", calls, want)
	}
}
