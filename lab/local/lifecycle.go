package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/mounts"
	"github.com/faultline/faultline/lab/local/internal/state"
)

func (l *Lab) Info() lab.Info {
	return lab.Info{
		Name:              l.cfg.Name,
		Kind:              Kind,
		Topology:          l.cfg.Name,
		ResetKind:         lab.ResetColdSnapshot,
		KubernetesVersion: l.cfg.Kubernetes.Version,
		EtcdVersion:       l.cfg.Kubernetes.EtcdVersion,
		TimerProfile:      l.cfg.Kubernetes.TimerProfile,
		Timers:            l.timerValues(),
	}
}

// Status reports every host, its power and its services.
func (l *Lab) Status(ctx context.Context) (lab.Status, error) {
	st := lab.Status{Info: l.Info(), Up: state.Exists(l.cfg.StateDir)}
	for _, h := range l.hosts {
		hs := lab.HostStatus{
			Name:    h.cfg.Name,
			Roles:   h.Roles(),
			Address: h.cfg.Address,
			Power:   h.Power(),
		}
		svcs, err := h.Services(ctx)
		if err != nil {
			hs.Detail = err.Error()
		}
		if skew := l.skewStatus(h.cfg.Name); skew != "" {
			hs.Detail = strings.TrimPrefix(hs.Detail+"; "+skew, "; ")
		}
		hs.Services = svcs
		st.Hosts = append(st.Hosts, hs)
	}
	return st, nil
}

// dropVolatile forgets what a host's RAM and /run held at a power cut:
// mounts made by kubelet and containerd, and the runtime dir.
func (l *Lab) dropVolatile(host string) error {
	if err := mounts.UnmountAll(l.dirs.Runtime(host), l.dirs.Data(host)); err != nil {
		return fmt.Errorf("host %s: %w", host, err)
	}
	// The supervisor's records live under the runtime dir too; keep them
	// (the services are recorded as stopped) and drop the rest.
	ents, err := os.ReadDir(l.dirs.Runtime(host))
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".pid") {
			continue
		}
		if err := os.RemoveAll(filepath.Join(l.dirs.Runtime(host), e.Name())); err != nil {
			return fmt.Errorf("host %s: clearing runtime state: %w", host, err)
		}
	}
	return nil
}
