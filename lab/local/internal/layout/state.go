package layout

import "path/filepath"

// State is the layout of a lab's state dir: the value is the dir itself.
type State string

// Dir is the state dir.
func (s State) Dir() string { return string(s) }

// Record is the lab's record (lab.json): the config the lab was built
// from and what it changed on the machine.
func (s State) Record() string { return filepath.Join(string(s), "lab.json") }

// Images records the node images the lab's up built (images.json): what
// the nodes' runtimes hold, named again by every later process of the lab
// without building them again.
func (s State) Images() string { return filepath.Join(string(s), "images.json") }

// Data is a host's persistent data: what a VM's disk would hold and
// what the cold snapshot copies.
func (s State) Data(host string) string { return filepath.Join(string(s), "hosts", host) }

// PodLogs is where a node's kubelet writes its containers' logs
// (podLogsDir), under its data.
func (s State) PodLogs(host string) string { return filepath.Join(s.Data(host), "pod-logs") }

// RunRoot holds every host's runtime dir.
func (s State) RunRoot() string { return filepath.Join(string(s), "run") }

// Runtime is a host's runtime state (sockets, pod network namespaces):
// what a VM's /run would hold, lost at power off.
func (s State) Runtime(host string) string { return filepath.Join(s.RunRoot(), host) }

// Logs holds every service's log, logs/<host>/<service>.log.
func (s State) Logs() string { return filepath.Join(string(s), "logs") }

// PKI holds the lab's certificates, keys and kubeconfigs.
func (s State) PKI() string { return filepath.Join(string(s), "pki") }

// SSH holds the lab's SSH material.
func (s State) SSH() string { return filepath.Join(string(s), "ssh") }

// Cold is the cold snapshot.
func (s State) Cold() string { return filepath.Join(string(s), "cold") }

// UTS is the file a host's UTS namespace is bound to.
func (s State) UTS(host string) string { return filepath.Join(string(s), "ns", host+".uts") }

// ContainerdSocket is the host's containerd socket, under its runtime dir.
func (s State) ContainerdSocket(host string) string {
	return filepath.Join(s.Runtime(host), "containerd", "containerd.sock")
}
