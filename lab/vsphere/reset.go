package vsphere

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/guard"
)

// bootOrder is the order the fleet is powered on in: etcd first so the API
// servers find a quorum, then the control plane so the kubelets find an API
// server, then the workers.
var bootOrder = []lab.Role{lab.RoleEtcd, lab.RoleControlPlane, lab.RoleWorker}

// bootGroup is the VMs powered on together and waited on together.
type bootGroup struct {
	role lab.Role
	vms  []*fleetVM
}

// bootGroups splits the fleet by bootOrder; a host with several roles
// boots with the earliest of them.
func bootGroups(fleet []*fleetVM) []bootGroup {
	placed := map[*fleetVM]bool{}
	var groups []bootGroup
	for _, r := range bootOrder {
		g := bootGroup{role: r}
		for _, v := range fleet {
			if !placed[v] && hasRole(v.host.Roles, r) {
				g.vms = append(g.vms, v)
				placed[v] = true
			}
		}
		if len(g.vms) > 0 {
			groups = append(groups, g)
		}
	}
	return groups
}

func hasRole(roles []lab.Role, r lab.Role) bool {
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}

// Reset puts the fleet back to its cold snapshot: it checks the snapshot
// on every VM first (nothing is touched if one is missing or was not taken
// cold), powers every VM off hard, reverts every VM, and boots the fleet
// group by group, each group waited on (guest up, hosts reachable, cluster
// answering) before the next is powered on.
func (l *Lab) Reset(ctx context.Context) error {
	// Reverting every VM destroys whatever the fleet holds.
	if err := guard.CheckConfig(l.cfg); err != nil {
		return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
	}
	if l.opts.checkKubeconfig {
		// A kubeconfig that cannot be loaded would only fail after every
		// VM was reverted; find it out before.
		if _, err := kubeClient(kubeconfigPath(l.cfg)); err != nil {
			return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
		}
	}
	c := l.client.Client
	props, err := retrieve(ctx, c, l.fleet)
	if err != nil {
		return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
	}
	snaps, err := coldSnapshots(l.fleet, props, sectionOf(l.cfg).ColdSnapshot)
	if err != nil {
		return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
	}
	if err := checkFleetWasOff(ctx, c, l.fleet, snaps); err != nil {
		return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
	}

	if err := forEach(ctx, l.fleet, powerOffHost); err != nil {
		return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
	}
	snapshotOf := make(map[*fleetVM]types.ManagedObjectReference, len(l.fleet))
	for i, v := range l.fleet {
		snapshotOf[v] = snaps[i].Snapshot
	}
	err = forEach(ctx, l.fleet, func(ctx context.Context, v *fleetVM) error {
		return v.revert(ctx, snapshotOf[v], sectionOf(l.cfg).ColdSnapshot)
	})
	if err != nil {
		return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
	}
	if err := l.checkReverted(ctx, snapshotOf); err != nil {
		return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
	}

	for _, g := range bootGroups(l.fleet) {
		if err := l.boot(ctx, g); err != nil {
			return fmt.Errorf("resetting lab %s: %w", l.cfg.Name, err)
		}
	}
	return nil
}

// revert reverts the VM to snapshot and leaves it powered off whatever the
// snapshot holds.
func (v *fleetVM) revert(ctx context.Context, snapshot types.ManagedObjectReference, name string) error {
	res, err := methods.RevertToSnapshot_Task(ctx, v.vm.Client(), &types.RevertToSnapshot_Task{
		This:            snapshot,
		SuppressPowerOn: types.NewBool(true),
	})
	if err == nil {
		err = object.NewTask(v.vm.Client(), res.Returnval).Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("reverting %s to snapshot %q: %w", v, name, err)
	}
	return nil
}

// checkReverted reads back from vCenter that every VM's current snapshot is
// its cold one and that every VM is off, rather than trusting the tasks.
func (l *Lab) checkReverted(ctx context.Context, snapshotOf map[*fleetVM]types.ManagedObjectReference) error {
	props, err := retrieve(ctx, l.client.Client, l.fleet)
	if err != nil {
		return err
	}
	var errs []error
	for i, v := range l.fleet {
		m := props[i]
		if m.Snapshot == nil || m.Snapshot.CurrentSnapshot == nil || *m.Snapshot.CurrentSnapshot != snapshotOf[v] {
			errs = append(errs, fmt.Errorf("%s: current snapshot is not %q after the revert", v, sectionOf(l.cfg).ColdSnapshot))
		}
		if m.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
			errs = append(errs, fmt.Errorf("%s is %s after the revert, not powered off", v, m.Runtime.PowerState))
		}
	}
	return errors.Join(errs...)
}

// boot powers on one group and waits for it: the guests, then every host
// answering commands, then the cluster answering as it should with this
// group up.
func (l *Lab) boot(ctx context.Context, g bootGroup) error {
	if err := forEach(ctx, g.vms, powerOnVM); err != nil {
		return fmt.Errorf("booting the %s hosts: %w", g.role, err)
	}
	if err := l.waitGuests(ctx, g.vms); err != nil {
		return fmt.Errorf("booting the %s hosts: %w", g.role, err)
	}
	reachCtx, cancel := context.WithTimeout(ctx, l.opts.bootTimeout)
	defer cancel()
	err := forEach(reachCtx, g.vms, func(ctx context.Context, v *fleetVM) error {
		if err := v.labHost.RemoteHost.WaitReachable(ctx); err != nil {
			return fmt.Errorf("waiting for %s to answer: %w", v, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("booting the %s hosts: %w", g.role, err)
	}
	clusterCtx, cancel := context.WithTimeout(ctx, l.opts.bootTimeout)
	defer cancel()
	if err := l.opts.clusterCheck(clusterCtx, g.role); err != nil {
		return fmt.Errorf("booting the %s hosts: waiting for the cluster: %w", g.role, err)
	}
	return nil
}

// waitGuests waits until vCenter reports every VM powered on and, where
// VMware Tools are installed, the tools running (the guest OS has booted).
// A VM without tools has only its power state to go by; the SSH wait that
// follows is what shows its guest is up.
func (l *Lab) waitGuests(ctx context.Context, vms []*fleetVM) error {
	var pending []string
	err := lab.WaitFor(ctx, "the guests to boot", l.opts.bootTimeout, l.opts.pollInterval, func(ctx context.Context) (bool, error) {
		props, err := retrieve(ctx, l.client.Client, vms)
		if err != nil {
			return false, err
		}
		pending = pending[:0]
		for i, m := range props {
			switch {
			case m.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn:
				pending = append(pending, fmt.Sprintf("%s is %s", vms[i], m.Runtime.PowerState))
			case m.Guest != nil && m.Guest.ToolsStatus != "" && m.Guest.ToolsStatus != types.VirtualMachineToolsStatusToolsNotInstalled &&
				m.Guest.ToolsRunningStatus != string(types.VirtualMachineToolsRunningStatusGuestToolsRunning):
				pending = append(pending, fmt.Sprintf("%s: VMware Tools not running yet", vms[i]))
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil && len(pending) > 0 {
		return fmt.Errorf("%w: %s", err, strings.Join(pending, "; "))
	}
	return err
}
