package vsphere

import (
	"context"
	"fmt"
	"time"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline/faultline/lab"
)

// statusTimeout bounds what one host may take to report its services, so
// one unreachable host does not hold up the whole status.
const statusTimeout = 15 * time.Second

// Status reports every VM's power state from vCenter, the services of the
// hosts that are on, and whether the API server answers.
func (l *Lab) Status(ctx context.Context) (lab.Status, error) {
	st := lab.Status{Info: l.Info()}
	props, err := retrieve(ctx, l.client.Client, l.fleet)
	if err != nil {
		return st, fmt.Errorf("status of lab %s: %w", l.cfg.Name, err)
	}
	allOn := true
	st.Hosts = make([]lab.HostStatus, len(l.hosts))
	done := make(chan struct{})
	for i, h := range l.hosts {
		hs := lab.HostStatus{Name: h.Name(), Roles: h.Roles(), Address: h.Address()}
		switch props[i].Runtime.PowerState {
		case types.VirtualMachinePowerStatePoweredOn:
			hs.Power = "on"
		case types.VirtualMachinePowerStatePoweredOff:
			hs.Power = "off"
		default:
			hs.Power = "unknown"
			hs.Detail = fmt.Sprintf("VM %s is %s", h.vm.vm.InventoryPath, props[i].Runtime.PowerState)
		}
		if hs.Power != "on" {
			allOn = false
		}
		go func() {
			defer func() { done <- struct{}{} }()
			if hs.Power == "on" {
				sctx, cancel := context.WithTimeout(ctx, statusTimeout)
				defer cancel()
				svc, err := h.Services(sctx)
				if err != nil {
					hs.Detail = err.Error()
				}
				hs.Services = svc
			}
			st.Hosts[i] = hs
		}()
	}
	for range l.hosts {
		<-done
	}
	if allOn {
		cs, err := kubeClient(kubeconfigPath(l.cfg))
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout)
			err = apiServerReady(rctx, cs)
			cancel()
		}
		st.Up = err == nil
	}
	return st, nil
}
