package vsphere

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vapi/rest"
	"github.com/vmware/govmomi/vapi/vm/dataset"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline/faultline/lab"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// currentSnapshotName is the name of the VM's current snapshot, read with
// the admin session.
func currentSnapshotName(m mo.VirtualMachine) string {
	if m.Snapshot == nil || m.Snapshot.CurrentSnapshot == nil {
		return ""
	}
	var walk func([]types.VirtualMachineSnapshotTree) string
	walk = func(tree []types.VirtualMachineSnapshotTree) string {
		for _, s := range tree {
			if s.Snapshot == *m.Snapshot.CurrentSnapshot {
				return s.Name
			}
			if n := walk(s.ChildSnapshotList); n != "" {
				return n
			}
		}
		return ""
	}
	return walk(m.Snapshot.RootSnapshotList)
}

func hostsWithRole(r lab.Role) []string {
	var out []string
	for _, h := range fleetHosts {
		if h.role == r {
			out = append(out, h.name)
		}
	}
	return out
}

func TestColdSnapshotThenResetRevertsAndBootsInOrder(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	l, j, onAtCheck := f.openSim(ctx, f.config())

	if got := l.Info().ResetKind; got != lab.ResetColdSnapshot {
		t.Errorf("Info().ResetKind = %q, want %q", got, lab.ResetColdSnapshot)
	}

	// State the snapshot must capture: a data set entry on etcd1.
	rc := rest.NewClient(f.admin.Client)
	if err := rc.Login(ctx, url.UserPassword(simUser, simPassword)); err != nil {
		t.Fatalf("vAPI login: %v", err)
	}
	datasets := dataset.NewManager(rc)
	etcd1 := f.vms["etcd1"].Reference().Value
	// Data sets need hardware version 20.
	task, err := f.vms["etcd1"].UpgradeVM(ctx, "vmx-20")
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("upgrading etcd1's hardware: %v", err)
	}
	dsID, err := datasets.CreateDataSet(ctx, etcd1, &dataset.CreateSpec{
		Name: "org.faultline.test", Description: "reset test", Host: dataset.AccessReadWrite, Guest: dataset.AccessReadWrite,
	})
	if err != nil {
		t.Fatalf("creating a data set on etcd1: %v", err)
	}
	if err := datasets.SetEntry(ctx, etcd1, dsID, "generation", "cold"); err != nil {
		t.Fatal(err)
	}

	// The fleet runs, as it would when the user takes the snapshot.
	for _, h := range fleetHosts {
		f.powerOn(ctx, h.name)
	}
	if err := l.ColdSnapshot(ctx, false); err != nil {
		t.Fatalf("ColdSnapshot: %v", err)
	}
	for h, s := range f.powerStates(ctx) {
		if s != types.VirtualMachinePowerStatePoweredOff {
			t.Errorf("after ColdSnapshot %s is %s, want poweredOff", h, s)
		}
	}
	coldRef := map[string]types.ManagedObjectReference{}
	for _, h := range fleetHosts {
		m := f.vmProps(ctx, h.name)
		snaps := snapshotsNamed(snapshotTree(m), "cold")
		if len(snaps) != 1 {
			t.Fatalf("%s has %d snapshots called cold, want 1", h.name, len(snaps))
		}
		if snaps[0].State != types.VirtualMachinePowerStatePoweredOff {
			t.Errorf("%s: cold snapshot state %s, want poweredOff", h.name, snaps[0].State)
		}
		coldRef[h.name] = snaps[0].Snapshot
	}

	// Faults after the snapshot: data changed, a VM running, a newer
	// snapshot on cp2 that became its current one.
	if err := datasets.SetEntry(ctx, etcd1, dsID, "generation", "faulted"); err != nil {
		t.Fatal(err)
	}
	f.powerOn(ctx, "worker2")
	task, err = f.vms["cp2"].CreateSnapshot(ctx, "after-fault", "", false, false)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := currentSnapshotName(f.vmProps(ctx, "cp2")); got != "after-fault" {
		t.Fatalf("cp2's current snapshot is %q before the reset, want after-fault", got)
	}

	since := f.lastEventKey(ctx)
	if err := l.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}

	for h, s := range f.powerStates(ctx) {
		if s != types.VirtualMachinePowerStatePoweredOn {
			t.Errorf("after Reset %s is %s, want poweredOn", h, s)
		}
	}
	for _, h := range fleetHosts {
		m := f.vmProps(ctx, h.name)
		if m.Snapshot == nil || m.Snapshot.CurrentSnapshot == nil || *m.Snapshot.CurrentSnapshot != coldRef[h.name] {
			t.Errorf("after Reset %s's current snapshot is %q, want the cold one", h.name, currentSnapshotName(m))
		}
	}
	if got, err := datasets.GetEntry(ctx, etcd1, dsID, "generation"); err != nil || got != "cold" {
		t.Errorf("etcd1 data set entry after Reset = %q (%v), want %q", got, err, "cold")
	}

	// The order vCenter recorded, not what the code says it did.
	order := f.poweredOnSince(ctx, since)
	if len(order) != len(fleetHosts) {
		t.Fatalf("vCenter recorded %d power-ons during Reset (%v), want %d", len(order), order, len(fleetHosts))
	}
	groupOf := map[string]int{}
	for i, r := range wantBootOrder {
		for _, h := range hostsWithRole(r) {
			groupOf[h] = i
		}
	}
	for i := 1; i < len(order); i++ {
		if groupOf[order[i]] < groupOf[order[i-1]] {
			t.Errorf("power-on order %v: %s came after %s", order, order[i], order[i-1])
		}
	}

	// Each group was waited on before the next was powered on.
	wantOn := []string{}
	for _, r := range wantBootOrder {
		wantOn = append(wantOn, hostsWithRole(r)...)
		slices.Sort(wantOn)
		if got := onAtCheck[r]; !slices.Equal(got, wantOn) {
			t.Errorf("when the cluster was asked after the %s group, powered on: %v, want %v", r, got, wantOn)
		}
	}
	entries := j.list()
	pos := func(s string) int { return slices.Index(entries, s) }
	for gi, r := range wantBootOrder {
		check := pos("cluster " + string(r))
		if check < 0 {
			t.Fatalf("no cluster check after the %s group: %v", r, entries)
		}
		for _, h := range hostsWithRole(r) {
			if p := pos("reachable " + h); p < 0 || p > check {
				t.Errorf("%s was not waited on before the %s cluster check: %v", h, r, entries)
			}
		}
		if gi > 0 && pos("cluster "+string(wantBootOrder[gi-1])) > check {
			t.Errorf("cluster checks out of order: %v", entries)
		}
	}
}

func TestResetRefusesSnapshotTakenPoweredOn(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	l, _, _ := f.openSim(ctx, f.config())
	if err := l.ColdSnapshot(ctx, false); err != nil {
		t.Fatalf("ColdSnapshot: %v", err)
	}
	// cp3's "cold" snapshot is replaced by one taken running, with memory.
	task, err := f.vms["cp3"].RemoveAllSnapshot(ctx, nil)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	f.powerOn(ctx, "cp3")
	task, err = f.vms["cp3"].CreateSnapshot(ctx, "cold", "", true, false)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	f.powerOn(ctx, "worker1")
	before := f.powerStates(ctx)
	since := f.lastEventKey(ctx)

	err = l.Reset(ctx)
	if err == nil {
		t.Fatal("Reset reverted to a snapshot taken powered on")
	}
	for _, want := range []string{"cp3", `"cold"`, "poweredOn"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "etcd1") {
		t.Errorf("error %q blames a host whose snapshot is cold", err)
	}
	assertUntouched(ctx, t, f, before, since)
}

func TestResetRefusesSnapshotOfRunningFleet(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	// A disk-only snapshot of a running VM has tree state poweredOff too;
	// only vCenter's power events show the fleet was running.
	c := f.writeConfig(f.configYAML("live"), simUser, simPassword)
	l, _, _ := f.openSim(ctx, c)
	for _, h := range fleetHosts {
		f.powerOn(ctx, h.name)
	}
	time.Sleep(10 * time.Millisecond) // the power events must predate the snapshots
	for _, h := range fleetHosts {
		task, err := f.vms[h.name].CreateSnapshot(ctx, "live", "", false, false)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	before := f.powerStates(ctx)
	since := f.lastEventKey(ctx)
	err := l.Reset(ctx)
	if err == nil {
		t.Fatal("Reset reverted to snapshots taken while the fleet ran")
	}
	for _, want := range []string{"etcd1", "worker3", "was running", `"live"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	assertUntouched(ctx, t, f, before, since)
}

func TestResetRefusesMissingSnapshot(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	l, _, _ := f.openSim(ctx, f.config())
	f.powerOn(ctx, "etcd2")
	before := f.powerStates(ctx)
	since := f.lastEventKey(ctx)
	err := l.Reset(ctx)
	if err == nil {
		t.Fatal("Reset succeeded without a cold snapshot")
	}
	if !strings.Contains(err.Error(), `worker3 (VM /DC0/vm/worker3) has no snapshot "cold"`) ||
		!strings.Contains(err.Error(), "faultline lab snapshot --cold") {
		t.Errorf("error %q does not name the host, VM and snapshot and the command that takes it", err)
	}
	assertUntouched(ctx, t, f, before, since)
}

// assertUntouched checks with the admin session that no VM changed power
// state and vCenter recorded no power event since the given key.
func assertUntouched(ctx context.Context, t *testing.T, f *simFleet, before map[string]types.VirtualMachinePowerState, since int32) {
	t.Helper()
	after := f.powerStates(ctx)
	for h, s := range before {
		if after[h] != s {
			t.Errorf("%s went from %s to %s though the reset was refused", h, s, after[h])
		}
	}
	for _, e := range f.powerEvents(ctx) {
		if e.GetEvent().Key > since {
			t.Errorf("power event after a refused reset: %T for %s", e, f.hostOf[e.GetEvent().Vm.Vm])
		}
	}
}

// wantBootOrder is written out here, not taken from the code under test.
var wantBootOrder = []lab.Role{lab.RoleEtcd, lab.RoleControlPlane, lab.RoleWorker}

func TestResetRefusesSnapshotsWithAPowerOnBetweenThem(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	l, _, _ := f.openSim(ctx, f.config())
	// Every VM is off when its own snapshot is taken, but cp1 ran for a
	// while between the first and the last: the fleet was never off as one.
	for i, h := range fleetHosts {
		if i == 6 {
			time.Sleep(10 * time.Millisecond)
			f.powerOn(ctx, "cp1")
			f.powerOff(ctx, "cp1")
			time.Sleep(10 * time.Millisecond)
		}
		task, err := f.vms[h.name].CreateSnapshot(ctx, "cold", "", false, false)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	before := f.powerStates(ctx)
	since := f.lastEventKey(ctx)
	err := l.Reset(ctx)
	if err == nil {
		t.Fatal("Reset reverted to snapshots with a power-on between them")
	}
	if !strings.Contains(err.Error(), "cp1 (VM /DC0/vm/fleet/cp1) was powered on at") || !strings.Contains(err.Error(), "between the first") {
		t.Errorf("error %q does not name cp1's power-on between the snapshots", err)
	}
	if strings.Contains(err.Error(), "etcd1") {
		t.Errorf("error %q blames etcd1, which stayed off", err)
	}
	assertUntouched(ctx, t, f, before, since)
}

func TestResetAndColdSnapshotRefuseALabFileNotMarkedLab(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	c := f.writeConfig(strings.Replace(f.configYAML("cold"), "lab: true", "lab: false", 1), simUser, simPassword)
	l, _, _ := f.openSim(ctx, c)
	f.powerOn(ctx, "worker3")
	before := f.powerStates(ctx)
	since := f.lastEventKey(ctx)
	for name, op := range map[string]func(context.Context) error{
		"Reset":        l.Reset,
		"ColdSnapshot": func(ctx context.Context) error { return l.ColdSnapshot(ctx, false) },
	} {
		if err := op(ctx); err == nil || !strings.Contains(err.Error(), "lab: true") {
			t.Errorf("%s on a lab file without lab: true: %v, want a refusal naming it", name, err)
		}
	}
	assertUntouched(ctx, t, f, before, since)
}

func TestResetChecksTheKubeconfigBeforeTouchingVMs(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	c := f.config()
	// The lab's own cluster check, through a kubeconfig that does not exist.
	l, err := Open(ctx, c, WithRemoteHosts(func(hc lab.HostConfig, _ *lab.Config, power Power) (RemoteHost, error) {
		return &fakeRemote{hc: hc, power: power, journal: &journal{}}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	if err := l.ColdSnapshot(ctx, false); err != nil {
		t.Fatal(err)
	}
	f.powerOn(ctx, "etcd5")
	before := f.powerStates(ctx)
	since := f.lastEventKey(ctx)
	err = l.Reset(ctx)
	if err == nil || !strings.Contains(err.Error(), "loading kubeconfig "+c.Kubeconfig) {
		t.Errorf("Reset with a missing kubeconfig: %v, want an error naming it", err)
	}
	assertUntouched(ctx, t, f, before, since)
}
