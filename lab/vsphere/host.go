package vsphere

import (
	"context"
	"fmt"
)

// host is one host of the fleet: commands over the network, power from its VM.
type host struct {
	RemoteHost
	lab *Lab
	vm  *fleetVM
}

func newHost(l *Lab, v *fleetVM) (*host, error) {
	power := Power{Off: v.powerOff, On: v.powerOn}
	remote, err := l.opts.remoteHost(v.host, l.cfg, power)
	if err != nil {
		return nil, err
	}
	return &host{RemoteHost: remote, lab: l, vm: v}, nil
}

// PowerOff is a hard power off of the host's VM (PowerOffVM_Task): the
// guest gets no shutdown, as in a power cut.
func (h *host) PowerOff(ctx context.Context) error {
	return h.vm.powerOff(ctx)
}

// PowerOn powers the VM on and returns once the guest is up and the host
// answers commands again.
func (h *host) PowerOn(ctx context.Context) error {
	if err := h.vm.powerOn(ctx); err != nil {
		return err
	}
	if err := h.lab.waitGuests(ctx, []*fleetVM{h.vm}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.lab.opts.bootTimeout)
	defer cancel()
	if err := h.RemoteHost.WaitReachable(ctx); err != nil {
		return fmt.Errorf("waiting for %s to answer after power on: %w", h.vm, err)
	}
	return nil
}
