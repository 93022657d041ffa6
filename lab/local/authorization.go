package local

import (
	"fmt"
	"path/filepath"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/components"
	"github.com/faultline/faultline/lab/local/pki"
)

var _ lab.AuthorizationConfigFiles = (*Lab)(nil)

// AuthorizationConfigFile is the file the API server on a control-plane
// host reads its authorizers from (--authorization-config).
func (l *Lab) AuthorizationConfigFile(host string) (string, error) {
	for _, h := range l.controlPlaneHosts() {
		if h.cfg.Name == host {
			return components.AuthorizationConfigPath(l.dirs, host), nil
		}
	}
	if _, err := l.Host(host); err != nil {
		return "", err
	}
	return "", fmt.Errorf("lab %s: host %s runs no API server", l.cfg.Name, host)
}

var _ lab.AgentIdentities = (*Lab)(nil)

// AgentIdentity is who node's kube-proxy or policy agent authenticates as
// (see pki: one identity per node and agent); unsupported where the
// agents run as pods, which share their service account.
func (l *Lab) AgentIdentity(node, agent string) (lab.Identity, error) {
	h, err := l.Host(node)
	if err != nil {
		return lab.Identity{}, err
	}
	if r, err := l.AgentRun(node, agent); err == nil && r.AsPod() {
		return lab.Identity{}, lab.Unsupported(l.Info().Kind, "agent identity", fmt.Sprintf("%s runs as a pod on %s, as the service account %s/%s every node's pod shares (lab.AgentRunOf)", agent, node, r.Pod.Namespace, r.Pod.ServiceAccount))
	}
	lh := h.(*Host)
	runs := false
	for _, s := range lh.services() {
		runs = runs || s.Name == agent
	}
	if !runs {
		return lab.Identity{}, lab.Unsupported(l.Info().Kind, "agent identity", fmt.Sprintf("host %s runs no %s", node, agent))
	}
	switch agent {
	case lab.ServiceKubeProxy:
		return lab.Identity{User: pki.KubeProxyUser(node), Groups: []string{pki.KubeProxyGroup, "system:authenticated"}}, nil
	case lab.ServicePolicyAgent:
		return lab.Identity{User: pki.KubeRouterUser(node), Groups: []string{pki.KubeRouterGroup, "system:authenticated"}}, nil
	}
	return lab.Identity{}, lab.Unsupported(l.Info().Kind, "agent identity", fmt.Sprintf("%s is not a node agent with an identity of its own", agent))
}

var _ lab.AgentKubeconfigs = (*Lab)(nil)

// AgentKubeconfig is the kubeconfig node's kube-proxy or policy agent
// reads when it starts (pki: one per node and agent, in the lab's PKI
// directory); unsupported where the agents run as pods, which read theirs
// from the cluster.
func (l *Lab) AgentKubeconfig(node, agent string) (string, error) {
	if _, err := l.AgentIdentity(node, agent); err != nil {
		return "", err
	}
	return filepath.Join(l.dirs.PKI(), pki.AgentKubeconfigFile(agent, node)), nil
}
