package local

import (
	"context"
	"fmt"
)

// Up builds the lab from nothing, boots it and takes the cold snapshot.
func (l *Lab) Up(ctx context.Context) error {
	if err := l.provisionHosts(ctx); err != nil {
		return fmt.Errorf("lab %s up: %w", l.cfg.Name, err)
	}
	return nil
}

// Reset returns the lab to its cold snapshot.
func (l *Lab) Reset(ctx context.Context) error {
	return fmt.Errorf("lab %s reset: not yet", l.cfg.Name)
}

// Kubeconfig returns an admin kubeconfig path.
func (l *Lab) Kubeconfig(target string) (string, error) {
	return "", fmt.Errorf("lab %s: no kubeconfig yet", l.cfg.Name)
}
