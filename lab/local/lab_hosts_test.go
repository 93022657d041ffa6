//go:build lab

package local

import (
	"context"
	"github.com/faultline/faultline/lab/local/csidriver/loopdev"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/cgroups"
	"github.com/faultline/faultline/lab/local/internal/hostns"
	"github.com/faultline/faultline/lab/local/internal/layout"
	"github.com/faultline/faultline/lab/local/internal/mounts"
	"github.com/faultline/faultline/lab/local/internal/procs"
	"github.com/faultline/faultline/lab/local/internal/supervise"
)

// testConfig loads a topology from testdata and gives it a state dir of the
// test's own.
func testConfig(t *testing.T, topology string) *lab.Config {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", "testdata", "labs", topology+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := lab.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	c.StateDir = filepath.Join(t.TempDir(), "state")
	return c
}

// leftovers lists everything of a lab still on the machine.
// downAtCleanup brings l down when the test ends and reports anything of
// the lab left behind.
func downAtCleanup(t *testing.T, l *Lab, c *lab.Config) {
	t.Cleanup(func() {
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
		if left := leftovers(t, c, nil); len(left) > 0 {
			t.Errorf("left after down:\n%s", strings.Join(left, "\n"))
		}
	})
}

func leftovers(t *testing.T, c *lab.Config, nsInodes []uint64) []string {
	t.Helper()
	var out []string
	for _, h := range c.Hosts {
		if _, err := os.Stat(layout.NetnsPath(layout.NetnsName(c.Name, h.Name))); err == nil {
			out = append(out, "netns "+layout.NetnsName(c.Name, h.Name))
		}
		for _, root := range cgroups.Roots() {
			if _, err := os.Stat(filepath.Join(root, layout.CgroupName(c.Name, h.Name))); err == nil {
				out = append(out, "cgroup "+filepath.Join(root, layout.CgroupName(c.Name, h.Name)))
			}
		}
	}
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	for _, l := range strings.Split(string(links), "\n") {
		if strings.Contains(l, layout.InterfaceAliasPrefix+c.Name+":") {
			out = append(out, "link "+l)
		}
	}
	for _, name := range []string{layout.ManagementBridgeName(c.Name), layout.PodBridgeName(c.Name)} {
		if exec.Command("ip", "link", "show", name).Run() == nil {
			out = append(out, "link "+name)
		}
	}
	for _, h := range c.Hosts {
		for _, n := range []string{layout.ManagementVethName(c.Name, h.Name), layout.PodVethName(c.Name, h.Name)} {
			if exec.Command("ip", "link", "show", n).Run() == nil {
				out = append(out, "link "+n)
			}
		}
	}
	rules, err := hostns.LabIptablesRules(context.Background(), c.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules {
		out = append(out, "iptables "+r)
	}
	mps, err := mounts.Under(c.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mps {
		out = append(out, "mount "+m)
	}
	devs, err := loopdev.List(c.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		out = append(out, "loop device "+d.Path+" over "+d.BackingFile)
	}
	for _, pid := range procs.All() {
		if n, ok := procs.NetnsInode(pid); ok {
			for _, ino := range nsInodes {
				if n == ino {
					out = append(out, "process "+string(must(os.ReadFile("/proc/"+itoa(pid)+"/cmdline"))))
				}
			}
		}
	}
	if _, err := os.Stat(c.StateDir); err == nil {
		out = append(out, "state dir "+c.StateDir)
	}
	return out
}

// reaches says whether h gets any TCP answer from addr: a connection to
// sshd, or a refusal, both prove the path works; a timeout does not.
func reaches(ctx context.Context, t *testing.T, h lab.Host, addr string) bool {
	t.Helper()
	r, err := h.Run(ctx, "timeout 2 bash -c 'exec 3<>/dev/tcp/"+addr+"/22' 2>&1; echo rc=$?")
	if err != nil {
		t.Fatalf("ssh to %s: %v", h.Name(), err)
	}
	return strings.Contains(r.Stdout, "rc=0") || strings.Contains(r.Stdout, "refused")
}

func must[T any](v T, _ error) T { return v }
func itoa(i int) string          { return strconv.Itoa(i) }

func TestHostsNetworkSupervisorAndDown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := testConfig(t, "pair")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	l.bareHosts = true
	t.Cleanup(func() {
		// Whatever happened, leave nothing behind.
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("cleanup down: %v", err)
		}
	})
	if err := l.provisionHosts(ctx); err != nil {
		t.Fatal(err)
	}
	var inodes []uint64
	for _, h := range c.Hosts {
		ino, ok := procs.NamedNetnsInode(layout.NetnsName(c.Name, h.Name))
		if !ok {
			t.Fatalf("namespace of %s missing", h.Name)
		}
		inodes = append(inodes, ino)
	}

	cp, _ := l.Host("pair-cp")
	worker, _ := l.Host("pair-worker")

	// SSH reaches each host in its own namespace, with its own address.
	r, err := worker.Run(ctx, "ip -o -4 addr show")
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("ssh to worker: %v %+v", err, r)
	}
	if !strings.Contains(r.Stdout, "eth0") || !strings.Contains(r.Stdout, worker.Address()+"/24") {
		t.Errorf("worker's eth0 lacks its address: %s", r.Stdout)
	}
	if hn, err := worker.Run(ctx, "hostname"); err != nil || strings.TrimSpace(hn.Stdout) != "pair-worker" {
		t.Errorf("the worker's hostname is %q (%v)", hn.Stdout, err)
	}
	if !strings.Contains(r.Stdout, "pod0") || !strings.Contains(r.Stdout, "10.241.0.2/24") {
		t.Errorf("worker's pod transport link lacks its address: %s", r.Stdout)
	}
	// Management and pod transport both connect the hosts.
	for _, target := range []string{cp.Address(), "10.241.0.1"} {
		if !reaches(ctx, t, worker, target) {
			t.Errorf("worker cannot reach %s", target)
		}
	}
	r, _ = worker.Run(ctx, "ip route show 10.241.1.0/24")
	if !strings.Contains(r.Stdout, "via 10.241.0.1 dev pod0") {
		t.Errorf("worker has no route to pair-cp's pods: %q", r.Stdout)
	}

	// Cutting the pod network leaves management up.
	if err := worker.(*Host).SetLink(ctx, NetworkPods, false); err != nil {
		t.Fatal(err)
	}
	if reaches(ctx, t, worker, "10.241.0.1") {
		t.Errorf("pod network still answers after its link went down")
	}
	if !reaches(ctx, t, worker, cp.Address()) {
		t.Errorf("management network lost with the pod network")
	}
	if err := worker.(*Host).SetLink(ctx, NetworkPods, true); err != nil {
		t.Fatal(err)
	}
	if err := lab.WaitFor(ctx, "the pod network to answer again", 20*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		return reaches(ctx, t, worker, "10.241.0.1"), nil
	}); err != nil {
		t.Error(err)
	}

	// The supervisor: freeze, thaw, stop, start.
	state := func(h lab.Host, svc string) (int, string) {
		ss, err := h.Services(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			if s.Name == svc {
				return s.PID, s.State
			}
		}
		t.Fatalf("%s has no service %s", h.Name(), svc)
		return 0, ""
	}
	pid, st := state(worker, "sshd")
	if st != supervise.StateRunning || pid == 0 {
		t.Fatalf("sshd on worker: %d %s", pid, st)
	}
	if err := worker.Signal(ctx, "sshd", syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if _, st := state(worker, "sshd"); st != supervise.StateFrozen {
		t.Errorf("after SIGSTOP sshd is %s", st)
	}
	if err := worker.Signal(ctx, "sshd", syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, st := state(worker, "sshd"); st != supervise.StateRunning {
		t.Errorf("after SIGCONT sshd is %s", st)
	}
	if err := worker.StopService(ctx, "sshd"); err != nil {
		t.Fatal(err)
	}
	if _, st := state(worker, "sshd"); st != supervise.StateStopped {
		t.Errorf("after stop sshd is %s", st)
	}
	if err := worker.StartService(ctx, "sshd"); err != nil {
		t.Fatal(err)
	}
	if pid2, st := state(worker, "sshd"); st != supervise.StateRunning || pid2 == pid {
		t.Errorf("after start sshd is %s (pid %d, was %d)", st, pid2, pid)
	}
	if err := worker.StartService(ctx, "no-such-service"); err == nil || !strings.Contains(err.Error(), "no-such-service") {
		t.Errorf("starting an unknown service: %v", err)
	}

	// Power off: nothing of the host runs and it does not answer.
	stray := exec.Command("nsenter", "--net="+layout.NetnsPath(layout.NetnsName(c.Name, "pair-worker")), "sleep", "600")
	stray.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	go stray.Wait()
	if err := worker.PowerOff(ctx); err != nil {
		t.Fatal(err)
	}
	if p := procs.OfHost(c.Name, "pair-worker"); len(p) != 0 {
		t.Errorf("processes of a powered-off host: %v", p)
	}
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	if _, err := worker.Run(short, "true"); err == nil {
		t.Errorf("a powered-off host answered SSH")
	}
	cancelShort()
	if err := worker.PowerOn(ctx); err != nil {
		t.Fatal(err)
	}
	if err := worker.(*Host).waitSSH(ctx); err != nil {
		t.Fatal(err)
	}

	// A crash of the lab command: a new Lab value, with only the state
	// dir to go on, and a stray process in a host's namespace.
	stray = exec.Command("nsenter", "--net="+layout.NetnsPath(layout.NetnsName(c.Name, "pair-cp")), "sleep", "600")
	stray.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := stray.Start(); err != nil {
		t.Fatal(err)
	}
	go stray.Wait()
	again, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Down(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if left := leftovers(t, c, inodes); len(left) > 0 {
		t.Errorf("left after down:\n%s", strings.Join(left, "\n"))
	}
}
