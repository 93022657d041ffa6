package source

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runCrictlCommand runs crictlCommand with sh, as a host's SSH session
// would, with a stand-in crictl first on PATH that prints the given files.
func runCrictlCommand(t *testing.T, failPS bool) (string, int) {
	cmd := crictlCmd(t, "")
	if failPS {
		cmd.Env = append(cmd.Env, "FAIL_PS=1")
	}
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// crictlCmd is crictlCommand for sh with the stand-in crictl on PATH, its
// temporary files under tmp when given.
func crictlCmd(t *testing.T, tmp string) *exec.Cmd {
	dir := t.TempDir()
	script := `#!/bin/sh
[ -n "$HANG" ] && { touch "$HANG.$1"; sleep 60; }
case "$1" in
pods) cat "` + filepath.Join("testdata", "crictl", "pods-worker1.json") + `" ;;
ps) [ -n "$FAIL_PS" ] && { echo "connect: connection refused" >&2; exit 3; }; cat "` + filepath.Join("testdata", "crictl", "ps-worker1.json") + `" ;;
esac
`
	abs, _ := filepath.Abs(".")
	script = strings.ReplaceAll(script, `"testdata`, `"`+abs+`/testdata`)
	if err := os.WriteFile(filepath.Join(dir, "crictl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", crictlCommand)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	if tmp != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "HANG="+filepath.Join(dir, "running"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	return cmd
}

// A listing killed while crictl runs (a read's timeout kills the command
// on the host, so no exit trap runs) leaves no file behind.
func TestCrictlCommandKilledLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	cmd := crictlCmd(t, tmp)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, nothing of the command outlives the test.
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	// Both crictl calls are running once each has left its mark.
	for _, p := range []string{"running.pods", "running.ps"} {
		p = filepath.Join(hangDir(cmd), p)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(p); err == nil {
				break
			}
			if time.Now().After(deadline) {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				cmd.Wait()
				t.Fatalf("the stand-in crictl never ran (%s)", p)
			}
		}
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the killed listing left %d entries in its temporary directory: %v", len(left), left[0].Name())
	}
}

func TestCrictlCommandJoinsBothListings(t *testing.T) {
	out, code := runCrictlCommand(t, false)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	pods, ctrs, ok := strings.Cut(out, crictlSeparator)
	if !ok {
		t.Fatalf("no separator in %q", out)
	}
	v, err := RuntimePodFromCrictl([]byte(pods), []byte(ctrs), "faultline", "stateful-0")
	if err != nil || !v.Running || len(v.Containers) != 1 {
		t.Errorf("%+v %v", v, err)
	}
	if _, code := runCrictlCommand(t, true); code != 3 {
		t.Errorf("a failing crictl ps exits %d, want its own 3", code)
	}
}

// Real output of crictl v1.37 on worker1 of a local lab running the
// stateful pod (captured by the lab integration test).
func TestRuntimePodFromRealCrictl(t *testing.T) {
	v, err := RuntimePodFromCrictl(readTestdata(t, "crictl", "pods-worker1.json"), readTestdata(t, "crictl", "ps-worker1.json"), "faultline", "stateful-0")
	if err != nil {
		t.Fatal(err)
	}
	const uid = "b0bebbcc-08c6-46ac-8051-3ec857b6c576"
	if !v.Running || len(v.Sandboxes) != 1 || v.Sandboxes[0].UID != uid || v.Sandboxes[0].State != "SANDBOX_READY" || v.Sandboxes[0].CreatedAt.IsZero() {
		t.Errorf("sandboxes %+v", v.Sandboxes)
	}
	if len(v.Containers) != 1 || v.Containers[0].Name != "netexec" || v.Containers[0].PodUID != uid || v.Containers[0].State != "CONTAINER_RUNNING" ||
		v.Containers[0].SandboxID != v.Sandboxes[0].ID {
		t.Errorf("containers %+v", v.Containers)
	}
}

// Real iptables-save of worker1 of a local lab, kube-proxy in iptables
// mode (captured by the lab integration test).
func TestProxyBackendsFromRealIPTables(t *testing.T) {
	v, err := ProxyBackendsFromIPTables(string(readTestdata(t, "iptables", "worker1-iptables-save.txt")), "faultline", "stateful")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Ports) != 1 || v.Ports[0].Port != "faultline/stateful:http" || v.Ports[0].ClusterIP != "10.250.31.62" ||
		v.Ports[0].ServicePort != "80/tcp" || strings.Join(v.Ports[0].Backends, ",") != "10.244.4.2:8080" || v.Ports[0].Rejected {
		t.Errorf("%+v", v.Ports)
	}
	// The API server's own service is there too.
	if k, err := ProxyBackendsFromIPTables(string(readTestdata(t, "iptables", "worker1-iptables-save.txt")), "default", "kubernetes"); err != nil || len(k.Ports) != 1 || len(k.Ports[0].Backends) != 3 {
		t.Errorf("default/kubernetes: %+v %v", k, err)
	}
}

// hangDir is the directory of the stand-in crictl's marks (HANG=<dir>/running).
func hangDir(cmd *exec.Cmd) string {
	for _, e := range cmd.Env {
		if v, ok := strings.CutPrefix(e, "HANG="); ok {
			return filepath.Dir(v)
		}
	}
	return ""
}
