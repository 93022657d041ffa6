package vsphere

// host is one host of the fleet: commands over the network, power from its
// VM (wired into the RemoteHost by the factory).
type host struct {
	RemoteHost
	vm *fleetVM
}

func newHost(l *Lab, v *fleetVM) (*host, error) {
	power := Power{Off: v.powerOff, On: v.powerOn, BootTimeout: l.opts.bootTimeout}
	remote, err := l.opts.remoteHost(v.host, l.cfg, power)
	if err != nil {
		return nil, err
	}
	return &host{RemoteHost: remote, vm: v}, nil
}
