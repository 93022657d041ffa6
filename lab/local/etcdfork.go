package local

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/internal/components"
)

var _ lab.EtcdForks = (*Lab)(nil)

// EtcdFork offers, on a control-plane host, the lab's etcd binary, the
// first etcd member's serving certificate (hosts share the machine's
// filesystem) and the lab CA, and a directory under the host's runtime
// state, which a power-off or a reset drops with the rest of it.
func (l *Lab) EtcdFork(host string) (lab.EtcdFork, error) {
	var cp *Host
	for _, h := range l.controlPlaneHosts() {
		if h.cfg.Name == host {
			cp = h
		}
	}
	if cp == nil {
		if _, err := l.Host(host); err != nil {
			return lab.EtcdFork{}, err
		}
		return lab.EtcdFork{}, fmt.Errorf("lab %s: host %s runs no API server", l.cfg.Name, host)
	}
	members := l.etcdHosts()
	if len(members) == 0 {
		return lab.EtcdFork{}, fmt.Errorf("lab %s has no etcd host", l.cfg.Name)
	}
	cc, err := l.comp.Env(context.Background())
	if err != nil {
		return lab.EtcdFork{}, err
	}
	first := members[0]
	m, ok := cc.PKI.Etcd[first.cfg.Name]
	if !ok {
		return lab.EtcdFork{}, fmt.Errorf("lab %s: no certificate for etcd member %s", l.cfg.Name, first.cfg.Name)
	}
	f := lab.EtcdFork{
		Binary:        cc.Bins.Etcd,
		Member:        fmt.Sprintf("https://%s:%d", first.cfg.Address, components.EtcdClientPort),
		CertFile:      m.Server.Cert,
		KeyFile:       m.Server.Key,
		TrustedCAFile: cc.PKI.CA.Cert,
		Dir:           filepath.Join(l.dirs.Runtime(host), "etcd-fork"),
	}
	for _, o := range members[1:] {
		f.Others = append(f.Others, fmt.Sprintf("https://%s:%d", o.cfg.Address, components.EtcdClientPort))
	}
	return f, nil
}
