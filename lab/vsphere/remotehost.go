package vsphere

import (
	"github.com/faultline/faultline/lab"
)

// sshRemoteHost reaches a fleet host over SSH with the lab's ssh settings.
func sshRemoteHost(hc lab.HostConfig, c *lab.Config, power Power) (RemoteHost, error) {
	return nil, lab.Unsupported(lab.KindVSphere, "commands on "+hc.Name, "the SSH backend is not linked in yet")
}
