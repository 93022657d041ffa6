package local

import (
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/components"
	"github.com/faultline/faultline/lab/timers"
)

func (l *Lab) timerValues() map[string]string {
	p, err := timers.Get(l.cfg.Kubernetes.TimerProfile)
	if err != nil {
		return nil
	}
	return p.Flat()
}

// hostsWithRole are the hosts with role r, in config order.
func (l *Lab) hostsWithRole(r lab.Role) []*Host {
	var out []*Host
	for _, h := range l.hosts {
		if h.HasRole(r) {
			out = append(out, h)
		}
	}
	return out
}

// etcdHosts are the hosts with the etcd role, in config order.
func (l *Lab) etcdHosts() []*Host { return l.hostsWithRole(lab.RoleEtcd) }

func (l *Lab) controlPlaneHosts() []*Host { return l.hostsWithRole(lab.RoleControlPlane) }

func (l *Lab) nodeHosts() []*Host {
	var out []*Host
	for _, h := range l.hosts {
		if h.node != nil {
			out = append(out, h)
		}
	}
	return out
}

// services lists what a host runs, in boot order.
func (h *Host) services() []components.Service {
	out := []components.Service{components.SSHD()}
	if h.lab.bareHosts {
		return out
	}
	return append(out, components.ForHost(h.lab.comp, h.component())...)
}
