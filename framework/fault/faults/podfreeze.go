package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/lab"
)

// KindPodFreeze is the kind of FreezePod and FreezeLeaseHolder faults.
const KindPodFreeze = "pod-freeze"

// podFreezeWait bounds the wait for the kernel to report the pod's cgroup
// frozen after inject asked for it.
const podFreezeWait = 10 * time.Second

type podFreezeParams struct {
	Namespace string `json:"namespace"`
	// Pod names the pod; Lease instead names a Lease in Namespace whose
	// holder identity, "<pod>_<suffix>", names it at inject time.
	Pod   string `json:"pod,omitempty"`
	Lease string `json:"lease,omitempty"`
	Tag   string `json:"tag"`
}

func (p podFreezeParams) check() error {
	var errs []error
	if p.Namespace == "" {
		errs = append(errs, errors.New("no namespace named"))
	}
	switch {
	case p.Pod != "" && p.Lease != "":
		errs = append(errs, fmt.Errorf("both pod %q and lease %q given: name one", p.Pod, p.Lease))
	case p.Pod == "" && p.Lease == "":
		errs = append(errs, errors.New("no pod and no lease named"))
	}
	if err := checkTag(p.Tag); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (p podFreezeParams) String() string {
	if p.Lease != "" {
		return "the holder of Lease " + p.Namespace + "/" + p.Lease
	}
	return "pod " + p.Namespace + "/" + p.Pod
}

// FreezePod freezes every process of one pod (its containers and its
// sandbox) with the cgroup freezer of its node: the processes stay alive
// with their sockets open and make no progress, as a paused VM, a long
// stop-the-world pause or a SIGSTOP would leave them; the kubelet and the
// node go on as before. Heal thaws the pod's cgroup.
//
// The pod's cgroup is found on its node by the pod's UID: the kubelet
// names it "pod<uid>" under the cgroupfs driver and
// "kubepods[-<qos>]-pod<uid with _ for ->.slice" under systemd. On a
// cgroup v2 host the fault writes 1 to its cgroup.freeze and waits for
// cgroup.events to say "frozen 1"; on a v1 (or hybrid) host it writes
// FROZEN to the v1 freezer's freezer.state and waits for it to read
// FROZEN. A marker file on the node (/run/faultline-pod-freeze-<tag>)
// names the directory before it is frozen, so a heal from the ledger, in
// another process, finds what to thaw.
func FreezePod(namespace, name string) fault.Fault {
	return &podFreeze{p: podFreezeParams{Namespace: namespace, Pod: name, Tag: newTag()}}
}

// FreezeLeaseHolder freezes the pod that holds the Lease namespace/lease
// at inject time: client-go leader election's holder identity
// "<pod>_<incarnation>" (the part before the last "_" names the pod).
func FreezeLeaseHolder(namespace, lease string) fault.Fault {
	return &podFreeze{p: podFreezeParams{Namespace: namespace, Lease: lease, Tag: newTag()}}
}

type podFreeze struct {
	p podFreezeParams

	// What inject froze, for the probe and heal of the same process;
	// Heal clears it, so the null arm sharing this value starts clean.
	mu     sync.Mutex
	host   lab.Host
	frozen podCgroup
}

func (f *podFreeze) Kind() string            { return KindPodFreeze }
func (f *podFreeze) Class() fault.Class      { return ClassProcessFreeze }
func (f *podFreeze) Params() json.RawMessage { return mustJSON(f.p) }
func (f *podFreeze) marker() string          { return podFreezeMarker(f.p.Tag) }

// podFreezeMarker is the file on a node naming the cgroup a fault with the
// tag froze.
func podFreezeMarker(tag string) string { return "/run/faultline-pod-freeze-" + tag }

// podTarget is the pod found at inject time.
type podTarget struct {
	Name, Node, UID string
}

func (f *podFreeze) Inject(ctx context.Context, l lab.Lab) error {
	if err := f.p.check(); err != nil {
		return fmt.Errorf("pod freeze: %w", err)
	}
	cs, err := kubeClient(l)
	if err != nil {
		return fmt.Errorf("pod freeze of %s: %w", f.p, err)
	}
	t, err := resolvePodTarget(ctx, cs, f.p)
	if err != nil {
		return fmt.Errorf("pod freeze of %s: %w", f.p, err)
	}
	h, err := hostByName(l, t.Node)
	if err != nil {
		return fmt.Errorf("pod freeze of %s: pod %s runs on node %s, which is no host of the lab: %w", f.p, t.Name, t.Node, err)
	}
	cg, err := findPodCgroup(ctx, h, t.UID)
	if err != nil {
		return fmt.Errorf("pod freeze of %s (pod %s, uid %s): %w", f.p, t.Name, t.UID, err)
	}
	f.mu.Lock()
	f.host, f.frozen = h, cg
	f.mu.Unlock()
	if _, err := run(ctx, h, markScript(f.marker(), cg)); err != nil {
		return fmt.Errorf("pod freeze of %s (pod %s): %w", f.p, t.Name, err)
	}
	crashpoint.Reach("pod-freeze/inject/marked")
	if _, err := run(ctx, h, freezeScript(cg)); err != nil {
		return fmt.Errorf("pod freeze of %s (pod %s): %w", f.p, t.Name, err)
	}
	if err := waitFrozen(ctx, h, cg, podFreezeWait); err != nil {
		return fmt.Errorf("pod freeze of %s (pod %s): %w", f.p, t.Name, err)
	}
	return nil
}

// resolvePodTarget finds the pod p names (through its Lease's holder
// when p names a Lease), which must be running on a node.
func resolvePodTarget(ctx context.Context, cs kubernetes.Interface, p podFreezeParams) (podTarget, error) {
	name := p.Pod
	if p.Lease != "" {
		identity, err := holderIn(ctx, cs, p.Namespace, p.Lease)
		if err != nil {
			return podTarget{}, err
		}
		if name, err = holderPod(identity); err != nil {
			return podTarget{}, fmt.Errorf("Lease %s/%s: %w", p.Namespace, p.Lease, err)
		}
	}
	pod, err := cs.CoreV1().Pods(p.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return podTarget{}, fmt.Errorf("reading pod %s/%s: %w", p.Namespace, name, err)
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning {
		return podTarget{}, fmt.Errorf("pod %s/%s is %s on node %q, not running on a node", p.Namespace, name, pod.Status.Phase, pod.Spec.NodeName)
	}
	if !podUID.MatchString(string(pod.UID)) {
		return podTarget{}, fmt.Errorf("pod %s/%s has UID %q, not a UUID", p.Namespace, name, pod.UID)
	}
	return podTarget{Name: name, Node: pod.Spec.NodeName, UID: string(pod.UID)}, nil
}

// holderPod is the pod a leader-election holder identity
// "<pod>_<incarnation>" names.
func holderPod(identity string) (string, error) {
	i := strings.LastIndexByte(identity, '_')
	if i <= 0 {
		return "", fmt.Errorf("holder identity %q is not <pod>_<suffix>", identity)
	}
	return identity[:i], nil
}

var podUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// cgroupRoot is where a node's cgroups are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// podCgroup is a pod's cgroup directory and the freezer it is frozen by.
type podCgroup struct {
	Dir string
	// V2 is the unified hierarchy's cgroup.freeze; otherwise the v1
	// freezer's freezer.state.
	V2 bool
}

func (c podCgroup) control() string {
	if c.V2 {
		return c.Dir + "/cgroup.freeze"
	}
	return c.Dir + "/freezer.state"
}

// searchScript prints the file system type of the cgroup root, then every
// directory of the freezer's tree whose name is the pod's in either of the
// kubelet's spellings. On a v2 host that is the whole tree; on a v1 or
// hybrid host the v1 freezer's (the container runtime's cgroupfs driver
// puts its processes there, and only there is a v1 freezer).
func searchScript(uid string) string {
	under := strings.ReplaceAll(uid, "-", "_")
	return fmt.Sprintf(`t=$(stat -fc %%T %[1]s) && echo "$t" && `+
		`if [ "$t" = cgroup2fs ]; then r=%[1]s; else r=%[1]s/freezer; fi && `+
		`{ [ -d "$r" ] || { echo "no directory $r" >&2; exit 1; }; } && find "$r" -type d \( -name 'pod%[2]s' -o -name '*-pod%[3]s.slice' \) -print`, cgroupRoot, uid, under)
}

// parsePodCgroup reads searchScript's output: the one directory found,
// refusing none or several.
func parsePodCgroup(out, uid string) (podCgroup, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	fsType := strings.TrimSpace(lines[0])
	if fsType == "" {
		return podCgroup{}, fmt.Errorf("no file system type read for %s", cgroupRoot)
	}
	cg := podCgroup{V2: fsType == "cgroup2fs"}
	var dirs []string
	for _, d := range lines[1:] {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	where := cgroupRoot + " (" + fsType + ")"
	if !cg.V2 {
		where = cgroupRoot + "/freezer (" + cgroupRoot + " is " + fsType + ", not cgroup2fs)"
	}
	switch len(dirs) {
	case 0:
		return podCgroup{}, fmt.Errorf("no cgroup named pod%s or *-pod%s.slice under %s", uid, strings.ReplaceAll(uid, "-", "_"), where)
	case 1:
		cg.Dir = dirs[0]
		if !strings.HasPrefix(cg.Dir, cgroupRoot+"/") || strings.ContainsAny(cg.Dir, "'\"$`\\ \t") {
			return podCgroup{}, fmt.Errorf("cgroup directory %q is not a plain path under %s", cg.Dir, cgroupRoot)
		}
		return cg, nil
	}
	return podCgroup{}, fmt.Errorf("several cgroups name the pod under %s: %s", where, strings.Join(dirs, ", "))
}

func findPodCgroup(ctx context.Context, h lab.Host, uid string) (podCgroup, error) {
	if !podUID.MatchString(uid) {
		return podCgroup{}, fmt.Errorf("pod UID %q is not a UUID", uid)
	}
	out, err := run(ctx, h, searchScript(uid))
	if err != nil {
		return podCgroup{}, fmt.Errorf("finding the pod's cgroup: %w", err)
	}
	cg, err := parsePodCgroup(out, uid)
	if err != nil {
		return podCgroup{}, fmt.Errorf("%s: %w", h.Name(), err)
	}
	return cg, nil
}

// markScript records the directory in the marker, before anything is
// frozen, so that a heal finds what to thaw however soon the inject is
// cut short; it refuses a marker that exists (a fault never adopts what
// it did not make).
func markScript(marker string, cg podCgroup) string {
	return script([]string{
		fmt.Sprintf("! [ -e %[1]s ] || { echo 'the marker %[1]s exists already' >&2; exit 1; }", marker),
		fmt.Sprintf("printf '%%s\\n' %s > %s", shellQuote(cg.Dir), marker),
	})
}

// freezeScript freezes the cgroup.
func freezeScript(cg podCgroup) string {
	value := "FROZEN"
	if cg.V2 {
		value = "1"
	}
	return fmt.Sprintf("echo %s > %s", value, shellQuote(cg.control()))
}

// thawScript thaws the directory the marker names, if the marker and the
// directory are there (a directory gone is a pod gone: nothing to thaw),
// printing what it found and thawed (healRun), and then "marked" when
// there was a marker: the marker goes only after the thaw
// (dropMarkerScript), so a heal cut short between them thaws again.
func thawScript(marker string) string {
	return fmt.Sprintf(`if [ -f %[1]s ]; then d=$(cat %[1]s); echo "%[2]smarker %[1]s naming cgroup $d"; `+
		`if [ -e "$d/cgroup.freeze" ]; then f=$(cat "$d/cgroup.freeze"); if [ "$f" = 1 ]; then echo "%[2]scgroup $d frozen"; fi; echo 0 > "$d/cgroup.freeze" || exit 1; if [ "$f" = 1 ]; then echo "%[3]sthe freeze of cgroup $d (thawed)"; fi; `+
		`elif [ -e "$d/freezer.state" ]; then f=$(cat "$d/freezer.state"); if [ "$f" != THAWED ]; then echo "%[2]scgroup $d $f"; fi; echo THAWED > "$d/freezer.state" || exit 1; if [ "$f" != THAWED ]; then echo "%[3]sthe freeze of cgroup $d (thawed)"; fi; `+
		`else echo "%[2]sno cgroup $d: the pod is gone"; fi; echo marked; fi`, marker, foundLine, removedLine)
}

// dropMarkerScript removes the marker once its cgroup is thawed.
func dropMarkerScript(marker string) string {
	return fmt.Sprintf(`rm -f %[1]s && echo "%[2]smarker %[1]s"`, marker, removedLine)
}

// stateScript reads what the kernel says of the cgroup's freezing.
func stateScript(cg podCgroup) string {
	if cg.V2 {
		return "cat " + shellQuote(cg.Dir+"/cgroup.events")
	}
	return "cat " + shellQuote(cg.Dir+"/freezer.state")
}

// parseFrozen reads stateScript's output: whether the cgroup is frozen,
// and the state as the kernel put it.
func parseFrozen(out string, v2 bool) (bool, string, error) {
	if !v2 {
		st := strings.TrimSpace(out)
		switch st {
		case "FROZEN":
			return true, st, nil
		case "FREEZING", "THAWED":
			return false, st, nil
		}
		return false, st, fmt.Errorf("freezer.state %q is none of THAWED, FREEZING, FROZEN", st)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "frozen" {
			switch f[1] {
			case "1":
				return true, "frozen 1", nil
			case "0":
				return false, "frozen 0", nil
			}
		}
	}
	return false, "", fmt.Errorf("cgroup.events has no frozen line: %q", strings.TrimSpace(out))
}

func frozenNow(ctx context.Context, h lab.Host, cg podCgroup) (bool, string, error) {
	out, err := run(ctx, h, stateScript(cg))
	if err != nil {
		return false, "", err
	}
	return parseFrozen(out, cg.V2)
}

// waitFrozen waits until the kernel reports cg frozen: the write to the
// control file returns before every task has stopped.
func waitFrozen(ctx context.Context, h lab.Host, cg podCgroup, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		frozen, st, err := frozenNow(ctx, h, cg)
		if err != nil {
			return err
		}
		if frozen {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: cgroup %s not frozen after %s (%s)", h.Name(), cg.Dir, bound, st)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for cgroup %s to freeze: %w", h.Name(), cg.Dir, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Heal thaws what the marker names, on the host inject froze on, or, from
// the ledger in another process, on every host that runs pods (the pod's
// node is not in the parameters: it was found after they were written).
// With no marker there is nothing to do, so heal is idempotent.
func (f *podFreeze) Heal(ctx context.Context, l lab.Lab) error {
	if err := checkTag(f.p.Tag); err != nil {
		return fmt.Errorf("healing pod freeze of %s: %w", f.p, err)
	}
	f.mu.Lock()
	h := f.host
	f.mu.Unlock()
	hosts := []lab.Host{h}
	if h == nil {
		hosts = podHosts(l)
	}
	var errs []error
	for _, h := range hosts {
		out, err := healRun(ctx, h, thawScript(f.marker()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.TrimSpace(out) != "marked" {
			continue
		}
		crashpoint.Reach("pod-freeze/heal/thawed")
		if _, err := healRun(ctx, h, dropMarkerScript(f.marker())); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("healing pod freeze of %s: %w", f.p, err)
	}
	f.mu.Lock()
	f.host, f.frozen = nil, podCgroup{}
	f.mu.Unlock()
	return nil
}

// podHosts are the hosts that run pods.
// ThawFrozen is the change that thaws, inside a run's window, what f (a
// FreezePod or FreezeLeaseHolder fault) froze in this process: the thaw
// on the one host its inject froze, and nothing where this process froze
// nothing, as in a null arm, whose run stands a null fault in for f.
// f.Heal, by contrast, searches every host that runs pods for the fault's
// marker when it knows no host, as a heal from the ledger in a fresh
// process must: inside a window's last seconds on a loaded lab, that
// search did not finish in time and cut the null arm's run short.
func ThawFrozen(f fault.Fault) func(context.Context, lab.Lab) error {
	pf, ok := f.(*podFreeze)
	if !ok {
		panic(fmt.Sprintf("faults.ThawFrozen of a %s fault: it thaws pod freezes only", f.Kind()))
	}
	return func(ctx context.Context, l lab.Lab) error {
		pf.mu.Lock()
		froze := pf.host != nil
		pf.mu.Unlock()
		if !froze {
			return nil
		}
		return pf.Heal(ctx, l)
	}
}

func podHosts(l lab.Lab) []lab.Host {
	var out []lab.Host
	for _, h := range l.Hosts() {
		if h.HasRole(lab.RoleWorker) || h.HasRole(lab.RoleControlPlane) {
			out = append(out, h)
		}
	}
	return out
}

// Probe reads the freezer state of the cgroup inject froze, or, where
// nothing was injected (the null arm), of the pod the parameters name now.
func (f *podFreeze) Probe(ctx context.Context, l lab.Lab) (fault.Effect, error) {
	f.mu.Lock()
	h, cg := f.host, f.frozen
	f.mu.Unlock()
	if h == nil {
		cs, err := kubeClient(l)
		if err != nil {
			return fault.Effect{}, err
		}
		t, err := resolvePodTarget(ctx, cs, f.p)
		if err != nil {
			return fault.Effect{}, err
		}
		if h, err = hostByName(l, t.Node); err != nil {
			return fault.Effect{}, err
		}
		if cg, err = findPodCgroup(ctx, h, t.UID); err != nil {
			return fault.Effect{}, err
		}
	}
	frozen, st, err := frozenNow(ctx, h, cg)
	if err != nil {
		return fault.Effect{}, err
	}
	return fault.Effect{Observed: frozen, Detail: fmt.Sprintf("cgroup %s on %s: %s", cg.Dir, h.Name(), st)}, nil
}

func init() {
	register(KindPodFreeze, func(p podFreezeParams) fault.Fault { return &podFreeze{p: p} })
}
