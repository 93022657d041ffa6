package agents_test

import (
	"testing"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/suites/agents"
)

// configLab is a lab that says only its file.
type configLab struct {
	lab.Lab
	cfg *lab.Config
}

func (l configLab) Config() *lab.Config { return l.cfg }

// The policy agent's health is asked where kube-router serves it, and only
// on a lab whose policy agent is kube-router: another agent's node refuses
// kube-router's port, and a refusal is read as the agent admitting it is
// unhealthy, so asking it there would make every divergence look admitted.
func TestHealthEndpointsFollowThePolicyAgent(t *testing.T) {
	for _, tc := range []struct {
		policyAgent string
		want        []string
	}{
		{lab.PolicyAgentKubeRouter, []string{lab.ServiceKubeProxy, lab.ServicePolicyAgent}},
		{lab.PolicyAgentCalico, []string{lab.ServiceKubeProxy}},
		{lab.PolicyAgentKubeNetworkPolicies, []string{lab.ServiceKubeProxy}},
		{"", []string{lab.ServiceKubeProxy}},
	} {
		l := configLab{cfg: &lab.Config{Kubernetes: lab.KubernetesSettings{PolicyAgent: tc.policyAgent}}}
		var got []string
		for _, e := range agents.AgentEndpointsOf(l) {
			got = append(got, e.Agent)
			if e.Agent == lab.ServicePolicyAgent && (e.Port != 20244 || e.Path != "/healthz") {
				t.Errorf("policyAgent %q: kube-router's health at %d%s, want 20244/healthz", tc.policyAgent, e.Port, e.Path)
			}
		}
		if len(got) != len(tc.want) || (len(got) > 0 && got[len(got)-1] != tc.want[len(tc.want)-1]) {
			t.Errorf("policyAgent %q: health asked of %v, want %v", tc.policyAgent, got, tc.want)
		}
	}
}
