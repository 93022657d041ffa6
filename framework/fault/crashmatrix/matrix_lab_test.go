//go:build lab

package crashmatrix_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
)

// Environment of the matrix:
//
//	FAULTLINE_CRASH_FAULTLINE  a built faultline binary (default: built once into a temporary directory)
//	FAULTLINE_CRASH_TABLE      a file each cell's row is appended to, as JSON lines
//	FAULTLINE_CRASH_PREFIX     prepended to the labs' names ("crash-" by default)
const (
	binaryEnv = "FAULTLINE_CRASH_FAULTLINE"
	tableEnv  = "FAULTLINE_CRASH_TABLE"
	prefixEnv = "FAULTLINE_CRASH_PREFIX"
)

// topologies the matrix runs on: lab11 and lab11s for every kind, pair
// for power-off.
var topologies = []string{"lab11", "lab11s", "pair"}

// TestCrashMatrix brings up one lab per topology (only those -run selects:
// TestCrashMatrix/lab11$/partition), takes its clean fingerprint once, and
// runs every cell of every kind on it: the run killed at the cell's
// moment, `faultline heal` in a fresh process, the lab checked against the
// fingerprint. A cell that leaves something fails and the lab is reset
// before the next.
func TestCrashMatrix(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	bin := faultlineBinary(t)
	for _, topo := range topologies {
		t.Run(topo, func(t *testing.T) {
			m := upMatrix(t, topo, bin)
			t.Run("fingerprint-control", m.fingerprintControls)
			for _, e := range catalog {
				if !e.runsOn(topo) {
					continue
				}
				t.Run(e.kind, func(t *testing.T) {
					for _, c := range e.cells(m.shape) {
						t.Run(c.name, func(t *testing.T) { m.runCell(t, e, c) })
					}
				})
			}
			if topo == "lab11" {
				t.Run("host-processes-killed", m.hostProcessesKilled)
			}
			m.reportFinal(t)
		})
	}
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// TestMain removes the faultline program the matrix built, once every
// test is done.
func TestMain(m *testing.M) {
	code := m.Run()
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

// faultlineBinary is the faultline program `faultline heal` runs as.
func faultlineBinary(t *testing.T) string {
	if p := os.Getenv(binaryEnv); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "faultline-crash-bin-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "faultline")
		cmd := exec.Command("go", "build", "-o", built, "./cmd/faultline")
		cmd.Dir = "../../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building faultline: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// matrix is one lab and what the cells share on it.
type matrix struct {
	t       *testing.T
	topo    string
	name    string
	cfgPath string
	bin     string
	l       lab.Lab
	kc      kubernetes.Interface
	shape   shape
	nodes   []string
	clean   fingerprint
	// dirty: the last cell left something; the lab is reset before the
	// next.
	dirty bool
	seq   int
	rows  []row
}

// upMatrix writes the topology's lab file under its own name and state
// dir, brings the lab up (down at the end), and takes the clean
// fingerprint once the lab has settled.
func upMatrix(t *testing.T, topo, bin string) *matrix {
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "labs", topo+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	prefix := os.Getenv(prefixEnv)
	if prefix == "" {
		prefix = "crash-"
	}
	name := prefix + topo
	base := os.Getenv("FAULTLINE_STATE_DIR")
	if base == "" {
		base = "/var/tmp"
	}
	// Short names: a worker's CSI node socket lies seven levels below
	// the state dir and must fit a unix socket's 107-byte address.
	dir, err := os.MkdirTemp(base, "flc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	doc["name"] = name
	doc["stateDir"] = filepath.Join(dir, "s")
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, topo+".yaml")
	if err := os.WriteFile(cfgPath, out, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := lab.OpenFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := l.(lab.Provisioner)
	if !ok {
		t.Fatal("the local lab is not a Provisioner")
	}
	t.Cleanup(func() {
		if err := p.Down(context.Background()); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	ctx := context.Background()
	start := time.Now()
	if err := p.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("%s up in %s", name, time.Since(start).Round(time.Second))
	path, err := l.Kubeconfig("")
	if err != nil {
		t.Fatal(err)
	}
	kc, _, err := source.ClientFromKubeconfig(path, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m := &matrix{t: t, topo: topo, name: name, cfgPath: cfgPath, bin: bin, l: l, kc: kc}
	m.shape.topology = topo
	for _, h := range l.Hosts() {
		if h.HasRole(lab.RoleWorker) {
			m.shape.workers = append(m.shape.workers, h.Name())
		}
		if h.HasRole(lab.RoleControlPlane) {
			m.shape.controlPlane = append(m.shape.controlPlane, h.Name())
		}
		if h.HasRole(lab.RoleWorker) || h.HasRole(lab.RoleControlPlane) {
			m.nodes = append(m.nodes, h.Name())
		}
	}
	if sd, ok := l.(lab.StoredData); ok {
		if info, err := sd.StorageInfo(); err == nil {
			m.shape.fenced = info.BlockFencedClass
		}
	}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixtureNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if why := m.waitSettled(ctx); why != "" {
		t.Fatalf("the lab never settled after up: %s", why)
	}
	if m.clean, err = m.fingerprint(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("clean fingerprint of %s: %d aspects", name, len(m.clean))
	return m
}

// reset resets the lab after a cell left something, and takes its clean
// fingerprint again: a reset restores the cold snapshot, which files'
// times and processes need not match the first fingerprint's; what differs
// from it is logged.
func (m *matrix) reset(t *testing.T, ctx context.Context) {
	t.Logf("the last cell left the lab unclean: resetting it")
	if err := m.l.Reset(ctx); err != nil {
		t.Fatalf("reset: %v", err)
	}
	if why := m.waitSettled(ctx); why != "" {
		t.Fatalf("the lab never settled after a reset: %s", why)
	}
	fp, err := m.fingerprint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.clean.diff(fp); d != "" {
		t.Logf("after the reset the clean fingerprint differs from the first one:\n%s", d)
	}
	m.clean, m.dirty = fp, false
}

// waitSettled waits up to 4 minutes for the lab to settle and says why it
// did not.
func (m *matrix) waitSettled(ctx context.Context) string {
	deadline := time.Now().Add(4 * time.Minute)
	for {
		why := m.settled(ctx)
		if why == "" || time.Now().After(deadline) {
			return why
		}
		time.Sleep(2 * time.Second)
	}
}

// waitClean waits until the lab has settled and its fingerprint is the
// clean one (a kubelet unmounting a removed pod's volumes, an agent
// restarted putting its jumps back, take a moment); it returns the
// difference left when it gives up.
func (m *matrix) waitClean(ctx context.Context) string {
	deadline := time.Now().Add(4 * time.Minute)
	last := ""
	for {
		if why := m.settled(ctx); why != "" {
			last = "not settled: " + why
		} else if fp, err := m.fingerprint(ctx); err != nil {
			last = "fingerprint: " + err.Error()
		} else if d := m.clean.diff(fp); d != "" {
			last = d
		} else {
			return ""
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(3 * time.Second)
	}
}

// row is one cell's line of the matrix's table.
type row struct {
	Date     string   `json:"date"`
	Topology string   `json:"topology"`
	Kind     string   `json:"kind"`
	Cell     string   `json:"cell"`
	Point    string   `json:"point,omitempty"`
	Heal     string   `json:"healPoint,omitempty"`
	Reached  bool     `json:"reached"`
	Skip     string   `json:"unreachable,omitempty"`
	Healed   bool     `json:"healed"`
	Clean    bool     `json:"clean"`
	Found    []string `json:"found,omitempty"`
	Removed  []string `json:"removed,omitempty"`
	Seconds  float64  `json:"seconds"`
	Load     string   `json:"load"`
	Problem  string   `json:"problem,omitempty"`
}

// runCell runs one cell: fixtures, the run killed at the cell's moment,
// `faultline heal` (killed once first, for cellHealKilled), the fixtures
// removed, the lab checked against its clean fingerprint.
func (m *matrix) runCell(t *testing.T, e entry, c cell) {
	ctx := context.Background()
	start := time.Now()
	r := row{Date: start.UTC().Format(time.RFC3339), Topology: m.topo, Kind: e.kind, Cell: c.name, Point: c.point, Heal: c.healPoint, Load: loadavg()}
	defer func() {
		r.Seconds = time.Since(start).Round(time.Second).Seconds()
		m.record(t, r)
	}()
	if c.unreachable != "" {
		r.Skip = c.unreachable
		t.Skipf("not on the local lab: %s", c.unreachable)
	}
	if m.dirty {
		m.reset(t, ctx)
	}
	fx := m.makeFixtures(t, ctx, e)
	defer func() {
		if t.Failed() && !r.Clean {
			m.dirty = true
		}
	}()
	f := e.make(m.shape, fx)
	var killWhen func(context.Context) bool
	if c.name == cellFencing {
		killWhen = m.detachBegun(fx)
	}
	out, killed, err := m.runChild(ctx, f, c.point, killWhen)
	switch {
	case err != nil:
		r.Problem = err.Error()
		t.Errorf("the run: %v\n%s", err, tail(out))
	case !killed:
		r.Problem = "the run was not killed: its moment never came"
		t.Errorf("%s\n%s", r.Problem, tail(out))
	case c.point != "" && !strings.Contains(out, crashpoint.Line+pointLine(c.point)):
		r.Problem = "the run died elsewhere than at " + c.point
		t.Errorf("%s\n%s", r.Problem, tail(out))
	default:
		r.Reached = true
	}
	if c.healPoint != "" {
		hout, code, hkilled := m.heal(ctx, c.healPoint)
		if !hkilled || !strings.Contains(hout, crashpoint.Line+pointLine(c.healPoint)) {
			msg := fmt.Sprintf("faultline heal was not killed at %s (exit %d)", c.healPoint, code)
			r.Problem = strings.TrimPrefix(r.Problem+"; "+msg, "; ")
			r.Reached = false
			t.Errorf("%s:\n%s", msg, hout)
		}
	}
	hout, code, _ := m.heal(ctx, "")
	r.Healed = code == 0
	r.Found, r.Removed = account(hout)
	t.Logf("faultline heal (exit %d):\n%s", code, hout)
	if code != 0 {
		t.Errorf("faultline heal exited %d", code)
	}
	m.removeFixtures(t, ctx, fx)
	if d := m.waitClean(ctx); d != "" {
		m.dirty = true
		r.Problem = strings.TrimPrefix(r.Problem+"; left: "+firstLine(d), "; ")
		t.Errorf("the lab differs from its clean fingerprint after heal:\n%s", d)
		return
	}
	r.Clean = true
}

// pointLine is how the crash line names a point with its count.
func pointLine(p string) string {
	if strings.Contains(p, "#") {
		return p
	}
	return p + "#1"
}

// runChild runs the run to kill: this test binary's TestCrashChild with
// the fault, killed by its crash point (or by killWhen, polled). It
// returns its output and whether it died of SIGKILL.
func (m *matrix) runChild(ctx context.Context, f fault.Fault, point string, killWhen func(context.Context) bool) (string, bool, error) {
	spec, err := json.Marshal(childSpec{Lab: m.cfgPath, Kind: f.Kind(), Params: f.Params()})
	if err != nil {
		return "", false, err
	}
	outFile, err := os.CreateTemp("", "faultline-crash-run-")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(outFile.Name())
	defer outFile.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	if point != "" {
		cmd.Env = append(cmd.Env, crashpoint.Env+"="+point)
	}
	// A file, not a pipe: what the run starts on the lab (a service, a
	// fork) must not hold the test's wait open.
	cmd.Stdout, cmd.Stderr = outFile, outFile
	if err := cmd.Start(); err != nil {
		return "", false, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timeout := time.After(8 * time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var werr error
wait:
	for {
		select {
		case werr = <-done:
			break wait
		case <-timeout:
			_ = cmd.Process.Kill()
			<-done
			b, _ := os.ReadFile(outFile.Name())
			return string(b), false, errors.New("the run did not end within 8 minutes")
		case <-tick.C:
			if killWhen != nil && killWhen(ctx) {
				_ = cmd.Process.Kill()
				killWhen = nil
			}
		}
	}
	b, _ := os.ReadFile(outFile.Name())
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		return string(b), ws.Signaled() && ws.Signal() == syscall.SIGKILL, nil
	}
	return string(b), false, werr
}

// heal runs `faultline heal` on the lab, killed at killAt when given, and
// returns its output, exit code and whether it died of SIGKILL.
func (m *matrix) heal(ctx context.Context, killAt string) (string, int, bool) {
	outFile, err := os.CreateTemp("", "faultline-crash-heal-")
	if err != nil {
		return err.Error(), -1, false
	}
	defer os.Remove(outFile.Name())
	defer outFile.Close()
	hctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(hctx, m.bin, "heal", "--lab", m.cfgPath)
	cmd.Env = os.Environ()
	if killAt != "" {
		cmd.Env = append(cmd.Env, crashpoint.Env+"="+killAt)
	}
	cmd.Stdout, cmd.Stderr = outFile, outFile
	err = cmd.Run()
	b, _ := os.ReadFile(outFile.Name())
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		return string(b), ee.ExitCode(), ws.Signaled() && ws.Signal() == syscall.SIGKILL
	}
	if err != nil {
		return string(b) + err.Error(), -1, false
	}
	return string(b), 0, false
}

// account reads what `faultline heal` said it found and removed.
func account(out string) (found, removed []string) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "  found: "):
			found = append(found, strings.TrimPrefix(line, "  found: "))
		case strings.HasPrefix(line, "  removed: "):
			removed = append(removed, strings.TrimPrefix(line, "  removed: "))
		}
	}
	return found, removed
}

// makeFixtures makes what the kind acts on and waits until it runs.
func (m *matrix) makeFixtures(t *testing.T, ctx context.Context, e entry) fixtures {
	m.seq++
	fx := fixtures{Node: m.shape.worker(e.node)}
	if e.need != needNothing {
		// A reset restores the cluster's data from before the namespace.
		if _, err := m.kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixtureNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	switch e.need {
	case needPod:
		fx.Pod = fmt.Sprintf("crash-pod-%d", m.seq)
		pod := netexecPod(fx.Pod, fx.Node)
		if e.kind == "stop-then-out-of-service" && m.shape.fenced != "" {
			fx.Claim = fmt.Sprintf("crash-vol-%d", m.seq)
			class := m.shape.fenced
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: fx.Claim, Namespace: fixtureNamespace},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: &class,
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")}},
				},
			}
			if _, err := m.kc.CoreV1().PersistentVolumeClaims(fixtureNamespace).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fx.Claim}}}}
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}
		if _, err := m.kc.CoreV1().Pods(fixtureNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	case needDeployment:
		fx.Deployment = fmt.Sprintf("crash-deploy-%d", m.seq)
		two := int32(2)
		labels := map[string]string{"app": fx.Deployment, "crash": "fixture"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fx.Deployment, Namespace: fixtureNamespace},
			Spec: appsv1.DeploymentSpec{
				Replicas: &two,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: netexecPod("", "").Spec},
			},
		}
		if _, err := m.kc.AppsV1().Deployments(fixtureNamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	default:
		return fx
	}
	if err := lab.WaitFor(ctx, "the fixtures running", 3*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		pods, err := m.kc.CoreV1().Pods(fixtureNamespace).List(ctx, metav1.ListOptions{LabelSelector: "crash=fixture"})
		if err != nil {
			return false, err
		}
		want := 1
		if e.need == needDeployment {
			want = 2
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		return ready >= want, nil
	}); err != nil {
		t.Fatal(err)
	}
	return fx
}

// netexecPod is a fixture pod (netexec) on node ("" for any), removed at
// once when deleted.
func netexecPod(name, node string) *corev1.Pod {
	zero := int64(0)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fixtureNamespace, Labels: map[string]string{"crash": "fixture"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers:                    []corev1.Container{{Name: "main", Image: images.Ref("netexec"), ImagePullPolicy: corev1.PullNever}},
		},
	}
	if node != "" {
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	}
	return p
}

// removeFixtures deletes the cell's fixtures and waits until they, their
// volumes and attachments are gone.
func (m *matrix) removeFixtures(t *testing.T, ctx context.Context, fx fixtures) {
	zero := int64(0)
	if fx.Deployment != "" {
		if err := m.kc.AppsV1().Deployments(fixtureNamespace).Delete(ctx, fx.Deployment, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s: %v", fx.Deployment, err)
		}
	}
	if err := m.kc.CoreV1().Pods(fixtureNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: "crash=fixture"}); err != nil {
		t.Errorf("deleting the fixture pods: %v", err)
	}
	var volume string
	if fx.Claim != "" {
		if pvc, err := m.kc.CoreV1().PersistentVolumeClaims(fixtureNamespace).Get(ctx, fx.Claim, metav1.GetOptions{}); err == nil {
			volume = pvc.Spec.VolumeName
		}
	}
	err := lab.WaitFor(ctx, "the fixtures gone", 4*time.Minute, 2*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := m.kc.CoreV1().Pods(fixtureNamespace).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) > 0 {
			return false, err
		}
		if fx.Claim == "" {
			return true, nil
		}
		if err := m.kc.CoreV1().PersistentVolumeClaims(fixtureNamespace).Delete(ctx, fx.Claim, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		if _, err := m.kc.CoreV1().PersistentVolumeClaims(fixtureNamespace).Get(ctx, fx.Claim, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		if volume == "" {
			return true, nil
		}
		if _, err := m.kc.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return false, nil
		}
		vas, err := m.kc.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, va := range vas.Items {
			if src := va.Spec.Source.PersistentVolumeName; src != nil && *src == volume {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("removing the fixtures: %v", err)
	}
}

// detachBegun is the fencing cell's moment: the attach/detach controller
// has begun detaching the fixture's fenced volume from the out-of-service
// node (its VolumeAttachment is being deleted), so the storage host is
// fencing the node, or about to.
func (m *matrix) detachBegun(fx fixtures) func(context.Context) bool {
	return func(ctx context.Context) bool {
		pvc, err := m.kc.CoreV1().PersistentVolumeClaims(fixtureNamespace).Get(ctx, fx.Claim, metav1.GetOptions{})
		if err != nil || pvc.Spec.VolumeName == "" {
			return false
		}
		vas, err := m.kc.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, va := range vas.Items {
			if onNode(va, pvc.Spec.VolumeName, fx.Node) && va.DeletionTimestamp != nil {
				m.t.Logf("VolumeAttachment %s of %s on %s is being deleted: killing the run", va.Name, pvc.Spec.VolumeName, fx.Node)
				return true
			}
		}
		return false
	}
}

func onNode(va storagev1.VolumeAttachment, volume, node string) bool {
	src := va.Spec.Source.PersistentVolumeName
	return src != nil && *src == volume && va.Spec.NodeName == node
}

// record keeps the cell's row, and appends it to the table file.
func (m *matrix) record(t *testing.T, r row) {
	m.rows = append(m.rows, r)
	b, _ := json.Marshal(r)
	t.Logf("row: %s", b)
	path := os.Getenv(tableEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Errorf("table: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Errorf("table: %v", err)
	}
}

// reportFinal logs the topology's cells as a table.
func (m *matrix) reportFinal(t *testing.T) {
	var b strings.Builder
	for _, r := range m.rows {
		status := "healed, clean"
		switch {
		case r.Skip != "":
			status = "not on the local lab"
		case !r.Reached || !r.Healed || !r.Clean:
			status = "FAILED: " + r.Problem
		}
		fmt.Fprintf(&b, "%-26s %-14s %-40s %s; found %d, removed %d (%.0fs)\n", r.Kind, r.Cell, r.Point, status, len(r.Found), len(r.Removed), r.Seconds)
	}
	t.Logf("%s (load %s):\n%s", m.name, loadavg(), b.String())
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

var spaces = regexp.MustCompile(`\s+`)

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return spaces.ReplaceAllString(line, " ")
}
