package vsphere

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/lab"
)

// Kubeconfig returns the lab's kubeconfig for an empty target (the address
// a user's kubectl uses: the keepalived address on the fleet), or one
// written under the state directory that points at one control-plane
// host's API server alone.
func (l *Lab) Kubeconfig(target string) (string, error) {
	kubeconfig := kubeconfigPath(l.cfg)
	if target == "" {
		return kubeconfig, nil
	}
	hc, ok := l.cfg.HostConfig(target)
	if !ok {
		return "", fmt.Errorf("vsphere lab %s has no host %q", l.cfg.Name, target)
	}
	if !hasRole(hc.Roles, lab.RoleControlPlane) {
		return "", fmt.Errorf("host %s of vsphere lab %s runs no API server (not control-plane)", target, l.cfg.Name)
	}
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	ctxName := raw.CurrentContext
	kctx, ok := raw.Contexts[ctxName]
	if !ok {
		return "", fmt.Errorf("kubeconfig %s: current context %q does not exist", kubeconfig, ctxName)
	}
	cluster, ok := raw.Clusters[kctx.Cluster]
	if !ok {
		return "", fmt.Errorf("kubeconfig %s: cluster %q of context %q does not exist", kubeconfig, kctx.Cluster, ctxName)
	}
	cluster.Server = "https://" + net.JoinHostPort(hc.Address, strconv.Itoa(l.cfg.Network.APIServerPort))
	dir := filepath.Join(l.cfg.StateDir, "kubeconfig")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("kubeconfig for %s: %w", target, err)
	}
	path := filepath.Join(dir, target+".yaml")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		return "", fmt.Errorf("writing kubeconfig for %s: %w", target, err)
	}
	return path, nil
}
