package vsphere

import (
	"github.com/faultline/faultline/lab"
	labssh "github.com/faultline/faultline/lab/ssh"
)

// sshRemoteHost reaches a fleet host over SSH with the lab's ssh settings;
// the VM's power goes through the SSH host so that it drops its connection
// when the guest goes away.
func sshRemoteHost(hc lab.HostConfig, c *lab.Config, power Power) (RemoteHost, error) {
	return labssh.NewHost(hc, c.SSH,
		labssh.WithPower(power.Off, power.On),
		labssh.WithLabKind(lab.KindVSphere),
		labssh.WithBootTimeout(power.BootTimeout))
}
