package readers

import (
	"context"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/evidence/source/sourcetest"
	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/lab"
)

// dumpHost answers the commands of the policy readers with the dumps of
// testdata/agents, as a node's shell would print them.
type dumpHost struct {
	sourcetest.ShellHost
	t      *testing.T
	files  map[string][]string // the tool a command starts with → files printed, in order
	asked  []string
	stderr string
	exit   int
}

func (h *dumpHost) Run(_ context.Context, cmd string) (lab.Result, error) {
	h.asked = append(h.asked, cmd)
	if h.exit != 0 {
		return lab.Result{Stderr: h.stderr, ExitCode: h.exit}, nil
	}
	tool, _, _ := strings.Cut(cmd, " ")
	files, ok := h.files[tool]
	if !ok {
		return lab.Result{Stderr: "sh: 1: " + tool + ": not found", ExitCode: 127}, nil
	}
	var out strings.Builder
	for i, f := range files {
		if i > 0 {
			out.WriteString(lab.PolicyDumpSeparator + "\n")
		}
		out.WriteString(agentsTestdata(h.t, f))
	}
	return lab.Result{Stdout: out.String()}, nil
}

// agentLab is a lab whose file names a policy agent, and nothing else.
type agentLab struct {
	lab.Lab
	cfg *lab.Config
}

func (l agentLab) Config() *lab.Config { return l.cfg }

func labWithAgent(agent string) agentLab {
	return agentLab{cfg: &lab.Config{Name: "fleet", Kind: "static", Kubernetes: lab.KubernetesSettings{PolicyAgent: agent}}}
}

// The reader of a node's applied policies reads the agent the lab file
// names, each from its own dump: what it answers is what that agent's
// parser makes of the node's dump, never another agent's reading of it.
func TestPolicyRulesForReadsTheAgentTheLabFileNames(t *testing.T) {
	// Every node has all three tools; only the named agent's dump is read.
	files := map[string][]string{
		"iptables-save": {"calico-iptables-save.txt", "calico-ipset-save.txt"},
		"nft":           {"kube-network-policies-nft.json"},
	}
	for _, tc := range []struct {
		agent   string
		want    func() (dataplane.PolicyRulesValue, error)
		command string
	}{
		{lab.PolicyAgentCalico, func() (dataplane.PolicyRulesValue, error) {
			return PolicyRulesFromCalico(calico(t))
		}, "iptables-save -t filter && echo '" + lab.PolicyDumpSeparator + "' && ipset save"},
		{lab.PolicyAgentKubeNetworkPolicies, func() (dataplane.PolicyRulesValue, error) {
			return PolicyRulesFromKubeNetworkPolicies(agentsTestdata(t, "kube-network-policies-nft.json"))
		}, "nft -j list ruleset inet"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			h := &dumpHost{t: t, files: files}
			r := PolicyRulesFor(labWithAgent(tc.agent), h)
			if r.Source() != "policy-agent/worker2" {
				t.Errorf("source %s", r.Source())
			}
			ans := r.Read(context.Background())[dataplane.AgentPolicyRules]
			var got dataplane.PolicyRulesValue
			if err := ans.Decode(&got); err != nil {
				t.Fatalf("answer %+v: %v", ans, err)
			}
			want, err := tc.want()
			if err != nil {
				t.Fatal(err)
			}
			if got.Agent != tc.agent || got.NothingProgrammed || len(got.Targets) == 0 {
				t.Fatalf("read %+v, want %s's rules", got, tc.agent)
			}
			if g, w := got.String(), want.String(); g != w {
				t.Errorf("read\n%s\nwant what the parser makes of the dump\n%s", g, w)
			}
			if len(h.asked) != 1 || h.asked[0] != tc.command {
				t.Errorf("commands %q, want %q", h.asked, tc.command)
			}
		})
	}
}

// kube-router's reader reads kube-router's capture as before.
func TestPolicyRulesForKubeRouter(t *testing.T) {
	h := &dumpHost{t: t, files: map[string][]string{"iptables-save": {"kube-router-iptables-save.txt", "kube-router-ipset-save.txt"}}}
	ans := PolicyRulesFor(labWithAgent(lab.PolicyAgentKubeRouter), h).Read(context.Background())[dataplane.AgentPolicyRules]
	var got dataplane.PolicyRulesValue
	if err := ans.Decode(&got); err != nil {
		t.Fatalf("answer %+v: %v", ans, err)
	}
	want, err := PolicyRulesFromKubeRouter(agentsTestdata(t, "kube-router-iptables-save.txt"), agentsTestdata(t, "kube-router-ipset-save.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := got.String(), want.String(); g != w || g != kubeRouterWant {
		t.Errorf("read\n%s\nwant\n%s", g, w)
	}
}

// A lab file that names no agent (or a dump that fails) leaves the rules
// unread, with the reason: never a value.
func TestPolicyRulesUnreadWithoutAnAgentOrADump(t *testing.T) {
	h := &dumpHost{t: t, files: map[string][]string{"iptables-save": {"kube-router-none-iptables-save.txt", "kube-router-none-ipset-save.txt"}}}
	ans := PolicyRulesFor(labWithAgent(""), h).Read(context.Background())[dataplane.AgentPolicyRules]
	if ans.Readable() || !strings.Contains(ans.Reason, "kubernetes.policyAgent") {
		t.Errorf("no agent named: %+v, want unreadable naming kubernetes.policyAgent", ans)
	}
	if len(h.asked) != 0 {
		t.Errorf("asked the node %q with no agent to read", h.asked)
	}
	failing := &dumpHost{t: t, exit: 1, stderr: "iptables-save: permission denied"}
	ans = PolicyRulesFor(labWithAgent(lab.PolicyAgentCalico), failing).Read(context.Background())[dataplane.AgentPolicyRules]
	if ans.Readable() || !strings.Contains(ans.Reason, "permission denied") {
		t.Errorf("failed dump: %+v, want unreadable with the node's error", ans)
	}
}
