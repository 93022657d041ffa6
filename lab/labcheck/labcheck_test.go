package labcheck

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faultline/faultline/framework/fault"
	_ "github.com/faultline/faultline/framework/fault/controls"
	_ "github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/lab/labtest"

	// The kits' faults: the command links them, so they are checked too.
	_ "github.com/faultline/faultline/kits/storeddata/faults"
	"github.com/faultline/faultline/lab"
)

// Every fault kind this program registers says what it needs, and every
// requirement named exists and has a check.
func TestEveryFaultKindSaysWhatItNeeds(t *testing.T) {
	for _, k := range fault.Kinds() {
		if _, ok := Faults[k]; !ok {
			t.Errorf("fault kind %s is registered and missing from labcheck.Faults", k)
		}
	}
	seen := map[string]bool{}
	for _, r := range Requirements {
		if seen[r.ID] || r.check == nil || r.Needs == "" || r.Checked == "" {
			t.Errorf("requirement %q: duplicate, or without a check or its texts", r.ID)
		}
		seen[r.ID] = true
	}
	for k, ids := range Faults {
		for _, id := range ids {
			if !seen[id] {
				t.Errorf("fault %s needs %q, which is no requirement", k, id)
			}
		}
	}
	for k, ids := range AgentPodFaults {
		if _, ok := Faults[k]; !ok {
			t.Errorf("fault on an agent run as a pod %s is no fault kind", k)
		}
		for _, id := range ids {
			if !seen[id] {
				t.Errorf("fault on an agent run as a pod %s needs %q, which is no requirement", k, id)
			}
		}
	}
	for _, s := range Sources {
		for _, id := range s.Needs {
			if !seen[id] {
				t.Errorf("source %s needs %q, which is no requirement", s.Name, id)
			}
		}
	}
}

// lab/README.md carries the tables as the code has them.
func TestLabREADMECarriesTheTables(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "lab", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), Markdown()) {
		t.Errorf("lab/README.md does not carry the requirement tables as labcheck.Markdown renders them; paste:\n%s", Markdown())
	}
}

// shellHost runs commands with this machine's sh; unreachable, it
// answers nothing.
type shellHost struct {
	name        string
	roles       []lab.Role
	unreachable bool
}

func (h shellHost) Name() string      { return h.name }
func (h shellHost) Roles() []lab.Role { return h.roles }
func (h shellHost) HasRole(r lab.Role) bool {
	for _, x := range h.roles {
		if x == r {
			return true
		}
	}
	return false
}
func (h shellHost) Address() string { return "127.0.0.1" }
func (h shellHost) Run(ctx context.Context, cmd string) (lab.Result, error) {
	if h.unreachable {
		return lab.Result{}, syscall.EHOSTUNREACH
	}
	return labtest.Sh(ctx, cmd)
}
func (shellHost) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, lab.ErrUnsupported
}
func (shellHost) StopService(context.Context, string) error            { return lab.ErrUnsupported }
func (shellHost) StartService(context.Context, string) error           { return lab.ErrUnsupported }
func (shellHost) Signal(context.Context, string, syscall.Signal) error { return lab.ErrUnsupported }
func (shellHost) Services(context.Context) ([]lab.ServiceState, error) {
	return nil, lab.ErrUnsupported
}
func (shellHost) PowerOff(context.Context) error { return lab.ErrUnsupported }
func (shellHost) PowerOn(context.Context) error  { return lab.ErrUnsupported }

// fakeLab is a lab of shell hosts and a config.
type fakeLab struct {
	lab.Lab
	cfg   *lab.Config
	hosts []lab.Host
}

func (l fakeLab) Config() *lab.Config { return l.cfg }
func (l fakeLab) Hosts() []lab.Host   { return l.hosts }
func (l fakeLab) Info() lab.Info      { return lab.Info{Name: l.cfg.Name, Kind: l.cfg.Kind} }

func newFakeLab(agent string, hosts ...lab.Host) *env {
	cfg := &lab.Config{Name: "fleet", Kind: "static", Kubernetes: lab.KubernetesSettings{PolicyAgent: agent}}
	return &env{ctx: context.Background(), lab: fakeLab{cfg: cfg, hosts: hosts}}
}

// A tool missing on one host is not met, naming the host; a host not
// reached leaves it unknown, never met.
func TestHostToolsNamesTheHostsWithout(t *testing.T) {
	w1 := shellHost{name: "worker1", roles: []lab.Role{lab.RoleWorker}}
	w2 := shellHost{name: "worker2", roles: []lab.Role{lab.RoleWorker}}
	if f := hostTools("x", nil, "sh")(newFakeLab("", w1, w2)); f.Status != Met {
		t.Errorf("sh everywhere: %+v", f)
	}
	f := hostTools("x", nil, "sh", "no-such-tool-faultline")(newFakeLab("", w1, w2))
	if f.Status != NotMet || !strings.Contains(f.Detail, "worker1 (no no-such-tool-faultline)") {
		t.Errorf("a missing tool: %+v", f)
	}
	down := shellHost{name: "worker3", roles: []lab.Role{lab.RoleWorker}, unreachable: true}
	if f := hostTools("x", nil, "sh")(newFakeLab("", w1, down)); f.Status != Unknown || !strings.Contains(f.Detail, "worker3") {
		t.Errorf("a host not reached: %+v, want unknown naming it", f)
	}
}

// The policy rules need the agent named in the file.
func TestPolicyRulesNeedTheAgentNamed(t *testing.T) {
	w1 := shellHost{name: "worker1", roles: []lab.Role{lab.RoleWorker}}
	if f := checkPolicyRules(newFakeLab("", w1)); f.Status != NotMet || !strings.Contains(f.Detail, "kubernetes.policyAgent") {
		t.Errorf("no agent: %+v", f)
	}
}

// An API server port nothing listens on is not met, saying so.
func TestAuthzConfigOfAPortNothingListensOn(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Skip("no ss here")
	}
	cp := shellHost{name: "cp1", roles: []lab.Role{lab.RoleControlPlane}}
	e := newFakeLab("", cp)
	e.lab.Config().Network.APIServerPort = 1
	if f := checkAuthzConfig(e); f.Status != NotMet || !strings.Contains(f.Detail, "nothing listens on port 1") {
		t.Errorf("%+v", f)
	}
}

// A report says of each fault whether the lab can run it.
func TestReportSaysWhichFaultsCannotRun(t *testing.T) {
	r := Report{Lab: "fleet", Kind: "static", Findings: map[string]Finding{}}
	for _, req := range Requirements {
		r.Findings[req.ID] = Finding{Requirement: req.ID, Status: Met}
	}
	r.Findings[Power] = Finding{Requirement: Power, Status: NotMet, Detail: "no hypervisor"}
	r.Findings[IPTables] = Finding{Requirement: IPTables, Status: Unknown}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"cannot   power-off", "power not met", "unknown  partition", "iptables unknown", "ok       stop-service"} {
		if !strings.Contains(out, want) {
			t.Errorf("report without %q:\n%s", want, out)
		}
	}
}

// agentLab is a fake lab that offers per-node agent identities and
// kubeconfigs, as the local lab's and the static lab's types do in either
// layout, and answers with err where set.
type agentLab struct {
	fakeLab
	err error
}

func (a agentLab) AgentIdentity(node, agent string) (lab.Identity, error) {
	if a.err != nil {
		return lab.Identity{}, a.err
	}
	return lab.Identity{User: agent + ":" + node}, nil
}
func (a agentLab) AgentKubeconfig(node, agent string) (string, error) {
	if a.err != nil {
		return "", a.err
	}
	return "/etc/" + agent + "-" + node + ".kubeconfig", nil
}

// Agents run as pods have no identity or kubeconfig per node, whatever
// interfaces the lab's type has; agents run as services have them where
// the lab offers them and answers for every worker: a lab that offers the
// interface and cannot answer (an SSH lab file that names no agent
// kubeconfigs) does not meet it, and one whose answer failed leaves it
// unknown.
func TestAgentCapabilitiesFollowHowTheAgentsRun(t *testing.T) {
	w1 := shellHost{name: "worker1", roles: []lab.Role{lab.RoleWorker}}
	for _, tc := range []struct {
		agents string
		err    error
		want   Status
		detail string
	}{
		{lab.AgentsAsServices, nil, Met, "worker1 "},
		{lab.AgentsAsPods, nil, NotMet, "kubernetes.agents: pods"},
		{lab.AgentsAsServices, lab.Unsupported("static", "agent identity", "the lab file does not say"), NotMet, "the lab file does not say"},
		{lab.AgentsAsServices, errors.New("reading the kubeconfig: connection refused"), Unknown, "connection refused"},
	} {
		cfg := &lab.Config{Name: "fleet", Kind: "static", Kubernetes: lab.KubernetesSettings{Agents: tc.agents}}
		e := &env{ctx: context.Background(), lab: agentLab{fakeLab{cfg: cfg, hosts: []lab.Host{w1}}, tc.err}}
		for _, id := range []string{AgentIDs, AgentConfigs} {
			f := capability(id)(e)
			if f.Status != tc.want || !strings.Contains(f.Detail, tc.detail) {
				t.Errorf("agents %s (%v), %s: %+v, want %s with %q", tc.agents, tc.err, id, f, tc.want, tc.detail)
			}
		}
	}
}

// A report on a lab whose agents run as pods says what the faults on them
// need, apart from what the same kinds need of a host's service.
func TestReportOfALabOfPodsSaysWhatItsAgentFaultsNeed(t *testing.T) {
	r := Report{Lab: "fleet", Kind: "static", Agents: lab.AgentsAsPods, Findings: map[string]Finding{}}
	for _, req := range Requirements {
		r.Findings[req.ID] = Finding{Requirement: req.ID, Status: Met}
	}
	r.Findings[AgentConfigs] = Finding{Requirement: AgentConfigs, Status: NotMet}
	r.Findings[Services] = Finding{Requirement: Services, Status: NotMet}
	r.Findings[CgroupFreezer] = Finding{Requirement: CgroupFreezer, Status: NotMet}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	_, pods, ok := strings.Cut(out, "faults on node agents run as pods")
	if !ok {
		t.Fatalf("report without the faults on agents run as pods:\n%s", out)
	}
	pods, _, _ = strings.Cut(pods, "\nsources\n")
	for _, want := range []string{"ok       pin-agents", "ok       restart-service", "cannot   freeze", "cgroup-freezer not met", "ok       blackhole-watch"} {
		if !strings.Contains(pods, want) {
			t.Errorf("faults on agents run as pods without %q:\n%s", want, pods)
		}
	}
	r.Agents = lab.AgentsAsServices
	b.Reset()
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "faults on node agents run as pods") {
		t.Errorf("a lab of services with the faults on agents run as pods:\n%s", b.String())
	}
}
