package local

import (
	"context"
	"fmt"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/components"
)

var _ lab.AgentRuns = (*Lab)(nil)

// AgentRun says how the agent runs on node: a host service of that name,
// or, with kubernetes.agents: pods, a pod of its DaemonSet
// (lab.KubeadmAgentPod). kube-proxy runs on every node, the policy agent
// on every worker.
func (l *Lab) AgentRun(node, agent string) (lab.AgentRun, error) {
	h, ok := l.byName[node]
	if !ok {
		_, err := l.Host(node)
		return lab.AgentRun{}, err
	}
	if !components.RunsAgent(h.component(), agent) {
		return lab.AgentRun{}, lab.Unsupported(Kind, "agent "+agent, fmt.Sprintf("host %s runs no %s", node, agent))
	}
	r := lab.AgentRun{Agent: agent, Node: node}
	if l.comp.AgentsAsPods() {
		p, ok := lab.KubeadmAgentPod(agent)
		if !ok {
			return lab.AgentRun{}, lab.Unsupported(Kind, "agent "+agent, "no DaemonSet runs it")
		}
		r.Pod = &p
	}
	return r, nil
}

// agentPodsWait bounds the wait for every node's agent pods after its
// kubelet is Ready: the DaemonSet controller makes a missing pod, the
// scheduler binds it and the kubelet starts its sandbox and container
// (after a reset, from the pods the cold snapshot holds).
const agentPodsWait = 3 * time.Minute

// waitAgentPods waits, where the agents run as pods, until each node's
// agents serve their health endpoints, as the host services' readiness
// checks wait for them at boot.
func (l *Lab) waitAgentPods(ctx context.Context) error {
	if !l.comp.AgentsAsPods() {
		return nil
	}
	return l.forEachHost(func(h *Host) error {
		for _, a := range components.Agents {
			if !components.RunsAgent(h.component(), a) {
				continue
			}
			err := lab.WaitFor(ctx, fmt.Sprintf("the %s pod on %s to serve", a, h.cfg.Name), agentPodsWait, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
				err := components.AgentPodReady(ctx, h.component(), a)
				return err == nil, err
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}
