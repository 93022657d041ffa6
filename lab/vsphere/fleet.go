package vsphere

import (
	"context"
	"errors"
	"fmt"

	"github.com/vmware/govmomi/fault"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline/faultline/lab"
)

// fleetVM is one host of the lab and the VM it runs in.
type fleetVM struct {
	host lab.HostConfig
	// field is the host's vm field in the lab file, for errors.
	field string
	vm    *object.VirtualMachine
	// labHost reaches the guest; set by Open.
	labHost *host
}

func (v *fleetVM) String() string {
	return fmt.Sprintf("%s (VM %s)", v.host.Name, v.vm.InventoryPath)
}

// findFleet resolves every host's vm field (an inventory path or a name)
// to exactly one VM. Every problem is reported, each naming the host and
// the field, before anything is touched.
func findFleet(ctx context.Context, c *vim25.Client, cfg *lab.Config) ([]*fleetVM, error) {
	finder := find.NewFinder(c, true)
	if sectionOf(cfg).Datacenter != "" {
		dc, err := finder.Datacenter(ctx, sectionOf(cfg).Datacenter)
		if err != nil {
			return nil, fmt.Errorf("vsphere.datacenter %q: %w", sectionOf(cfg).Datacenter, err)
		}
		finder.SetDatacenter(dc)
	} else {
		dc, err := finder.DefaultDatacenter(ctx)
		if err != nil {
			return nil, fmt.Errorf("choosing the datacenter (set vsphere.datacenter): %w", err)
		}
		finder.SetDatacenter(dc)
	}
	var (
		fleet []*fleetVM
		errs  []error
		seen  = map[types.ManagedObjectReference]string{}
	)
	for i, h := range cfg.Hosts {
		field := fmt.Sprintf("hosts[%d].vm", i)
		vm, err := finder.VirtualMachine(ctx, h.VM)
		if err != nil {
			var notFound *find.NotFoundError
			var many *find.MultipleFoundError
			switch {
			case errors.As(err, &notFound):
				errs = append(errs, fmt.Errorf("host %s: %s %q: no such VM in vCenter", h.Name, field, h.VM))
			case errors.As(err, &many):
				errs = append(errs, fmt.Errorf("host %s: %s %q names more than one VM; give its inventory path", h.Name, field, h.VM))
			default:
				errs = append(errs, fmt.Errorf("host %s: finding %s %q: %w", h.Name, field, h.VM, err))
			}
			continue
		}
		if other, dup := seen[vm.Reference()]; dup {
			errs = append(errs, fmt.Errorf("host %s: %s %q is the same VM as host %s's", h.Name, field, h.VM, other))
			continue
		}
		seen[vm.Reference()] = h.Name
		fleet = append(fleet, &fleetVM{host: h, field: field, vm: vm})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return fleet, nil
}

// vmProperties are what the lab reads of every VM.
var vmProperties = []string{"name", "runtime.powerState", "snapshot", "guest.toolsStatus", "guest.toolsRunningStatus"}

// retrieve reads vmProperties of every VM in one round trip, in fleet order.
func retrieve(ctx context.Context, c *vim25.Client, fleet []*fleetVM) ([]mo.VirtualMachine, error) {
	refs := make([]types.ManagedObjectReference, len(fleet))
	for i, v := range fleet {
		refs[i] = v.vm.Reference()
	}
	var got []mo.VirtualMachine
	if err := property.DefaultCollector(c).Retrieve(ctx, refs, vmProperties, &got); err != nil {
		return nil, fmt.Errorf("reading the fleet's VMs: %w", err)
	}
	byRef := make(map[types.ManagedObjectReference]mo.VirtualMachine, len(got))
	for _, m := range got {
		byRef[m.Reference()] = m
	}
	out := make([]mo.VirtualMachine, len(fleet))
	for i, v := range fleet {
		m, ok := byRef[v.vm.Reference()]
		if !ok {
			return nil, fmt.Errorf("reading the fleet's VMs: %s is gone", v)
		}
		out[i] = m
	}
	return out, nil
}

// powerOff is a hard power off (PowerOffVM_Task): no guest shutdown, as a
// crash would be. A VM that is already off is left as it is.
func (v *fleetVM) powerOff(ctx context.Context) error {
	task, err := v.vm.PowerOff(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil && !alreadyIn(err, types.VirtualMachinePowerStatePoweredOff) {
		return fmt.Errorf("powering off %s: %w", v, err)
	}
	return nil
}

// powerOn starts the VM. A VM that is already on is left as it is.
func (v *fleetVM) powerOn(ctx context.Context) error {
	task, err := v.vm.PowerOn(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil && !alreadyIn(err, types.VirtualMachinePowerStatePoweredOn) {
		return fmt.Errorf("powering on %s: %w", v, err)
	}
	return nil
}

// alreadyIn says whether err is vCenter refusing a power change because the
// VM is already in state.
func alreadyIn(err error, state types.VirtualMachinePowerState) bool {
	var already bool
	fault.In(err, func(f types.BaseMethodFault, _ string, _ []types.LocalizableMessage) bool {
		if ips, ok := f.(*types.InvalidPowerState); ok && ips.ExistingState == state {
			already = true
			return true
		}
		return false
	})
	return already
}
