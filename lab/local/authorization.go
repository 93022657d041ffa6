package local

import (
	"fmt"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/components"
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
