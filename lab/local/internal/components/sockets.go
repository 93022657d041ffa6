package components

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local/csidriver"
	"github.com/faultline/faultline/lab/local/internal/addressing"
)

// Socket is a unix socket a component of the lab listens on, under the
// lab's state dir.
type Socket struct {
	Host, Service, Path string
}

func (s Socket) String() string { return fmt.Sprintf("%s's %s socket %s", s.Host, s.Service, s.Path) }

// Sockets are the unix sockets the lab's components listen on under its
// state dir, host by host, from the same paths the components are given:
// each node's containerd (gRPC and ttrpc) and kubelet (pod resources), each
// worker's CSI node and registration sockets when the lab has a storage
// host, and the storage host's CSI controller sockets. A path longer than
// MaxSocketPath cannot be listened on. Sockets at fixed paths outside the
// state dir (kubelet's device plugins, the containerd shims') are not
// listed: no lab setting makes them longer.
func (c *Cluster) Sockets() []Socket {
	var out []Socket
	_, storage := c.StorageHost()
	for _, h := range c.Config.Hosts {
		if addressing.RunsKubelet(h) {
			sock := c.Dirs.ContainerdSocket(h.Name)
			out = append(out,
				Socket{h.Name, lab.ServiceContainerd, sock},
				Socket{h.Name, lab.ServiceContainerd + " ttrpc", ttrpcSocket(sock)},
				Socket{h.Name, lab.ServiceKubelet + " pod-resources", podResourcesSocket(c.KubeletRoot(h.Name))})
			if storage && slices.Contains(h.Roles, lab.RoleWorker) {
				for _, k := range csidriver.Kinds {
					out = append(out,
						Socket{h.Name, lab.ServiceCSINode + " " + k.DriverName(), csidriver.NodeSocket(c.KubeletRoot(h.Name), k.DriverName())},
						Socket{h.Name, lab.ServiceCSINode + " " + k.DriverName() + " registration", csidriver.RegistrationSocket(csidriver.RegistryDir(c.KubeletRoot(h.Name)), k.DriverName())})
				}
			}
		}
		if slices.Contains(h.Roles, lab.RoleStorage) {
			for _, k := range csidriver.Kinds {
				out = append(out, Socket{h.Name, lab.ServiceCSIController + " " + k.DriverName(), csidriver.ControllerSocket(c.csiSocketDir(Host{HostConfig: h}), k.DriverName())})
			}
		}
	}
	return out
}

// MaxSocketPath is the longest path a unix socket address holds: sun_path
// is 108 bytes, one of them the NUL.
const MaxSocketPath = csidriver.MaxSocketPath

// ttrpcSocket is containerd's ttrpc socket beside its gRPC one.
func ttrpcSocket(grpc string) string { return grpc + ".ttrpc" }

// podResourcesSocket is where a kubelet with root-dir root serves its
// pod-resources API (kubelet's <root-dir>/pod-resources/kubelet.sock).
func podResourcesSocket(root string) string {
	return filepath.Join(root, "pod-resources", "kubelet.sock")
}

// CheckSocketPaths names every socket of Sockets too long to listen on,
// with its length; nil when all fit. It touches nothing.
func (c *Cluster) CheckSocketPaths() error {
	var long []string
	for _, s := range c.Sockets() {
		if len(s.Path) > MaxSocketPath {
			long = append(long, fmt.Sprintf("%s is %d bytes", s, len(s.Path)))
		}
	}
	if len(long) == 0 {
		return nil
	}
	return fmt.Errorf("stateDir %s (%d bytes) is too long for the lab's unix sockets, whose paths hold at most %d bytes (sun_path's 108, one for the NUL); choose a shorter stateDir (or $%s): %d socket(s) too long:\n  %s",
		c.Dirs.Dir(), len(c.Dirs.Dir()), MaxSocketPath, lab.EnvStateDir, len(long), strings.Join(long, "\n  "))
}
