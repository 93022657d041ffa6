package vsphere

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

// snapshotsNamed returns every snapshot called name in a VM's snapshot tree.
func snapshotsNamed(tree []types.VirtualMachineSnapshotTree, name string) []types.VirtualMachineSnapshotTree {
	var out []types.VirtualMachineSnapshotTree
	for _, s := range tree {
		if s.Name == name {
			out = append(out, s)
		}
		out = append(out, snapshotsNamed(s.ChildSnapshotList, name)...)
	}
	return out
}

func snapshotTree(m mo.VirtualMachine) []types.VirtualMachineSnapshotTree {
	if m.Snapshot == nil {
		return nil
	}
	return m.Snapshot.RootSnapshotList
}

// coldSnapshots finds, for every VM, its one snapshot called name, and
// refuses any that is not cold. A snapshot whose tree state is not
// poweredOff holds the guest's memory: reverting to it resumes a running
// VM at the moment it was taken, which is exactly the per-VM moment a cold
// snapshot exists to avoid. Every problem is reported, each naming the host,
// its VM and the snapshot.
func coldSnapshots(fleet []*fleetVM, props []mo.VirtualMachine, name string) ([]types.VirtualMachineSnapshotTree, error) {
	var (
		out  = make([]types.VirtualMachineSnapshotTree, len(fleet))
		errs []error
	)
	for i, v := range fleet {
		found := snapshotsNamed(snapshotTree(props[i]), name)
		switch {
		case len(found) == 0:
			errs = append(errs, fmt.Errorf("%s has no snapshot %q (vsphere.coldSnapshot); take it with `faultline lab snapshot --cold`", v, name))
		case len(found) > 1:
			errs = append(errs, fmt.Errorf("%s has %d snapshots called %q (vsphere.coldSnapshot); keep exactly one", v, len(found), name))
		case found[0].State != types.VirtualMachinePowerStatePoweredOff:
			errs = append(errs, fmt.Errorf("%s: snapshot %q was taken %s, not with the VM powered off; refusing to revert to it (take a cold one with `faultline lab snapshot --cold`)", v, name, found[0].State))
		default:
			out[i] = found[0]
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("the cold snapshot is not usable: %w", errors.Join(errs...))
	}
	return out, nil
}

// powerEvents are the events that change whether a guest runs. The
// power-on subtypes are named too: an event filter names exact types.
var powerEvents = []string{"VmPoweredOnEvent", "DrsVmPoweredOnEvent", "VmRestartedOnAlternateHostEvent", "VmPoweredOffEvent", "VmSuspendedEvent"}

func isPowerOn(e types.BaseEvent) bool {
	switch e.(type) {
	case *types.VmPoweredOnEvent, *types.DrsVmPoweredOnEvent, *types.VmRestartedOnAlternateHostEvent:
		return true
	}
	return false
}

// checkFleetWasOff looks at vCenter's event history for evidence that the
// fleet was not all powered off while its cold snapshots were taken. A
// snapshot taken without memory of a running VM has tree state poweredOff
// too, so the tree alone cannot tell a crash-consistent live snapshot from
// a cold one; the power events can. It refuses when a VM's last power event
// before the first snapshot is a power-on, or when any VM was powered on
// between the first and the last snapshot. Where vCenter has no power
// events left for a VM (they expire), there is no evidence either way and
// the snapshot tree's state is all that is checked.
func checkFleetWasOff(ctx context.Context, c *vim25.Client, fleet []*fleetVM, snaps []types.VirtualMachineSnapshotTree) error {
	first, last := snaps[0].CreateTime, snaps[0].CreateTime
	for _, s := range snaps[1:] {
		if s.CreateTime.Before(first) {
			first = s.CreateTime
		}
		if s.CreateTime.After(last) {
			last = s.CreateTime
		}
	}
	var errs []error
	for i, v := range fleet {
		found, err := powerEventsUntil(ctx, c, v.vm.Reference(), last)
		if err != nil {
			return fmt.Errorf("reading the power events of %s: %w", v, err)
		}
		var before types.BaseEvent
		for _, e := range found {
			t := e.GetEvent().CreatedTime
			if !t.After(first) {
				before = e
				continue
			}
			if isPowerOn(e) {
				errs = append(errs, fmt.Errorf("%s was powered on at %s, between the first (%s) and the last (%s) %q snapshot of the fleet", v, t.UTC().Format(time.RFC3339), first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339), snaps[i].Name))
				break
			}
		}
		if before != nil && isPowerOn(before) {
			errs = append(errs, fmt.Errorf("%s was running when the fleet's %q snapshots were taken (powered on at %s, no power off before %s)", v, snaps[i].Name, before.GetEvent().CreatedTime.UTC().Format(time.RFC3339), first.UTC().Format(time.RFC3339)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the cold snapshot was not taken with the whole fleet powered off; refusing to revert to it: %w", errors.Join(errs...))
	}
	return nil
}

// describeHosts names the hosts of fleet at the given indexes, for errors.
func describeHosts(fleet []*fleetVM, idx []int) string {
	names := make([]string, len(idx))
	for i, j := range idx {
		names[i] = fleet[j].String()
	}
	return strings.Join(names, ", ")
}

// maxEvents is the most events vCenter returns from one query.
const maxEvents = 1000

// powerEventsUntil returns the VM's power events up to end, oldest first.
func powerEventsUntil(ctx context.Context, c *vim25.Client, vm types.ManagedObjectReference, end time.Time) ([]types.BaseEvent, error) {
	found, err := event.NewManager(c).QueryEvents(ctx, types.EventFilterSpec{
		Entity:      &types.EventFilterSpecByEntity{Entity: vm, Recursion: types.EventFilterSpecRecursionOptionSelf},
		Time:        &types.EventFilterSpecByTime{EndTime: &end},
		EventTypeId: powerEvents,
		MaxCount:    maxEvents,
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(found, func(a, b int) bool {
		ea, eb := found[a].GetEvent(), found[b].GetEvent()
		if !ea.CreatedTime.Equal(eb.CreatedTime) {
			return ea.CreatedTime.Before(eb.CreatedTime)
		}
		return ea.Key < eb.Key
	})
	return found, nil
}
