//go:build lab

package local

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/procs"
	"github.com/faultline/faultline/lab/local/internal/vdsoskew"
)

// clockSkewChildEnv carries the state dir to TestClockSkewChild.
const clockSkewChildEnv = "FAULTLINE_CLOCKSKEW_CHILD"

// dateSkew reads the Date header of an HTTP endpoint the host reaches at
// address and returns how far it is from this program's clock (to ±0.5 s
// plus half the round trip: the header holds whole seconds).
func dateSkew(ctx context.Context, h lab.Host, address string, useTLS bool) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := h.Dial(ctx, "tcp", address)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if useTLS {
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true})
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, err
		}
		conn = tc
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/healthz", nil)
	req.Close = true
	before := time.Now()
	if err := req.Write(conn); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	after := time.Now()
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return 0, fmt.Errorf("%s: no Date header (%s)", address, resp.Status)
	}
	return d.Add(500 * time.Millisecond).Sub(before.Add(after.Sub(before) / 2)), nil
}

func checkDate(ctx context.Context, t *testing.T, h lab.Host, address string, useTLS bool, want time.Duration) {
	t.Helper()
	got, err := dateSkew(ctx, h, address, useTLS)
	if err != nil {
		t.Errorf("%s: reading %s's Date: %v", h.Name(), address, err)
		return
	}
	if (got - want).Abs() > 1500*time.Millisecond {
		t.Errorf("%s: %s's clock is %s off, want %s", h.Name(), address, got.Round(100*time.Millisecond), want)
	}
}

// hostShifted waits until every process of the host that has run for two
// reconciler rounds reads the offset (zero: none is shifted), and fails
// naming those that do not.
func hostShifted(t *testing.T, l *Lab, host string, want time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var bad []string
		n := 0
		for _, pid := range procs.OfHost(l.cfg.Name, host) {
			off, on, err := vdsoskew.Patched(pid)
			if errors.Is(err, vdsoskew.ErrGone) {
				continue
			}
			if started, serr := procs.Started(pid); serr != nil || time.Since(started) < 2*reconcileEvery+500*time.Millisecond {
				continue // the reconciler may not have reached it yet
			}
			n++
			switch {
			case err != nil:
				bad = append(bad, fmt.Sprintf("%s: %v", describePID(pid), err))
			case want == 0 && (on || off != 0):
				bad = append(bad, fmt.Sprintf("%s shifted by %s (entry patched: %v)", describePID(pid), time.Duration(off), on))
			case want != 0 && (!on || off != want):
				bad = append(bad, fmt.Sprintf("%s at %s (entry patched: %v)", describePID(pid), time.Duration(off), on))
			}
		}
		if len(bad) == 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: of %d processes, not at %s:\n%s", host, n, want, strings.Join(bad, "\n"))
			return n
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// pidsNamed are the host's processes whose executable is named exe.
func pidsNamed(l *Lab, host, exe string) []int {
	var out []int
	for _, pid := range procs.OfHost(l.cfg.Name, host) {
		if p, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && filepath.Base(p) == exe {
			out = append(out, pid)
		}
	}
	return out
}

// waitShifted waits until pid reads want.
func waitShifted(t *testing.T, pid int, want time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * reconcileEvery)
	for {
		off, on, err := vdsoskew.Patched(pid)
		if err == nil && on && off == want {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s (%s) not shifted within %s: %s %v %v", what, describePID(pid), 5*reconcileEvery, time.Duration(off), on, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClockSkewOnPair skews the pair lab's worker: every process of the
// worker reads the offset (sshd, containerd and its shims, kubelet,
// kube-proxy, the pods' containers) and its kubelet's Date header shows
// it, while the control-plane host reads true time; a kubelet restarted
// and a container started during the skew are shifted too. Skewing the
// control-plane host, its keeper's restart of a killed scheduler is
// shifted. Heal puts every process back with nothing else changed. A
// child process that skews the worker and is killed with SIGKILL leaves
// the processes shifted, and a fresh Lab, with nothing of the child's,
// heals them.
func TestClockSkewOnPair(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	c := testConfig(t, "pair")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	l.SetProgress(os.Stderr)
	t.Cleanup(func() {
		keepLogs(t, c)
		if err := l.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
		if left := leftovers(t, c, nil); len(left) > 0 {
			t.Errorf("left after down:\n%s", strings.Join(left, "\n"))
		}
	})
	if err := l.Up(ctx); err != nil {
		t.Fatal(err)
	}
	worker, _ := l.Host("pair-worker")
	cp, _ := l.Host("pair-cp")
	kc, err := l.kubeClient("")
	if err != nil {
		t.Fatal(err)
	}
	kubelet := func(h lab.Host) string { return net.JoinHostPort(h.Address(), "10248") }
	api := net.JoinHostPort(cp.Address(), strconv.Itoa(c.Network.APIServerPort))
	scheduler := net.JoinHostPort(cp.Address(), "10259")

	hostShifted(t, l, "pair-worker", 0)
	hostShifted(t, l, "pair-cp", 0)
	checkDate(ctx, t, worker, kubelet(worker), false, 0)

	const skew = 90 * time.Second
	start := time.Now()
	if err := l.SkewProcesses(ctx, "pair-worker", skew); err != nil {
		t.Fatal(err)
	}
	t.Logf("skewed the worker's processes in %s", time.Since(start).Round(time.Millisecond))
	n := hostShifted(t, l, "pair-worker", skew)
	t.Logf("%d processes of the worker shifted", n)
	hostShifted(t, l, "pair-cp", 0)
	checkDate(ctx, t, worker, kubelet(worker), false, skew)
	checkDate(ctx, t, cp, kubelet(cp), false, 0)
	checkDate(ctx, t, cp, api, true, 0)
	if st, err := l.Status(ctx); err == nil {
		for _, hs := range st.Hosts {
			if got := strings.Contains(hs.Detail, "skewed by 1m30s"); got != (hs.Name == "pair-worker") {
				t.Errorf("status of %s: %q", hs.Name, hs.Detail)
			}
		}
	}

	// A component restarted during the skew.
	before := serviceOf(ctx, t, worker, lab.ServiceKubelet).PID
	if err := worker.StopService(ctx, lab.ServiceKubelet); err != nil {
		t.Fatal(err)
	}
	if err := worker.StartService(ctx, lab.ServiceKubelet); err != nil {
		t.Fatal(err)
	}
	after := serviceOf(ctx, t, worker, lab.ServiceKubelet).PID
	if after == before {
		t.Fatalf("the kubelet was not restarted (pid %d)", after)
	}
	waitShifted(t, after, skew, "the restarted kubelet")
	if err := lab.WaitFor(ctx, "the restarted kubelet's health port", time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		_, err := dateSkew(ctx, worker, kubelet(worker), false)
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	checkDate(ctx, t, worker, kubelet(worker), false, skew)
	waitCondition(ctx, t, kc, "pair-worker", "True", 2*time.Minute)

	// A container started during the skew.
	imgs, err := l.comp.Images()
	if err != nil {
		t.Fatal(err)
	}
	image := ""
	for _, r := range imgs.Refs {
		if strings.Contains(r, "netexec") {
			image = r
		}
	}
	if image == "" {
		t.Fatalf("no netexec image among %v", imgs.Refs)
	}
	if _, err := kc.AppsV1().StatefulSets("default").Create(ctx, statefulSet(image, "pair-worker"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	if err := lab.WaitFor(ctx, "lab-check-0 Running", 3*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		p, err := kc.CoreV1().Pods("default").Get(ctx, "lab-check-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", fmt.Errorf("phase %s", p.Status.Phase)
	}); err != nil {
		t.Fatal(err)
	}
	containers := pidsNamed(l, "pair-worker", "netexec")
	if len(containers) == 0 {
		t.Fatal("no netexec process among the worker's")
	}
	for _, pid := range containers {
		waitShifted(t, pid, skew, "the new container")
	}
	checkDate(ctx, t, worker, net.JoinHostPort(pod.Status.PodIP, "8080"), false, skew)
	hostShifted(t, l, "pair-worker", skew)

	// The control-plane host: its keeper restarts a killed scheduler,
	// which is shifted in turn.
	if err := l.SkewProcesses(ctx, "pair-cp", -time.Hour); err != nil {
		t.Fatal(err)
	}
	hostShifted(t, l, "pair-cp", -time.Hour)
	checkDate(ctx, t, cp, api, true, -time.Hour)
	old := serviceOf(ctx, t, cp, lab.ServiceScheduler).PID
	if err := cp.Signal(ctx, lab.ServiceScheduler, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var restarted int
	if err := lab.WaitFor(ctx, "the keeper to restart the scheduler", time.Minute, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		s := serviceOf(ctx, t, cp, lab.ServiceScheduler)
		restarted = s.PID
		return s.State == "running" && s.PID != old, nil
	}); err != nil {
		t.Fatal(err)
	}
	waitShifted(t, restarted, -time.Hour, "the scheduler the keeper restarted")
	if err := lab.WaitFor(ctx, "the restarted scheduler's port", time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		_, err := dateSkew(ctx, cp, scheduler, true)
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	checkDate(ctx, t, cp, scheduler, true, -time.Hour)
	hostShifted(t, l, "pair-worker", skew)
	if err := l.UnskewProcesses(ctx, "pair-cp"); err != nil {
		t.Fatal(err)
	}
	hostShifted(t, l, "pair-cp", 0)
	checkDate(ctx, t, cp, api, true, 0)

	// Heal the worker: every process back, nothing else changed.
	svcBefore, err := worker.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.UnskewProcesses(ctx, "pair-worker"); err != nil {
		t.Fatal(err)
	}
	hostShifted(t, l, "pair-worker", 0)
	hostShifted(t, l, "pair-cp", 0)
	checkDate(ctx, t, worker, kubelet(worker), false, 0)
	checkDate(ctx, t, worker, net.JoinHostPort(pod.Status.PodIP, "8080"), false, 0)
	svcAfter, err := worker.Services(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(svcBefore) != fmt.Sprint(svcAfter) {
		t.Errorf("heal changed the worker's services:\nbefore %v\nafter  %v", svcBefore, svcAfter)
	}
	if _, err := os.Stat(l.clockSkewFile("pair-worker")); !os.IsNotExist(err) {
		t.Errorf("skew file left after heal: %v", err)
	}
	waitCondition(ctx, t, kc, "pair-worker", "True", 2*time.Minute)

	// A killed injector: its skew outlives it, and a fresh Lab heals it.
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestClockSkewChild$", "-test.v")
	// The child is killed, so its own temporary directories are never
	// removed: they go under this test's, which is.
	cmd.Env = append(os.Environ(), clockSkewChildEnv+"="+c.StateDir, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	skewed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		t.Logf("child: %s", sc.Text())
		if strings.Contains(sc.Text(), "SKEWED") {
			skewed = true
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !skewed {
		t.Fatal("the child never skewed the worker")
	}
	hostShifted(t, l, "pair-worker", skew)
	checkDate(ctx, t, worker, kubelet(worker), false, skew)
	fresh, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.UnskewProcesses(ctx, "pair-worker"); err != nil {
		t.Fatal(err)
	}
	hostShifted(t, l, "pair-worker", 0)
	checkDate(ctx, t, worker, kubelet(worker), false, 0)
	hostShifted(t, l, "pair-cp", 0)
}

// TestClockSkewChild is the killed injector of TestClockSkewOnPair; it
// does nothing unless run by it.
func TestClockSkewChild(t *testing.T) {
	dir := os.Getenv(clockSkewChildEnv)
	if dir == "" {
		t.Skip("run only as TestClockSkewOnPair's child")
	}
	c := testConfig(t, "pair")
	c.StateDir = dir
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SkewProcesses(context.Background(), "pair-worker", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	fmt.Println("SKEWED")
	time.Sleep(10 * time.Minute)
}
