package vsphere

import (
	"github.com/faultline/faultline/lab"
	labssh "github.com/faultline/faultline/lab/ssh"
)

// sshRemoteHosts reaches fleet hosts over SSH with the lab's ssh settings,
// all through one shared jump connection when the lab has a jump host (an
// 11-VM fleet opening eleven jump connections at once runs into sshd's
// MaxStartups). The VM's power goes through the SSH host so that it drops
// its connection when the guest goes away.
func sshRemoteHosts(jump *labssh.Client) RemoteHostFactory {
	return func(hc lab.HostConfig, c *lab.Config, power Power) (RemoteHost, error) {
		opts := []labssh.HostOption{
			labssh.WithPower(power.Off, power.On),
			labssh.WithLabKind(Kind),
			labssh.WithBootTimeout(power.BootTimeout),
		}
		if jump != nil {
			opts = append(opts, labssh.WithJump(jump))
		}
		return labssh.NewHost(hc, c.SSH, opts...)
	}
}
