package vsphere

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline/faultline/lab/guard"
)

// ColdSnapshot powers the whole fleet off and takes vsphere.coldSnapshot on
// every VM (no memory, no quiescing), then leaves the fleet off; `faultline
// lab reset` boots it from the new snapshot.
//
// Guests whose VMware Tools run are shut down cleanly first, and only
// powered off hard if they do not stop within the shutdown wait: a clean
// shutdown lets etcd and the filesystems write out what they hold, so
// every reset starts from disks that need no crash recovery, and every
// reset starts from the same state. Guests without tools are powered off
// hard. The shutdown goes in the reverse of the boot order (workers,
// control plane, etcd), so the API servers still reach etcd while the
// kubelets stop.
//
// With replace false an existing snapshot of that name is an error; with
// replace true the old snapshot is removed once the new one is taken on
// every VM. Nothing is snapshotted while any VM is still powered on.
func (l *Lab) ColdSnapshot(ctx context.Context, replace bool) error {
	if err := guard.CheckConfig(l.cfg); err != nil {
		return fmt.Errorf("taking the cold snapshot of lab %s: %w", l.cfg.Name, err)
	}
	name := sectionOf(l.cfg).ColdSnapshot
	c := l.client.Client
	props, err := retrieve(ctx, c, l.fleet)
	if err != nil {
		return fmt.Errorf("taking the cold snapshot of lab %s: %w", l.cfg.Name, err)
	}
	old := make([][]types.VirtualMachineSnapshotTree, len(l.fleet))
	var have []int
	for i := range l.fleet {
		old[i] = snapshotsNamed(snapshotTree(props[i]), name)
		if len(old[i]) > 0 {
			have = append(have, i)
		}
	}
	if len(have) > 0 && !replace {
		return fmt.Errorf("taking the cold snapshot of lab %s: snapshot %q already exists on %s; replace it explicitly", l.cfg.Name, name, describeHosts(l.fleet, have))
	}

	if err := l.powerDownFleet(ctx); err != nil {
		return fmt.Errorf("taking the cold snapshot of lab %s: %w", l.cfg.Name, err)
	}
	if err := l.requireFleetOff(ctx, "before the snapshot"); err != nil {
		return fmt.Errorf("taking the cold snapshot of lab %s: %w", l.cfg.Name, err)
	}
	description := fmt.Sprintf("cold snapshot of lab %s: all %d VMs powered off; taken %s", l.cfg.Name, len(l.fleet), time.Now().UTC().Format(time.RFC3339))
	for _, v := range l.fleet {
		task, err := v.vm.CreateSnapshot(ctx, name, description, false, false)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			return fmt.Errorf("taking the cold snapshot of lab %s: snapshot %q of %s: %w", l.cfg.Name, name, v, err)
		}
	}
	// Someone may have powered a VM on while the snapshots were taken.
	if err := l.requireFleetOff(ctx, "after the snapshot"); err != nil {
		return fmt.Errorf("taking the cold snapshot of lab %s: the new snapshots are not cold: %w", l.cfg.Name, err)
	}

	for _, i := range have {
		for _, s := range old[i] {
			if err := removeSnapshot(ctx, l.fleet[i].vm, s.Snapshot); err != nil {
				return fmt.Errorf("taking the cold snapshot of lab %s: removing the old snapshot %q of %s: %w", l.cfg.Name, name, l.fleet[i], err)
			}
		}
	}

	// What Reset will check, checked now: a snapshot it would refuse is
	// better found while the user is at hand.
	props, err = retrieve(ctx, c, l.fleet)
	if err != nil {
		return fmt.Errorf("taking the cold snapshot of lab %s: %w", l.cfg.Name, err)
	}
	snaps, err := coldSnapshots(l.fleet, props, name)
	if err == nil {
		err = checkFleetWasOff(ctx, c, l.fleet, snaps)
	}
	if err != nil {
		return fmt.Errorf("taking the cold snapshot of lab %s: the new snapshot would be refused by reset: %w", l.cfg.Name, err)
	}
	return nil
}

func removeSnapshot(ctx context.Context, vm *object.VirtualMachine, snapshot types.ManagedObjectReference) error {
	res, err := methods.RemoveSnapshot_Task(ctx, vm.Client(), &types.RemoveSnapshot_Task{
		This:           snapshot,
		RemoveChildren: false,
		Consolidate:    types.NewBool(true),
	})
	if err != nil {
		return err
	}
	return object.NewTask(vm.Client(), res.Returnval).Wait(ctx)
}

// powerDownFleet stops every running VM, group by group in the reverse of
// the boot order: guest shutdown where tools run, hard power off otherwise
// or when the guest does not stop in time.
func (l *Lab) powerDownFleet(ctx context.Context) error {
	groups := bootGroups(l.fleet)
	slices.Reverse(groups)
	for _, g := range groups {
		props, err := retrieve(ctx, l.client.Client, g.vms)
		if err != nil {
			return err
		}
		var shutdown []*fleetVM
		for i, v := range g.vms {
			if props[i].Runtime.PowerState == types.VirtualMachinePowerStatePoweredOff {
				continue
			}
			if toolsRunning(props[i]) && props[i].Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn {
				if err := v.vm.ShutdownGuest(ctx); err == nil {
					shutdown = append(shutdown, v)
					continue
				}
				// A guest that refuses the shutdown is powered off hard below.
			}
			if err := v.labHost.PowerOff(ctx); err != nil {
				return err
			}
		}
		if len(shutdown) == 0 {
			continue
		}
		// Guests that do not stop in time are cut; for the others the hard
		// power off finds them off and only drops the host's connection.
		_ = l.waitOff(ctx, shutdown, l.opts.shutdownWait)
		if err := forEach(ctx, shutdown, powerOffHost); err != nil {
			return err
		}
	}
	return nil
}

func toolsRunning(m mo.VirtualMachine) bool {
	return m.Guest != nil && m.Guest.ToolsRunningStatus == string(types.VirtualMachineToolsRunningStatusGuestToolsRunning)
}

// waitOff waits until every VM of vms is powered off.
func (l *Lab) waitOff(ctx context.Context, vms []*fleetVM, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		props, err := retrieve(ctx, l.client.Client, vms)
		if err != nil {
			return err
		}
		on := 0
		for _, m := range props {
			if m.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
				on++
			}
		}
		if on == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d VMs still running: %w", on, ctx.Err())
		case <-time.After(l.opts.pollInterval):
		}
	}
}

// requireFleetOff reads every VM's power state from vCenter and fails,
// naming them, if any VM is not powered off.
func (l *Lab) requireFleetOff(ctx context.Context, when string) error {
	props, err := retrieve(ctx, l.client.Client, l.fleet)
	if err != nil {
		return err
	}
	var on []string
	for i, m := range props {
		if m.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
			on = append(on, fmt.Sprintf("%s is %s", l.fleet[i], m.Runtime.PowerState))
		}
	}
	if len(on) > 0 {
		return errors.New("not every VM is powered off " + when + ": " + strings.Join(on, "; "))
	}
	return nil
}
