package vsphere

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

func TestPowerOffIsHardAndPowerOnWaitsForTheHost(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	l, j, _ := f.openSim(ctx, f.config())
	h, err := l.Host("worker1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Host("worker9"); err == nil || !strings.Contains(err.Error(), `no host "worker9"`) {
		t.Errorf("Host(worker9) = %v, want an error naming it", err)
	}

	since := f.lastEventKey(ctx)
	if err := h.PowerOn(ctx); err != nil {
		t.Fatalf("PowerOn: %v", err)
	}
	if s := f.powerStates(ctx)["worker1"]; s != types.VirtualMachinePowerStatePoweredOn {
		t.Fatalf("after PowerOn worker1 is %s", s)
	}
	if !slices.Contains(j.list(), "reachable worker1") {
		t.Errorf("PowerOn did not wait for worker1 to answer: %v", j.list())
	}
	if err := h.PowerOn(ctx); err != nil {
		t.Errorf("PowerOn of a running VM: %v", err)
	}

	if err := h.PowerOff(ctx); err != nil {
		t.Fatalf("PowerOff: %v", err)
	}
	if s := f.powerStates(ctx)["worker1"]; s != types.VirtualMachinePowerStatePoweredOff {
		t.Fatalf("after PowerOff worker1 is %s", s)
	}
	var seen []string
	for _, e := range f.powerEvents(ctx) {
		if e.GetEvent().Key > since && f.hostOf[e.GetEvent().Vm.Vm] != "" {
			seen = append(seen, strings.TrimPrefix(strings.TrimPrefix(typeName(e), "*types."), "Vm")+" "+f.hostOf[e.GetEvent().Vm.Vm])
		}
	}
	want := []string{"PoweredOnEvent worker1", "PoweredOffEvent worker1"}
	if !slices.Equal(seen, want) {
		t.Errorf("vCenter recorded %v, want %v (a hard power off, no guest shutdown, no other VM)", seen, want)
	}
	if err := h.PowerOff(ctx); err != nil {
		t.Errorf("PowerOff of a VM that is off: %v", err)
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

func TestColdSnapshotShutsDownGuestsWithToolsAndRefusesToOverwrite(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	l, _, _ := f.openSim(ctx, f.config())
	for _, h := range fleetHosts {
		f.powerOn(ctx, h.name)
	}
	// cp1's guest runs VMware Tools: it gets a clean shutdown.
	f.setToolsRunning(ctx, "cp1")

	since := f.lastEventKey(ctx)
	if err := l.ColdSnapshot(ctx, false); err != nil {
		t.Fatalf("ColdSnapshot: %v", err)
	}
	var shutdowns, offs []string
	for _, e := range f.powerEvents(ctx) {
		if e.GetEvent().Key <= since {
			continue
		}
		switch e.(type) {
		case *types.VmGuestShutdownEvent:
			shutdowns = append(shutdowns, f.hostOf[e.GetEvent().Vm.Vm])
		case *types.VmPoweredOffEvent:
			offs = append(offs, f.hostOf[e.GetEvent().Vm.Vm])
		}
	}
	if !slices.Equal(shutdowns, []string{"cp1"}) {
		t.Errorf("guest shutdowns: %v, want only cp1's", shutdowns)
	}
	if len(offs) != len(fleetHosts) {
		t.Errorf("%d VMs powered off, want %d: %v", len(offs), len(fleetHosts), offs)
	}
	// Workers stop first, etcd last.
	last := map[string]int{}
	for i, h := range offs {
		last[h] = i
	}
	if last["worker1"] > last["cp2"] || last["cp2"] > last["etcd1"] {
		t.Errorf("power-off order %v is not workers, control plane, etcd", offs)
	}

	first := f.vmProps(ctx, "etcd3")
	firstRef := snapshotsNamed(snapshotTree(first), "cold")[0].Snapshot
	err := l.ColdSnapshot(ctx, false)
	if err == nil || !strings.Contains(err.Error(), `snapshot "cold" already exists on etcd1 (VM /DC0/vm/etcd1)`) {
		t.Fatalf("second ColdSnapshot without replace: %v, want a refusal naming the VMs", err)
	}
	if err := l.ColdSnapshot(ctx, true); err != nil {
		t.Fatalf("ColdSnapshot with replace: %v", err)
	}
	for _, h := range fleetHosts {
		snaps := snapshotsNamed(snapshotTree(f.vmProps(ctx, h.name)), "cold")
		if len(snaps) != 1 {
			t.Fatalf("%s has %d snapshots called cold after replace, want 1", h.name, len(snaps))
		}
		if h.name == "etcd3" && snaps[0].Snapshot == firstRef {
			t.Errorf("etcd3 kept its old cold snapshot")
		}
	}
}

// setToolsRunning makes the simulator report VMware Tools running in the
// VM's guest, as a booted guest with tools would.
func (f *simFleet) setToolsRunning(ctx context.Context, host string) {
	f.t.Helper()
	m := f.model.Service.Context.Map
	vm := m.Get(f.vms[host].Reference()).(*simulator.VirtualMachine)
	m.WithLock(f.model.Service.Context, vm, func() {
		vm.Guest.ToolsStatus = types.VirtualMachineToolsStatusToolsOk
		vm.Guest.ToolsRunningStatus = string(types.VirtualMachineToolsRunningStatusGuestToolsRunning)
	})
}
