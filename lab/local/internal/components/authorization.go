package components

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faultline/faultline/lab/local/internal/layout"
)

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

// AuthorizationConfigPath is the file the API server on host reads its
// authorizers from (--authorization-config).
func AuthorizationConfigPath(d layout.State, host string) string {
	return filepath.Join(d.Data(host), "kubernetes", "authorization-config.yaml")
}

// writeAuthorizationConfig writes the host's authorization configuration
// only where there is none: like a file on a VM's disk it survives a
// restart or a power cycle as it is, and only reset (the cold snapshot)
// brings back the original.
func (c *Cluster) writeAuthorizationConfig(h Host) (string, error) {
	path := AuthorizationConfigPath(c.Dirs, h.Name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("looking for %s's authorization configuration: %w", h.Name, err)
	}
	if err := writeFile(path, authorizationConfig); err != nil {
		return "", fmt.Errorf("writing %s's authorization configuration: %w", h.Name, err)
	}
	return path, nil
}
