package static

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
)

// Node agents run as services of a fleet's hosts. The lab file says
// which kubeconfig each agent reads (kubernetes.agentKubeconfigs); who the
// agent is to the API servers is read from that file, on the host, when a
// fault asks: the client certificate's common name is the user and its
// organisations the groups, as the API servers' x509 authenticator reads
// them. An agent that shares its identity with another node's (one
// certificate for every kube-proxy, as many installers issue) or with its
// kubelet (an agent run with the kubelet's kubeconfig) cannot be refused
// alone, and says so.

var (
	_ lab.AgentKubeconfigs = (*Lab)(nil)
	_ lab.AgentIdentities  = (*Lab)(nil)
)

// agentReadTimeout bounds reading one agent's kubeconfig over SSH.
const agentReadTimeout = 30 * time.Second

// AgentKubeconfig is the kubeconfig the agent reads on node, as the lab
// file's kubernetes.agentKubeconfigs says; unsupported where the agents
// run as pods or the file does not say.
func (l *Lab) AgentKubeconfig(node, agent string) (string, error) {
	if l.cfg.Kubernetes.AgentsLayout() == lab.AgentsAsPods {
		return "", lab.Unsupported(l.Info().Kind, "agent kubeconfig", fmt.Sprintf("the node agents run as pods (kubernetes.agents: pods): %s reads its configuration from the cluster", agent))
	}
	tmpl, ok := l.cfg.Kubernetes.AgentKubeconfigs[agent]
	if !ok {
		return "", lab.Unsupported(l.Info().Kind, "agent kubeconfig", fmt.Sprintf("the lab file does not say which kubeconfig %s reads on its hosts (kubernetes.agentKubeconfigs.%s)", agent, agent))
	}
	h, err := l.nodeHost(node)
	if err != nil {
		return "", err
	}
	if !h.HasRole(lab.RoleWorker) {
		return "", lab.Unsupported(l.Info().Kind, "agent kubeconfig", fmt.Sprintf("host %s is not a worker: no %s runs there", node, agent))
	}
	return strings.ReplaceAll(tmpl, "{host}", node), nil
}

// AgentIdentity is who the agent on node authenticates as: the subject of
// the client certificate in the kubeconfig it reads, read over SSH.
// Unsupported where the kubeconfig authenticates otherwise (a token) or
// where another worker's agent has the same user, since the API servers
// then cannot refuse one node's agent without the other's.
func (l *Lab) AgentIdentity(node, agent string) (lab.Identity, error) {
	id, err := l.readAgentIdentity(node, agent)
	if err != nil {
		return lab.Identity{}, err
	}
	if strings.HasPrefix(id.User, "system:node:") || slices.Contains(id.Groups, "system:nodes") {
		return lab.Identity{}, lab.Unsupported(l.Info().Kind, "agent identity", fmt.Sprintf("%s on %s authenticates as %s, a kubelet's identity: refusing it would refuse the kubelet too", agent, node, id.User))
	}
	for _, h := range l.nodeHosts() {
		if h.Name() == node || !h.HasRole(lab.RoleWorker) {
			continue
		}
		other, err := l.readAgentIdentity(h.Name(), agent)
		if err != nil {
			return lab.Identity{}, fmt.Errorf("%s on %s is %s; whether it shares that identity with %s's is unknown: %w", agent, node, id.User, h.Name(), err)
		}
		if other.User == id.User {
			return lab.Identity{}, lab.Unsupported(l.Info().Kind, "agent identity", fmt.Sprintf("%s on %s authenticates as %s, as %s's does: the API servers cannot refuse one node's agent alone", agent, node, id.User, h.Name()))
		}
	}
	return id, nil
}

// readAgentIdentity reads node's agent kubeconfig, and the certificate
// file it names if it embeds none, and returns the certificate's subject.
func (l *Lab) readAgentIdentity(node, agent string) (lab.Identity, error) {
	file, err := l.AgentKubeconfig(node, agent)
	if err != nil {
		return lab.Identity{}, err
	}
	h, err := l.nodeHost(node)
	if err != nil {
		return lab.Identity{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentReadTimeout)
	defer cancel()
	read := func(p string) ([]byte, error) {
		res, err := h.Run(ctx, "cat "+shellQuote(p))
		if err != nil {
			return nil, fmt.Errorf("reading %s on %s: %w", p, node, err)
		}
		if res.ExitCode != 0 {
			return nil, fmt.Errorf("reading %s on %s: exit %d: %s", p, node, res.ExitCode, strings.TrimSpace(res.Stderr))
		}
		return []byte(res.Stdout), nil
	}
	raw, err := read(file)
	if err != nil {
		return lab.Identity{}, err
	}
	id, err := identityFromKubeconfig(raw, func(p string) ([]byte, error) {
		if !path.IsAbs(p) {
			p = path.Join(path.Dir(file), p)
		}
		return read(p)
	})
	if err != nil {
		if errors.Is(err, errNoClientCert) {
			return lab.Identity{}, lab.Unsupported(l.Info().Kind, "agent identity", fmt.Sprintf("%s on %s (%s): %v", agent, node, file, err))
		}
		return lab.Identity{}, fmt.Errorf("%s on %s: %s: %w", agent, node, file, err)
	}
	return id, nil
}

// errNoClientCert says a kubeconfig's user authenticates otherwise than by
// a client certificate.
var errNoClientCert = errors.New("has no client certificate (a token or an exec plugin): who it is, only the API servers know")

// identityFromKubeconfig is the identity of a kubeconfig's current user:
// the subject of its client certificate, embedded or in the file readCert
// reads; errNoClientCert for a user that authenticates otherwise.
func identityFromKubeconfig(raw []byte, readCert func(string) ([]byte, error)) (lab.Identity, error) {
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return lab.Identity{}, fmt.Errorf("not a kubeconfig: %w", err)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return lab.Identity{}, fmt.Errorf("its current context %q is not among its contexts", cfg.CurrentContext)
	}
	user, ok := cfg.AuthInfos[kctx.AuthInfo]
	if !ok {
		return lab.Identity{}, fmt.Errorf("its context %q names user %q, which it does not hold", cfg.CurrentContext, kctx.AuthInfo)
	}
	pemBytes := user.ClientCertificateData
	if len(pemBytes) == 0 && user.ClientCertificate != "" {
		if pemBytes, err = readCert(user.ClientCertificate); err != nil {
			return lab.Identity{}, err
		}
	}
	if len(pemBytes) == 0 {
		return lab.Identity{}, fmt.Errorf("user %q: %w", kctx.AuthInfo, errNoClientCert)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE" {
		return lab.Identity{}, fmt.Errorf("user %q's client certificate is not PEM", kctx.AuthInfo)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return lab.Identity{}, fmt.Errorf("user %q's client certificate: %w", kctx.AuthInfo, err)
	}
	if cert.Subject.CommonName == "" {
		return lab.Identity{}, fmt.Errorf("user %q's client certificate has no common name", kctx.AuthInfo)
	}
	groups := slices.Clone(cert.Subject.Organization)
	if !slices.Contains(groups, "system:authenticated") {
		groups = append(groups, "system:authenticated")
	}
	return lab.Identity{User: cert.Subject.CommonName, Groups: groups}, nil
}

var _ lab.AuthorizationConfigFiles = (*Lab)(nil)

// AuthorizationConfigFile is the file the API server on a control-plane
// host reads its authorizers from, as its own command line says
// (--authorization-config of the process listening on the API server
// port), read over SSH. Unsupported where it runs without one.
func (l *Lab) AuthorizationConfigFile(host string) (string, error) {
	h, err := l.nodeHost(host)
	if err != nil {
		return "", err
	}
	if !h.HasRole(lab.RoleControlPlane) {
		return "", fmt.Errorf("lab %s: host %s runs no API server", l.cfg.Name, host)
	}
	port := l.cfg.Network.APIServerPort
	if port == 0 {
		port = 6443
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentReadTimeout)
	defer cancel()
	res, err := h.Run(ctx, lab.AuthorizationConfigScript(port))
	if err != nil {
		return "", fmt.Errorf("reading the API server's command line on %s: %w", host, err)
	}
	switch res.ExitCode {
	case 0:
	case 3:
		return "", fmt.Errorf("reading the API server's command line on %s: nothing listens on port %d", host, port)
	case 4:
		return "", lab.Unsupported(l.Info().Kind, "authorization configuration", fmt.Sprintf("the API server on %s runs without --authorization-config", host))
	default:
		return "", fmt.Errorf("reading the API server's command line on %s: exit %d: %s", host, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	file := strings.TrimSpace(res.Stdout)
	if !path.IsAbs(file) {
		return "", fmt.Errorf("the API server on %s reads --authorization-config=%s, relative to a directory the lab cannot tell", host, file)
	}
	return file, nil
}
