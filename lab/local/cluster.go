package local

import (
	"path/filepath"

	"github.com/faultline/faultline/lab/local/binpaths"
)

// containerdSocket is the host's containerd socket, under its runtime dir.
func (l *Lab) containerdSocket(host string) string {
	return filepath.Join(l.runtimeDir(host), "containerd", "containerd.sock")
}

// binDirs are the directories of the lab's built binaries, for PATH.
func (l *Lab) binDirs() []string {
	p, err := binpaths.Locate(l.cfg)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, b := range []string{p.Kubectl, p.Crictl, p.Etcdctl, p.Kubelet, p.Containerd} {
		d := filepath.Dir(b)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// clusterServices are the Kubernetes and etcd services of a host.
func (l *Lab) clusterServices(h *Host) []service { return nil }

func (l *Lab) timerValues() map[string]string { return nil }
