package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline/faultline/lab"
)

var _ lab.AuthorizationConfigFiles = (*Lab)(nil)

// authorizationConfig is what --authorization-mode=Node,RBAC means, as a
// file: the API server reloads a file when it changes, which a fault can
// use to put an authorizer in front of these two at run time.
const authorizationConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthorizationConfiguration
authorizers:
  - type: Node
    name: node
  - type: RBAC
    name: rbac
`

func (l *Lab) authorizationConfigPath(host string) string {
	return filepath.Join(l.dirs.Data(host), "kubernetes", "authorization-config.yaml")
}

// writeAuthorizationConfig writes the host's authorization configuration
// only where there is none: like a file on a VM's disk it survives a
// restart or a power cycle as it is, and only reset (the cold snapshot)
// brings back the original.
func (l *Lab) writeAuthorizationConfig(h *Host) (string, error) {
	path := l.authorizationConfigPath(h.cfg.Name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("looking for %s's authorization configuration: %w", h.cfg.Name, err)
	}
	if err := writeFile(path, authorizationConfig); err != nil {
		return "", fmt.Errorf("writing %s's authorization configuration: %w", h.cfg.Name, err)
	}
	return path, nil
}

// AuthorizationConfigFile is the file the API server on a control-plane
// host reads its authorizers from (--authorization-config).
func (l *Lab) AuthorizationConfigFile(host string) (string, error) {
	for _, h := range l.controlPlaneHosts() {
		if h.cfg.Name == host {
			return l.authorizationConfigPath(host), nil
		}
	}
	if _, err := l.Host(host); err != nil {
		return "", err
	}
	return "", fmt.Errorf("lab %s: host %s runs no API server", l.cfg.Name, host)
}
