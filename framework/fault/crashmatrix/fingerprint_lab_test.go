//go:build lab

package crashmatrix_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline/faultline/framework/fault/controls"
	"github.com/faultline/faultline/framework/ledger"
	"github.com/faultline/faultline/lab"
)

// fingerprint is what a fault may leave in the lab, aspect by aspect
// ("worker1 iptables", "mounts", ...), each rendered as text: two
// fingerprints of a clean lab are equal.
type fingerprint map[string]string

// diff lists the aspects that differ, with both texts.
func (a fingerprint) diff(b fingerprint) string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		if a[k] != b[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var out strings.Builder
	for _, k := range names {
		fmt.Fprintf(&out, "%s:\n  clean:\n%s\n  now:\n%s\n", k, indent(a[k]), indent(b[k]))
	}
	return out.String()
}

func indent(s string) string {
	if s == "" {
		return "    (nothing)"
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

var (
	counters = regexp.MustCompile(`\[\d+:\d+\]`)
	// builtinRule is a rule of a built-in chain: where a fault jumps from.
	builtinRule = regexp.MustCompile(`^\S+ -A (INPUT|OUTPUT|FORWARD|PREROUTING|POSTROUTING) `)
)

// hostScript prints, in sections, what a fault may leave on a host: its
// iptables rules, ipsets and qdiscs, and the files of the lab it may have
// changed (extra).
func hostScript(extra []string) string {
	var b strings.Builder
	b.WriteString(`echo '## iptables'; for t in filter nat mangle raw; do iptables-save -t $t 2>/dev/null | grep -v '^#' | sed "s/^/$t /"; done; `)
	b.WriteString(`echo '## ipsets'; ipset list -n 2>/dev/null | sort; `)
	b.WriteString(`echo '## qdiscs'; tc qdisc show; `)
	for _, e := range extra {
		b.WriteString(e + "; ")
	}
	return b.String()
}

// sections splits hostScript's output.
func sections(out string) map[string][]string {
	m := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "## ") {
			cur = strings.TrimPrefix(line, "## ")
			continue
		}
		if strings.TrimSpace(line) != "" {
			m[cur] = append(m[cur], line)
		}
	}
	return m
}

// fingerprint reads every aspect, the hosts' at once.
func (m *matrix) fingerprint(ctx context.Context) (fingerprint, error) {
	fp := fingerprint{}
	var mu sync.Mutex
	set := func(k, v string) {
		mu.Lock()
		fp[k] = v
		mu.Unlock()
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(m.l.Hosts())+1)
	for _, h := range m.l.Hosts() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := m.hostFingerprint(ctx, h, set); err != nil {
				errs <- fmt.Errorf("%s: %w", h.Name(), err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := m.machineFingerprint(ctx, set); err != nil {
			errs <- err
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, err
	}
	return fp, nil
}

func (m *matrix) hostFingerprint(ctx context.Context, h lab.Host, set func(k, v string)) error {
	var extra []string
	if h.HasRole(lab.RoleControlPlane) {
		if a, ok := m.l.(lab.AuthorizationConfigFiles); ok {
			path, err := a.AuthorizationConfigFile(h.Name())
			if err != nil {
				return err
			}
			// The directory's own modification time is left out: the
			// fault's files come and go in it.
			extra = append(extra, fmt.Sprintf("echo '## authorization'; sha256sum %[1]s; stat -c '%%n %%a %%U %%Y' %[1]s; ls -A %[2]s", path, filepath.Dir(path)))
		}
		if ef, ok := m.l.(lab.EtcdForks); ok {
			if fk, err := ef.EtcdFork(h.Name()); err == nil && fk.Dir != "" {
				extra = append(extra, fmt.Sprintf("echo '## etcd fork dir'; ls -A %s 2>/dev/null", fk.Dir))
			}
		}
	}
	if kc, ok := m.l.(lab.AgentKubeconfigs); ok {
		for _, agent := range []string{lab.ServiceKubeProxy, lab.ServicePolicyAgent} {
			path, err := kc.AgentKubeconfig(h.Name(), agent)
			if err != nil {
				continue
			}
			// No modification time: a process that resolves the local
			// lab's certificates (pki.Ensure) writes again every
			// kubeconfig that differs from what it would write, as a
			// pinned one does, so a heal in a fresh process may find the
			// original content already back with a new time; content,
			// mode, owner and what lies beside it count.
			extra = append(extra, fmt.Sprintf("echo '## %[3]s kubeconfig'; sha256sum %[1]s; stat -c '%%n %%a %%U' %[1]s; ls -A %[2]s", path, filepath.Dir(path), agent))
		}
	}
	r, err := h.Run(ctx, hostScript(extra))
	if err != nil {
		return err
	}
	sec := sections(r.Stdout)
	var rules []string
	for _, line := range sec["iptables"] {
		if builtinRule.MatchString(line) || strings.Contains(line, "FAULTLINE") {
			rules = append(rules, counters.ReplaceAllString(line, ""))
		}
	}
	// Sorted: a component restarted (a pinned agent, a power-on) puts its
	// jumps back in its own order; what must match is the set.
	sort.Strings(rules)
	set(h.Name()+" iptables", strings.Join(rules, "\n"))
	set(h.Name()+" ipsets", strings.Join(sec["ipsets"], "\n"))
	var qdiscs []string
	for _, line := range sec["qdiscs"] {
		// The CNI bridge comes with a node's first pod, a veth with each.
		if !strings.Contains(line, " dev cni0 ") && !strings.Contains(line, " dev veth") {
			qdiscs = append(qdiscs, line)
		}
	}
	set(h.Name()+" qdiscs", strings.Join(qdiscs, "\n"))
	for name, lines := range sec {
		switch name {
		case "iptables", "ipsets", "qdiscs", "":
		default:
			set(h.Name()+" "+name, strings.Join(lines, "\n"))
		}
	}
	svcs, err := h.Services(ctx)
	if err != nil {
		return err
	}
	var states []string
	for _, s := range svcs {
		states = append(states, s.Name+" "+s.State)
	}
	set(h.Name()+" services", strings.Join(states, "\n"))
	set(h.Name()+" stopped processes", strings.Join(m.stoppedProcesses(h.Name()), "\n"))
	set(h.Name()+" clocks", strings.Join(m.skewedClocks(ctx, h, svcs), "\n"))
	return nil
}

// machineFingerprint reads what the hosts share: mounts and loop devices
// under the lab's state dir, frozen cgroups, markers in /run, clock-skew
// files, the heal ledger, etcd's alarms and forks, and through the API
// the nodes and what the controls leave.
func (m *matrix) machineFingerprint(ctx context.Context, set func(k, v string)) error {
	state := m.l.StateDir()
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(state))
	if err != nil {
		return err
	}
	byType := map[string]int{}
	var fenced []string
	for _, mi := range mounts {
		byType[mi.FSType]++
		if mi.FSType == "ext4" && strings.Contains(","+mi.VFSOptions+",", ",shutdown,") {
			fenced = append(fenced, mi.Mountpoint)
		}
	}
	var counts []string
	for t, n := range byType {
		counts = append(counts, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(counts)
	set("mounts under the state dir", strings.Join(counts, "\n"))
	sort.Strings(fenced)
	set("fenced (shut down) mounts", strings.Join(fenced, "\n"))
	set("loop devices over the state dir", strings.Join(loopDevicesUnder(state), "\n"))
	set("frozen cgroups", strings.Join(m.frozenCgroups(), "\n"))
	set("faultline markers in /run", strings.Join(runMarkers(), "\n"))
	skews, _ := os.ReadDir(filepath.Join(state, "clock-skew"))
	var skewed []string
	for _, e := range skews {
		skewed = append(skewed, e.Name())
	}
	set("clock-skew files", strings.Join(skewed, "\n"))
	set("etcd fork processes", strings.Join(processesWithArg("--name=faultline-fork"), "\n"))
	led, err := ledger.Open(state)
	if err != nil {
		return err
	}
	entries, err := led.Entries()
	if err != nil {
		return err
	}
	var es []string
	for _, e := range entries {
		es = append(es, e.Kind+" "+e.ID)
	}
	set("heal ledger", strings.Join(es, "\n"))
	alarms, err := m.etcdAlarms(ctx)
	if err != nil {
		return err
	}
	set("etcd alarms", alarms)
	nodes, err := m.kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var ns []string
	for _, n := range nodes.Items {
		var taints []string
		for _, t := range n.Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		sort.Strings(taints)
		ns = append(ns, fmt.Sprintf("%s unschedulable=%v taints=%v", n.Name, n.Spec.Unschedulable, taints))
	}
	sort.Strings(ns)
	set("nodes", strings.Join(ns, "\n"))
	quotas, err := m.kc.CoreV1().ResourceQuotas("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + controls.FreezeQuotaName})
	if err != nil {
		return err
	}
	var qs []string
	for _, q := range quotas.Items {
		qs = append(qs, q.Namespace+"/"+q.Name)
	}
	set("control quotas", strings.Join(qs, "\n"))
	pods, err := m.kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var held []string
	for _, p := range pods.Items {
		for _, f := range p.Finalizers {
			if f == controls.HoldFinalizer {
				held = append(held, p.Namespace+"/"+p.Name)
			}
		}
	}
	set("pods held by the control's finalizer", strings.Join(held, "\n"))
	return nil
}

// loopDevicesUnder lists the loop devices whose backing file lies under
// dir.
func loopDevicesUnder(dir string) []string {
	var out []string
	devs, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, d := range devs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		if back := strings.TrimSpace(string(b)); strings.HasPrefix(back, dir+"/") {
			out = append(out, strings.Split(d, "/")[3]+" "+back)
		}
	}
	sort.Strings(out)
	return out
}

// frozenCgroups lists the lab's cgroups a freezer holds: the v1 freezer's
// not THAWED, the unified tree's with cgroup.freeze 1.
func (m *matrix) frozenCgroups() []string {
	var out []string
	prefix := "fl-" + m.name + "-"
	for _, root := range []string{"/sys/fs/cgroup/freezer", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		tops, _ := filepath.Glob(filepath.Join(root, prefix+"*"))
		for _, top := range tops {
			_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return nil
				}
				if b, err := os.ReadFile(filepath.Join(path, "freezer.state")); err == nil {
					if s := strings.TrimSpace(string(b)); s != "THAWED" {
						out = append(out, path+" "+s)
					}
				}
				if b, err := os.ReadFile(filepath.Join(path, "cgroup.freeze")); err == nil && strings.TrimSpace(string(b)) == "1" {
					out = append(out, path+" cgroup.freeze 1")
				}
				return nil
			})
		}
	}
	sort.Strings(out)
	return out
}

// runMarkers lists the fault's marker files and directories in /run,
// which the local lab's hosts share.
func runMarkers() []string {
	var out []string
	entries, _ := os.ReadDir("/run")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "faultline-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// processesWithArg lists the machine's processes one of whose arguments
// is arg.
func processesWithArg(arg string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(b), "\x00") {
			if a == arg {
				out = append(out, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " "))
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// stoppedProcesses lists the host's processes stopped by a signal
// (state T): those in its network namespace or under its cgroup.
func (m *matrix) stoppedProcesses(host string) []string {
	name := "fl-" + m.name + "-" + host
	ns, err := os.Stat("/run/netns/" + name)
	if err != nil {
		return []string{"no network namespace: " + err.Error()}
	}
	want := strconv.FormatUint(ns.Sys().(*syscall.Stat_t).Ino, 10)
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 || i+2 >= len(stat) || (stat[i+2] != 'T' && stat[i+2] != 't') {
			continue
		}
		link, _ := os.Readlink(p + "/ns/net")
		cg, _ := os.ReadFile(p + "/cgroup")
		if link == "net:["+want+"]" || strings.Contains(string(cg), ":/"+name+"/") || strings.Contains(string(cg), ":/"+name+"\n") {
			out = append(out, filepath.Base(p)+" "+string(stat[:i+1]))
		}
	}
	sort.Strings(out)
	return out
}

// clockPorts are the components' Date-stamped endpoints (faults' own
// probe reads the same).
var clockPorts = []struct {
	service string
	port    int
	tls     bool
}{
	{lab.ServiceEtcd, 2381, false},
	{lab.ServiceAPIServer, 6443, true},
	{lab.ServiceControllerManager, 10257, true},
	{lab.ServiceScheduler, 10259, true},
	{lab.ServiceKubelet, 10248, false},
	{lab.ServiceKubeProxy, 10256, false},
}

// skewedClocks lists the host's running components whose HTTP Date
// header is more than 3 s off this program's clock (the header's
// one-second resolution and a round trip stay below it). A component
// that does not answer is not listed: the services aspect says whether it
// runs.
func (m *matrix) skewedClocks(ctx context.Context, h lab.Host, svcs []lab.ServiceState) []string {
	running := map[string]bool{}
	for _, s := range svcs {
		running[s.Name] = s.State == "running"
	}
	var out []string
	for _, ep := range clockPorts {
		if !running[ep.service] {
			continue
		}
		for _, addr := range []string{h.Address(), "127.0.0.1"} {
			skew, err := dateSkew(ctx, h, net.JoinHostPort(addr, strconv.Itoa(ep.port)), ep.tls)
			if err != nil {
				continue
			}
			if skew.Abs() > 3*time.Second {
				out = append(out, fmt.Sprintf("%s %+.0fs", ep.service, skew.Seconds()))
			}
			break
		}
	}
	return out
}

// dateSkew asks one endpoint for its Date header over a connection h
// opens.
func dateSkew(ctx context.Context, h lab.Host, addr string, useTLS bool) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := h.Dial(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if useTLS {
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true}) // only the Date header is read
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, err
		}
		conn = tc
	}
	before := time.Now()
	if _, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.0\r\nHost: %s\r\n\r\n", addr); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	after := time.Now()
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return 0, err
	}
	mid := before.Add(after.Sub(before) / 2)
	return d.Add(500 * time.Millisecond).Sub(mid), nil
}

func (m *matrix) etcdAlarms(ctx context.Context) (string, error) {
	acc, ok := m.l.(lab.EtcdAccess)
	if !ok {
		return "", fmt.Errorf("the lab gives no etcd access")
	}
	eps, tlsc, err := acc.EtcdClientConfig()
	if err != nil {
		return "", err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: tlsc, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", err
	}
	defer c.Close()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	a, err := c.AlarmList(actx)
	if err != nil {
		return "", fmt.Errorf("etcd alarms: %w", err)
	}
	return fmt.Sprint(a.Alarms), nil
}

// settled says why the lab is not settled yet ("" once it is): every
// service runs, every node is Ready and its Lease renewed within its
// duration, both leader Leases are held, and every pod runs Ready and is
// not being deleted.
func (m *matrix) settled(ctx context.Context) string {
	for _, h := range m.l.Hosts() {
		svcs, err := h.Services(ctx)
		if err != nil {
			return fmt.Sprintf("%s: %v", h.Name(), err)
		}
		for _, s := range svcs {
			if s.State != "running" {
				return fmt.Sprintf("%s on %s is %s", s.Name, h.Name(), s.State)
			}
		}
	}
	nodes, err := m.kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	if len(nodes.Items) != len(m.nodes) {
		return fmt.Sprintf("%d nodes, want %d", len(nodes.Items), len(m.nodes))
	}
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		if !ready {
			return "node " + n.Name + " not Ready"
		}
		for _, t := range n.Spec.Taints {
			switch t.Key {
			case corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady, corev1.TaintNodeOutOfService:
				return fmt.Sprintf("node %s tainted %s", n.Name, t.Key)
			}
		}
		if why := m.leaseHeld(ctx, "kube-node-lease", n.Name); why != "" {
			return why
		}
	}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler"} {
		if why := m.leaseHeld(ctx, "kube-system", name); why != "" {
			return why
		}
	}
	pods, err := m.kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		if p.DeletionTimestamp != nil {
			return "pod " + p.Namespace + "/" + p.Name + " is being deleted"
		}
		ready := false
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		if p.Status.Phase != corev1.PodRunning || !ready {
			return fmt.Sprintf("pod %s/%s is %s, ready %v", p.Namespace, p.Name, p.Status.Phase, ready)
		}
	}
	return ""
}

// leaseHeld says why a Lease is not held ("" when it is): no holder, or
// not renewed within twice its duration.
func (m *matrix) leaseHeld(ctx context.Context, ns, name string) string {
	ls, err := m.kc.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("lease %s/%s: %v", ns, name, err)
	}
	if ls.Spec.HolderIdentity == nil || *ls.Spec.HolderIdentity == "" || ls.Spec.RenewTime == nil || ls.Spec.LeaseDurationSeconds == nil {
		return fmt.Sprintf("lease %s/%s is not held", ns, name)
	}
	if age, max := time.Since(ls.Spec.RenewTime.Time), 2*time.Duration(*ls.Spec.LeaseDurationSeconds)*time.Second; age > max {
		return fmt.Sprintf("lease %s/%s renewed %s ago (held by %s), over %s", ns, name, age.Round(time.Second), *ls.Spec.HolderIdentity, max)
	}
	return ""
}
