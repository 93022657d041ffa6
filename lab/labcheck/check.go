package labcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/guard"
)

// Status is what a check found.
type Status string

const (
	Met     Status = "met"
	NotMet  Status = "not met"
	Unknown Status = "unknown"
)

// A Finding is one requirement as found on a lab.
type Finding struct {
	Requirement string `json:"requirement"`
	Status      Status `json:"status"`
	Detail      string `json:"detail,omitempty"`
}

// Report is every requirement as found on one lab.
type Report struct {
	Lab               string `json:"lab"`
	Kind              string `json:"kind"`
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Agents is how the lab's node agents run (lab.AgentsAsServices or
	// lab.AgentsAsPods), as agentsLayout finds it.
	Agents   string             `json:"agents"`
	Findings map[string]Finding `json:"findings"`
}

// checkTimeout bounds each requirement's check.
const checkTimeout = 45 * time.Second

// env is what the checks share: the lab, one client, the server's
// version.
type env struct {
	ctx     context.Context
	lab     lab.Lab
	kube    kubernetes.Interface
	kubeErr error
	version *version.Version
	verErr  error
}

// kubeOptions bound each request of the check's API clients by 10 s, so
// that an unreachable API server fails its checks instead of hanging them.
var kubeOptions = guard.ClientOptions{Timeout: 10 * time.Second, UserAgent: "faultline-lab-check"}

// Check checks every requirement on l, in parallel, touching nothing.
func Check(ctx context.Context, l lab.Lab) Report {
	e := &env{ctx: ctx, lab: l}
	if path, err := l.Kubeconfig(""); err != nil {
		e.kubeErr = err
	} else if cs, err := guard.Client(path, kubeOptions); err != nil {
		e.kubeErr = err
	} else {
		e.kube = cs
	}
	if e.kubeErr == nil {
		if v, err := e.kube.Discovery().ServerVersion(); err != nil {
			e.verErr = err
		} else if e.version, err = version.ParseGeneric(v.GitVersion); err != nil {
			e.verErr = err
		}
	} else {
		e.verErr = e.kubeErr
	}
	r := Report{Lab: l.Info().Name, Kind: l.Info().Kind, Agents: agentsLayout(l), Findings: map[string]Finding{}}
	if e.version != nil {
		r.KubernetesVersion = "v" + e.version.String()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, req := range Requirements {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, checkTimeout)
			defer cancel()
			ce := *e
			ce.ctx = cctx
			f := req.check(&ce)
			f.Requirement = req.ID
			mu.Lock()
			r.Findings[req.ID] = f
			mu.Unlock()
		})
	}
	wg.Wait()
	return r
}

func met(format string, a ...any) Finding {
	return Finding{Status: Met, Detail: fmt.Sprintf(format, a...)}
}
func notMet(format string, a ...any) Finding {
	return Finding{Status: NotMet, Detail: fmt.Sprintf(format, a...)}
}
func unknown(format string, a ...any) Finding {
	return Finding{Status: Unknown, Detail: fmt.Sprintf(format, a...)}
}

// hostAnswer is one host's answer to a command, or why there is none.
type hostAnswer struct {
	host string
	res  lab.Result
	err  error
}

// onHosts runs cmd on every host, in parallel, in the hosts' order.
func (e *env) onHosts(hosts []lab.Host, cmd string) []hostAnswer {
	out := make([]hostAnswer, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			res, err := h.Run(e.ctx, cmd)
			out[i] = hostAnswer{host: h.Name(), res: res, err: err}
		})
	}
	wg.Wait()
	return out
}

// judgeHosts makes one finding of every host's answer: met when each
// passes ok, not met naming the hosts that do not, unknown naming those
// that did not answer when no host failed outright.
func judgeHosts(answers []hostAnswer, what string, ok func(lab.Result) (bool, string)) Finding {
	if len(answers) == 0 {
		return notMet("no host to check")
	}
	var failed, unreached []string
	for _, a := range answers {
		if a.err != nil {
			unreached = append(unreached, a.host+" ("+firstLine(a.err.Error())+")")
			continue
		}
		if good, why := ok(a.res); !good {
			failed = append(failed, a.host+" ("+why+")")
		}
	}
	switch {
	case len(failed) > 0:
		return notMet("not on %s%s", strings.Join(failed, ", "), unreachedNote(unreached))
	case len(unreached) > 0:
		return unknown("not reached: %s", strings.Join(unreached, ", "))
	}
	return met("%s on %d hosts", what, len(answers))
}

func unreachedNote(u []string) string {
	if len(u) == 0 {
		return ""
	}
	return "; not reached: " + strings.Join(u, ", ")
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// exited0 passes a command that exited 0.
func exited0(res lab.Result) (bool, string) {
	if res.ExitCode != 0 {
		return false, fmt.Sprintf("exit %d: %s", res.ExitCode, firstLine(res.Stderr+res.Stdout))
	}
	return true, ""
}

var roleControlPlane = []lab.Role{lab.RoleControlPlane}
var roleWorker = []lab.Role{lab.RoleWorker}

// hostsWith are the lab's hosts with any of roles (every host for none).
func (e *env) hostsWith(roles []lab.Role) []lab.Host {
	if len(roles) == 0 {
		return e.lab.Hosts()
	}
	var out []lab.Host
	for _, h := range e.lab.Hosts() {
		for _, r := range roles {
			if h.HasRole(r) {
				out = append(out, h)
				break
			}
		}
	}
	return out
}

func checkMarker(e *env) Finding {
	if err := guard.CheckConfig(e.lab.Config()); err != nil {
		return notMet("%v", err)
	}
	if e.kubeErr != nil {
		return unknown("no API client: %v", e.kubeErr)
	}
	if err := guard.Check(e.ctx, e.lab.Config(), e.kube); err != nil {
		if errors.Is(err, guard.ErrRefused) {
			return notMet("%v", err)
		}
		return unknown("%v", err)
	}
	return met("the cluster is marked as lab %s", e.lab.Config().Name)
}

func checkSSH(e *env) Finding {
	answers := e.onHosts(e.lab.Hosts(), "true")
	var down []string
	for _, a := range answers {
		if a.err != nil {
			down = append(down, a.host+" ("+firstLine(a.err.Error())+")")
		}
	}
	if len(down) > 0 {
		return notMet("not reached: %s", strings.Join(down, ", "))
	}
	return met("%d hosts answer", len(answers))
}

func checkRoot(e *env) Finding {
	return judgeHosts(e.onHosts(e.lab.Hosts(), "id -u"), "root", func(res lab.Result) (bool, string) {
		if uid := strings.TrimSpace(res.Stdout); res.ExitCode != 0 || uid != "0" {
			return false, "uid " + uid + " " + firstLine(res.Stderr)
		}
		return true, ""
	})
}

// checkServices lists, per service, the hosts whose service manager has
// it; met when every worker has kubelet and containerd and every etcd
// host etcd.
func checkServices(e *env) Finding {
	found := map[string][]string{}
	var missing, unreached []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range e.lab.Hosts() {
		wg.Go(func() {
			states, err := h.Services(e.ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unreached = append(unreached, h.Name()+" ("+firstLine(err.Error())+")")
				return
			}
			have := map[string]bool{}
			for _, s := range states {
				have[s.Name] = true
				found[s.Name] = append(found[s.Name], h.Name())
			}
			var want []string
			if h.HasRole(lab.RoleWorker) {
				want = append(want, lab.ServiceKubelet, lab.ServiceContainerd)
			}
			if h.HasRole(lab.RoleEtcd) {
				want = append(want, lab.ServiceEtcd)
			}
			for _, w := range want {
				if !have[w] {
					missing = append(missing, w+" on "+h.Name())
				}
			}
		})
	}
	wg.Wait()
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		hs := found[n]
		sort.Strings(hs)
		parts = append(parts, n+": "+strings.Join(hs, " "))
	}
	sort.Strings(missing)
	sort.Strings(unreached)
	detail := "units: " + orNone(strings.Join(parts, "; "))
	switch {
	case len(missing) > 0:
		return notMet("missing %s%s; %s", strings.Join(missing, ", "), unreachedNote(unreached), detail)
	case len(unreached) > 0:
		return unknown("services not listed on %s; %s", strings.Join(unreached, ", "), detail)
	}
	return met("%s", detail)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func checkPower(e *env) Finding {
	if k := e.lab.Info().Kind; k == "static" {
		return notMet("the %s lab has no hypervisor to power hosts off and on", k)
	}
	return met("the %s lab powers hosts off and on", e.lab.Info().Kind)
}

// hostTools checks that every host with roles has the tools on root's
// PATH.
func hostTools(id string, roles []lab.Role, tools ...string) func(*env) Finding {
	return func(e *env) Finding {
		cmd := "for t in " + strings.Join(tools, " ") + `; do command -v "$t" >/dev/null || echo "$t"; done`
		return judgeHosts(e.onHosts(e.hostsWith(roles), cmd), strings.Join(tools, ", "), func(res lab.Result) (bool, string) {
			if res.ExitCode != 0 {
				return false, fmt.Sprintf("exit %d", res.ExitCode)
			}
			if m := strings.Fields(res.Stdout); len(m) > 0 {
				return false, "no " + strings.Join(m, ", ")
			}
			return true, ""
		})
	}
}

func checkFreezer(e *env) Finding {
	cmd := `if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo v2; elif [ -d /sys/fs/cgroup/freezer ]; then echo v1; else exit 1; fi`
	return judgeHosts(e.onHosts(e.hostsWith(roleWorker), cmd), "a cgroup freezer", func(res lab.Result) (bool, string) {
		if res.ExitCode != 0 {
			return false, "no freezer under /sys/fs/cgroup"
		}
		return true, ""
	})
}

func checkClock(e *env) Finding {
	shared, why := lab.SharesWallClock(e.lab)
	if !shared {
		return met("each host has its own wall clock")
	}
	if s, ok := e.lab.(lab.ProcessClockSkewer); ok {
		return met("emulated: %s", s.ProcessSkewEmulation())
	}
	return notMet("the hosts share one wall clock: %s", why)
}

func checkCRI(e *env) Finding {
	workers := e.hostsWith(roleWorker)
	if len(workers) == 0 {
		return notMet("no worker")
	}
	socket, ok, err := lab.RuntimeSocket(e.lab, workers[0].Name())
	if err != nil {
		return notMet("%v", err)
	}
	if !ok {
		f := judgeHosts(e.onHosts(workers, "crictl version"), "crictl answers as root", exited0)
		f.Detail += " (no socket named: crictl runs at every read)"
		return f
	}
	answers := make([]hostAnswer, len(workers))
	var wg sync.WaitGroup
	for i, h := range workers {
		wg.Go(func() {
			s, _, _ := lab.RuntimeSocket(e.lab, h.Name())
			c, err := h.Dial(e.ctx, "unix", s)
			a := hostAnswer{host: h.Name()}
			switch {
			case errors.Is(err, lab.ErrNotConnectedByHost):
				a.res = lab.Result{ExitCode: 1, Stderr: s + ": " + err.Error()}
			case err != nil:
				a.err = err
			default:
				c.Close()
			}
			answers[i] = a
		})
	}
	wg.Wait()
	return judgeHosts(answers, "the socket "+socket+" opens", exited0)
}

func checkProxyRules(e *env) Finding {
	tool := "iptables-save"
	if c := e.lab.Config(); c != nil && c.Kubernetes.ProxyMode == lab.ProxyModeNFTables {
		tool = "nft"
	}
	return hostTools(ProxyRules, roleWorker, tool)(e)
}

func checkPolicyRules(e *env) Finding {
	agent := lab.PolicyAgentOf(e.lab)
	if agent == "" {
		return notMet("the lab file names no kubernetes.policyAgent (%s)", strings.Join(lab.PolicyAgents, ", "))
	}
	cmd, ok := lab.PolicyDumpCommand(agent)
	if !ok {
		return notMet("no reader for %s", agent)
	}
	f := judgeHosts(e.onHosts(e.hostsWith(roleWorker), cmd+" >/dev/null"), agent+"'s dump runs", exited0)
	return f
}

// firstAPIServer is the address of the first control-plane host's API
// server.
func (e *env) firstAPIServer() (string, bool) {
	cps := e.hostsWith(roleControlPlane)
	if len(cps) == 0 {
		return "", false
	}
	port := 6443
	if c := e.lab.Config(); c != nil && c.Network.APIServerPort != 0 {
		port = c.Network.APIServerPort
	}
	return net.JoinHostPort(cps[0].Address(), strconv.Itoa(port)), true
}

func checkForwarding(e *env) Finding {
	addr, ok := e.firstAPIServer()
	if !ok {
		return notMet("no control-plane host to connect to")
	}
	workers := e.hostsWith(roleWorker)
	answers := make([]hostAnswer, len(workers))
	var wg sync.WaitGroup
	for i, h := range workers {
		wg.Go(func() {
			c, err := h.Dial(e.ctx, "tcp", addr)
			a := hostAnswer{host: h.Name()}
			switch {
			case errors.Is(err, lab.ErrNotConnectedByHost):
				a.res = lab.Result{ExitCode: 1, Stderr: "no connection to " + addr + ": " + err.Error() + " (forwarding refused by sshd, or the API server not answering)"}
			case err != nil:
				a.err = err
			default:
				c.Close()
			}
			answers[i] = a
		})
	}
	wg.Wait()
	return judgeHosts(answers, "connections to "+addr+" forwarded", exited0)
}

func checkVersion(major, minor uint) func(*env) Finding {
	return func(e *env) Finding {
		if e.verErr != nil {
			return unknown("the API server's version: %v", e.verErr)
		}
		want := version.MajorMinor(major, minor)
		if e.version.LessThan(want) {
			return notMet("v%s, below v%d.%d", e.version, major, minor)
		}
		return met("v%s", e.version)
	}
}

func checkAuthzConfig(e *env) Finding {
	port := 6443
	if c := e.lab.Config(); c != nil && c.Network.APIServerPort != 0 {
		port = c.Network.APIServerPort
	}
	var files []string
	var mu sync.Mutex
	f := judgeHosts(e.onHosts(e.hostsWith(roleControlPlane), lab.AuthorizationConfigScript(port)), "--authorization-config", func(res lab.Result) (bool, string) {
		switch res.ExitCode {
		case 0:
			mu.Lock()
			files = append(files, strings.TrimSpace(res.Stdout))
			mu.Unlock()
			return true, ""
		case 3:
			return false, fmt.Sprintf("nothing listens on port %d", port)
		case 4:
			return false, "the API server runs without --authorization-config"
		}
		return false, fmt.Sprintf("exit %d: %s", res.ExitCode, firstLine(res.Stderr))
	})
	if f.Status == Met {
		slices.Sort(files)
		files = slices.Compact(files)
		named := "the scenario must name the file"
		if _, ok := e.lab.(lab.AuthorizationConfigFiles); ok {
			named = "the lab names it"
		}
		f.Detail = fmt.Sprintf("%s (%s; %s)", f.Detail, strings.Join(files, ", "), named)
	}
	return f
}

// agentsLayout is how l runs its node agents: lab.AgentsAsPods when
// kube-proxy runs as a pod on any worker (lab.AgentRunOf: the lab's own
// answer, else its file's), else lab.AgentsAsServices; a lab without
// workers is as its file says.
func agentsLayout(l lab.Lab) string {
	workers := 0
	for _, h := range l.Hosts() {
		if !h.HasRole(lab.RoleWorker) {
			continue
		}
		workers++
		if r, err := lab.AgentRunOf(l, h.Name(), lab.ServiceKubeProxy); err == nil && r.AsPod() {
			return lab.AgentsAsPods
		}
	}
	if c := l.Config(); workers == 0 && c != nil {
		return c.Kubernetes.AgentsLayout()
	}
	return lab.AgentsAsServices
}

// capabilities are the interfaces a capability requirement names, and
// whether a lab offers each.
var capabilities = map[string]struct {
	iface  string
	offers func(lab.Lab) bool
}{
	EtcdForks:    {"lab.EtcdForks", func(l lab.Lab) bool { _, ok := l.(lab.EtcdForks); return ok }},
	AgentIDs:     {"lab.AgentIdentities", func(l lab.Lab) bool { _, ok := l.(lab.AgentIdentities); return ok }},
	AgentConfigs: {"lab.AgentKubeconfigs", func(l lab.Lab) bool { _, ok := l.(lab.AgentKubeconfigs); return ok }},
	ClusterDNS:   {"lab.ClusterDNSAccess", func(l lab.Lab) bool { _, ok := l.(lab.ClusterDNSAccess); return ok }},
	FSCheck:      {"lab.FilesystemChecker", func(l lab.Lab) bool { _, ok := l.(lab.FilesystemChecker); return ok }},
	VolumeDamage: {"lab.VolumeDamager", func(l lab.Lab) bool { _, ok := l.(lab.VolumeDamager); return ok }},
}

// capability checks that the lab implements the interface a requirement
// names.
func capability(id string) func(*env) Finding {
	return func(e *env) Finding {
		if (id == AgentIDs || id == AgentConfigs) && agentsLayout(e.lab) == lab.AgentsAsPods {
			return notMet("the agents run as pods (kubernetes.agents: pods), one service account and no kubeconfig file per node: the faults on them need what the faults on agents run as pods need")
		}
		c, known := capabilities[id]
		if !known {
			return unknown("no check for %s", id)
		}
		ok, iface := c.offers(e.lab), c.iface
		if !ok {
			return notMet("the %s lab does not offer %s", e.lab.Info().Kind, iface)
		}
		if id == AgentIDs || id == AgentConfigs {
			return askAgents(e, id, iface)
		}
		return met("the %s lab offers %s", e.lab.Info().Kind, iface)
	}
}

// askAgents asks the lab, for each worker's kube-proxy, the identity or
// the kubeconfig: a lab may offer the interface and not know the answer
// (an SSH lab file that names no agent kubeconfigs).
func askAgents(e *env, id, iface string) Finding {
	var got []string
	for _, h := range e.hostsWith([]lab.Role{lab.RoleWorker}) {
		var err error
		var answer string
		if id == AgentIDs {
			var who lab.Identity
			who, err = e.lab.(lab.AgentIdentities).AgentIdentity(h.Name(), lab.ServiceKubeProxy)
			answer = who.User
		} else {
			answer, err = e.lab.(lab.AgentKubeconfigs).AgentKubeconfig(h.Name(), lab.ServiceKubeProxy)
		}
		switch {
		case errors.Is(err, lab.ErrUnsupported):
			return notMet("%s: %v", h.Name(), err)
		case err != nil:
			return unknown("%s: %v", h.Name(), err)
		}
		got = append(got, h.Name()+" "+answer)
	}
	if len(got) == 0 {
		return notMet("the lab has no worker")
	}
	return met("the %s lab offers %s: kube-proxy on %s", e.lab.Info().Kind, iface, strings.Join(got, ", "))
}

// checkEtcdAccess asks the lab for its etcd client and every member for
// its status.
func checkEtcdAccess(e *env) Finding {
	ea, ok := e.lab.(lab.EtcdAccess)
	if !ok {
		return notMet("the %s lab does not offer lab.EtcdAccess", e.lab.Info().Kind)
	}
	endpoints, tlsConfig, err := ea.EtcdClientConfig()
	if err != nil {
		return notMet("%v", err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsConfig, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return notMet("%v", err)
	}
	defer c.Close()
	var bad []string
	for _, ep := range endpoints {
		sctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
		if _, err := c.Status(sctx, ep); err != nil {
			bad = append(bad, ep+" ("+firstLine(err.Error())+")")
		}
		cancel()
	}
	if len(bad) > 0 {
		return notMet("no status from %s", strings.Join(bad, ", "))
	}
	return met("%d members answer", len(endpoints))
}

// checkKubeletAccess asks every worker's kubelet for /healthz with the
// lab's kubelet client.
func checkKubeletAccess(e *env) Finding {
	ka, ok := e.lab.(lab.KubeletAccess)
	if !ok {
		return notMet("the %s lab does not offer lab.KubeletAccess", e.lab.Info().Kind)
	}
	workers := e.hostsWith(roleWorker)
	answers := make([]hostAnswer, len(workers))
	var wg sync.WaitGroup
	for i, h := range workers {
		wg.Go(func() {
			a := hostAnswer{host: h.Name()}
			url, tc, err := ka.KubeletClientConfig(h.Name())
			if err == nil {
				c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
				var resp *http.Response
				if resp, err = c.Get(url + "/healthz"); err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("/healthz answered %s", resp.Status)
					}
				}
			}
			if err != nil {
				a.res = lab.Result{ExitCode: 1, Stderr: err.Error()}
			}
			answers[i] = a
		})
	}
	wg.Wait()
	return judgeHosts(answers, "a kubelet answering its client", exited0)
}

func checkAPIServers(e *env) Finding {
	cps := e.hostsWith(roleControlPlane)
	answers := make([]hostAnswer, len(cps))
	var wg sync.WaitGroup
	for i, h := range cps {
		wg.Go(func() {
			a := hostAnswer{host: h.Name()}
			path, err := e.lab.Kubeconfig(h.Name())
			if err == nil {
				var cs kubernetes.Interface
				cs, err = guard.Client(path, kubeOptions)
				if err == nil {
					_, err = cs.Discovery().ServerVersion()
				}
			}
			if err != nil {
				a.res = lab.Result{ExitCode: 1, Stderr: err.Error()}
			}
			answers[i] = a
		})
	}
	wg.Wait()
	return judgeHosts(answers, "an API server answering at the host's address", exited0)
}

func checkVirtualAddress(e *env) Finding {
	c := e.lab.Config()
	if c == nil || c.Network.VirtualIP == "" {
		return notMet("the lab file names no network.virtualIP")
	}
	if e.verErr != nil {
		return notMet("the lab's kubeconfig: %v", e.verErr)
	}
	return met("%s answers", c.Network.VirtualIP)
}

func checkStorage(e *env) Finding {
	sd, ok := e.lab.(lab.StoredData)
	if !ok {
		return notMet("the %s lab offers no lab.StoredData", e.lab.Info().Kind)
	}
	info, err := sd.StorageInfo()
	if err != nil {
		return notMet("%v", err)
	}
	var problems, notes []string
	if e.kubeErr != nil {
		problems = append(problems, "no API client: "+e.kubeErr.Error())
	} else {
		for _, class := range []string{info.SharedClass, info.BlockClass, info.BlockMMPClass, info.BlockFencedClass} {
			if class == "" {
				continue
			}
			_, err := e.kube.StorageV1().StorageClasses().Get(e.ctx, class, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				problems = append(problems, "no StorageClass "+class)
			case err != nil:
				problems = append(problems, "StorageClass "+class+": "+err.Error())
			}
		}
	}
	if len(info.HistoryEndpoints) == 0 {
		problems = append(problems, "no history store")
	} else if c, err := clientv3.New(clientv3.Config{Endpoints: info.HistoryEndpoints, DialTimeout: 3 * time.Second, Logger: zap.NewNop()}); err != nil {
		problems = append(problems, "history store: "+err.Error())
	} else {
		for _, ep := range info.HistoryEndpoints {
			sctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
			if _, err := c.Status(sctx, ep); err != nil {
				if s := e.lab.Config().Storage; s != nil && s.History.Host != "" {
					notes = append(notes, "the history store at "+ep+" does not answer yet: reset starts it on "+s.History.Host)
				} else {
					problems = append(problems, "the history store at "+ep+" does not answer: "+firstLine(err.Error()))
				}
			}
			cancel()
		}
		c.Close()
	}
	if s := e.lab.Config().Storage; s != nil && s.ReaderImage != "" {
		f := judgeHosts(e.onHosts(e.hostsWith(roleWorker), "crictl inspecti -q "+s.ReaderImage+" >/dev/null"), "", exited0)
		if f.Status != Met {
			notes = append(notes, "the reader image "+s.ReaderImage+" is "+f.Detail+" (pulled at the first read where the nodes reach its registry)")
		}
	}
	if len(info.Emulated) > 0 {
		notes = append(notes, fmt.Sprintf("declared emulated: %d items", len(info.Emulated)))
	}
	if len(problems) > 0 {
		return notMet("%s", strings.Join(append(problems, notes...), "; "))
	}
	classes := strings.Join(slices.DeleteFunc([]string{info.SharedClass, info.BlockClass, info.BlockMMPClass, info.BlockFencedClass}, func(s string) bool { return s == "" }), ", ")
	return met("classes %s, history store %s%s", classes, strings.Join(info.HistoryEndpoints, ","), prefixed("; ", strings.Join(notes, "; ")))
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// Write prints the report: every requirement as found, then each fault
// and source with the requirements it lacks.
func (r Report) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "lab %s (%s)", r.Lab, r.Kind)
	if r.KubernetesVersion != "" {
		fmt.Fprintf(&b, ", Kubernetes %s", r.KubernetesVersion)
	}
	b.WriteString(": what faults and sources need, as found (read only)\n\nrequirements\n")
	for _, req := range Requirements {
		f := r.Findings[req.ID]
		fmt.Fprintf(&b, "  %-8s %-22s %s\n", f.Status, req.ID, f.Detail)
	}
	b.WriteString("\nfaults\n")
	for _, k := range FaultKinds() {
		fmt.Fprintf(&b, "  %-8s %-26s %s\n", r.verdict(append([]string{Marker}, Faults[k]...)), k, r.lacks(append([]string{Marker}, Faults[k]...), FaultNotes[k]))
	}
	if r.Agents == lab.AgentsAsPods {
		b.WriteString("\nfaults on node agents run as pods (the kinds above, on kube-proxy or the policy agent)\n")
		for _, k := range AgentPodFaultKinds() {
			ids := append([]string{Marker}, AgentPodFaults[k]...)
			fmt.Fprintf(&b, "  %-8s %-26s %s\n", r.verdict(ids), k, r.lacks(ids, AgentPodFaultNotes[k]))
		}
		for _, k := range []string{"stop-service", "stopped-through-heal"} {
			fmt.Fprintf(&b, "  %-8s %-26s %s\n", "cannot", k, "refused: a DaemonSet's pod cannot be kept down")
		}
	}
	b.WriteString("\nsources\n")
	for _, s := range Sources {
		fmt.Fprintf(&b, "  %-8s %-26s %s\n", r.verdict(s.Needs), s.Name, r.lacks(s.Needs, ""))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdict is "ok" when every requirement is met, "cannot" when one is not,
// "unknown" otherwise.
func (r Report) verdict(ids []string) string {
	out := "ok"
	for _, id := range ids {
		switch r.Findings[id].Status {
		case NotMet:
			return "cannot"
		case Unknown, "":
			out = "unknown"
		}
	}
	return out
}

// lacks names the requirements not met (or unknown), else all of them.
func (r Report) lacks(ids []string, note string) string {
	var bad []string
	for _, id := range ids {
		if s := r.Findings[id].Status; s != Met {
			bad = append(bad, id+" "+string(orStatus(s)))
		}
	}
	if len(bad) == 0 {
		return needsCell(ids, note)
	}
	return strings.Join(bad, ", ")
}

func orStatus(s Status) Status {
	if s == "" {
		return Unknown
	}
	return s
}
