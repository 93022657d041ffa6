package vsphere

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vmware/govmomi"
	"github.com/vmware/govmomi/event"
	"github.com/vmware/govmomi/find"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/property"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"

	// The vAPI endpoints let a test write VM data sets, state that a
	// snapshot captures and a revert restores.
	_ "github.com/vmware/govmomi/vapi/simulator"
	_ "github.com/vmware/govmomi/vapi/vm/simulator"

	"github.com/faultline/faultline/lab"
)

const (
	simUser     = "fleet-admin@vsphere.local"
	simPassword = "s3cret-Password-never-shown"
)

// fleetHosts is the researcher's 11-VM fleet: host name, role, and whether
// the lab file names the VM by inventory path (the control plane lives in
// a folder) or by bare name.
var fleetHosts = []struct {
	name string
	role lab.Role
	path bool
}{
	{"etcd1", lab.RoleEtcd, false}, {"etcd2", lab.RoleEtcd, false}, {"etcd3", lab.RoleEtcd, false},
	{"etcd4", lab.RoleEtcd, false}, {"etcd5", lab.RoleEtcd, false},
	{"cp1", lab.RoleControlPlane, true}, {"cp2", lab.RoleControlPlane, true}, {"cp3", lab.RoleControlPlane, true},
	{"worker1", lab.RoleWorker, false}, {"worker2", lab.RoleWorker, false}, {"worker3", lab.RoleWorker, false},
}

// simFleet is an in-process vCenter on loopback holding the 11-VM fleet,
// and an administrator's own session to it for arranging faults and
// reading what happened independently of the code under test.
type simFleet struct {
	t       testing.TB
	model   *simulator.Model
	url     *url.URL // without credentials
	admin   *govmomi.Client
	vms     map[string]*object.VirtualMachine // by host name
	hostOf  map[types.ManagedObjectReference]string
	dir     string
	started time.Time
}

func newSimFleet(t testing.TB) *simFleet {
	t.Helper()
	ctx := context.Background()
	m := simulator.VPX()
	m.Machine = 6 // per resource pool: 6 in the cluster + 6 on the standalone host
	if err := m.Create(); err != nil {
		t.Fatalf("creating the simulator inventory: %v", err)
	}
	t.Cleanup(m.Remove)
	m.Service.TLS = new(tls.Config)
	m.Service.RegisterEndpoints = true
	m.Service.Listen = &url.URL{Host: "127.0.0.1:0", User: url.UserPassword(simUser, simPassword)}
	srv := m.Service.NewServer()
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL.Host, "127.0.0.1:") {
		t.Fatalf("simulator listens on %s, not loopback", srv.URL.Host)
	}

	admin, err := govmomi.NewClient(ctx, srv.URL, true)
	if err != nil {
		t.Fatalf("admin login to the simulator: %v", err)
	}
	t.Cleanup(func() { _ = admin.Logout(context.Background()) })

	finder := find.NewFinder(admin.Client, true)
	dc, err := finder.DefaultDatacenter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	finder.SetDatacenter(dc)
	all, err := finder.VirtualMachineList(ctx, "*")
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].InventoryPath < all[j].InventoryPath })
	if len(all) < len(fleetHosts) {
		t.Fatalf("simulator made %d VMs, need %d", len(all), len(fleetHosts))
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cpFolder, err := folders.VmFolder.CreateFolder(ctx, "fleet")
	if err != nil {
		t.Fatal(err)
	}
	f := &simFleet{t: t, model: m, admin: admin, vms: map[string]*object.VirtualMachine{}, hostOf: map[types.ManagedObjectReference]string{}}
	u := *srv.URL
	u.User = nil
	f.url = &u
	for i, h := range fleetHosts {
		vm := all[i]
		if task, err := vm.PowerOff(ctx); err == nil {
			_ = task.Wait(ctx) // already off is fine
		}
		task, err := vm.Rename(ctx, h.name)
		if err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			t.Fatalf("renaming %s to %s: %v", vm.InventoryPath, h.name, err)
		}
		if h.path {
			task, err := cpFolder.MoveInto(ctx, []types.ManagedObjectReference{vm.Reference()})
			if err == nil {
				err = task.Wait(ctx)
			}
			if err != nil {
				t.Fatalf("moving %s into the fleet folder: %v", h.name, err)
			}
		}
		f.vms[h.name] = vm
		f.hostOf[vm.Reference()] = h.name
	}
	f.dir = t.TempDir()
	return f
}

// configYAML is the lab file for the simulated fleet. The addresses are a
// documentation range: nothing is ever sent to them (the SSH step is
// injected).
func (f *simFleet) configYAML(coldSnapshot string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `name: simfleet
kind: vsphere
lab: true
stateDir: %s
kubeconfig: %s
network:
  management: 192.0.2.0/24
  virtualIP: 192.0.2.10
ssh:
  user: ops
  identityFile: %s
  knownHosts: %s
vsphere:
  url: %s
  insecure: true
  datacenter: DC0
  coldSnapshot: %s
  credentialsFile: credentials.yaml
hosts:
`, filepath.Join(f.dir, "state"), filepath.Join(f.dir, "kubeconfig"), filepath.Join(f.dir, "id_ed25519"),
		filepath.Join(f.dir, "known_hosts"), f.url.String(), coldSnapshot)
	for i, h := range fleetHosts {
		vm := h.name
		if h.path {
			vm = "/DC0/vm/fleet/" + h.name
		}
		fmt.Fprintf(&b, "  - {name: %s, roles: [%s], address: 192.0.2.%d, vm: %q}\n", h.name, h.role, 11+i, vm)
	}
	return b.String()
}

// writeConfig writes the lab file and its credentials file and loads it.
func (f *simFleet) writeConfig(yamlText, user, password string) *lab.Config {
	f.t.Helper()
	path := filepath.Join(f.dir, "simfleet.yaml")
	if err := os.WriteFile(path, []byte(yamlText), 0o600); err != nil {
		f.t.Fatal(err)
	}
	cred := fmt.Sprintf("username: %q\npassword: %q\n", user, password)
	if err := os.WriteFile(filepath.Join(f.dir, "credentials.yaml"), []byte(cred), 0o600); err != nil {
		f.t.Fatal(err)
	}
	c, err := lab.LoadConfig(path)
	if err != nil {
		f.t.Fatalf("loading the simulated fleet's lab file: %v", err)
	}
	return c
}

func (f *simFleet) config() *lab.Config {
	return f.writeConfig(f.configYAML("cold"), simUser, simPassword)
}

// powerStates reads every fleet VM's power state through the admin session.
func (f *simFleet) powerStates(ctx context.Context) map[string]types.VirtualMachinePowerState {
	f.t.Helper()
	var refs []types.ManagedObjectReference
	for _, vm := range f.vms {
		refs = append(refs, vm.Reference())
	}
	var got []mo.VirtualMachine
	if err := property.DefaultCollector(f.admin.Client).Retrieve(ctx, refs, []string{"runtime.powerState"}, &got); err != nil {
		f.t.Fatalf("reading power states: %v", err)
	}
	out := map[string]types.VirtualMachinePowerState{}
	for _, m := range got {
		out[f.hostOf[m.Reference()]] = m.Runtime.PowerState
	}
	return out
}

func (f *simFleet) vmProps(ctx context.Context, host string) mo.VirtualMachine {
	f.t.Helper()
	var m mo.VirtualMachine
	if err := f.vms[host].Properties(ctx, f.vms[host].Reference(), []string{"snapshot", "runtime.powerState"}, &m); err != nil {
		f.t.Fatalf("reading %s: %v", host, err)
	}
	return m
}

func (f *simFleet) powerOn(ctx context.Context, host string) {
	f.t.Helper()
	task, err := f.vms[host].PowerOn(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		f.t.Fatalf("powering on %s: %v", host, err)
	}
}

func (f *simFleet) powerOff(ctx context.Context, host string) {
	f.t.Helper()
	task, err := f.vms[host].PowerOff(ctx)
	if err == nil {
		err = task.Wait(ctx)
	}
	if err != nil {
		f.t.Fatalf("powering off %s: %v", host, err)
	}
}

// poweredOnOrder is the order in which vCenter recorded the fleet's VMs
// powering on since the given event key, from its event history.
func (f *simFleet) poweredOnSince(ctx context.Context, afterKey int32) []string {
	f.t.Helper()
	var out []string
	for _, e := range f.powerEvents(ctx) {
		if e.GetEvent().Key <= afterKey {
			continue
		}
		if _, ok := e.(*types.VmPoweredOnEvent); ok {
			out = append(out, f.hostOf[e.GetEvent().Vm.Vm])
		}
	}
	return out
}

// powerEvents returns the fleet's power events in the order vCenter
// recorded them, read with the admin session.
func (f *simFleet) powerEvents(ctx context.Context) []types.BaseEvent {
	f.t.Helper()
	dc, err := find.NewFinder(f.admin.Client, true).DefaultDatacenter(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	all, err := event.NewManager(f.admin.Client).QueryEvents(ctx, types.EventFilterSpec{
		Entity:      &types.EventFilterSpecByEntity{Entity: dc.Reference(), Recursion: types.EventFilterSpecRecursionOptionAll},
		EventTypeId: []string{"VmPoweredOnEvent", "VmPoweredOffEvent", "VmGuestShutdownEvent"},
		MaxCount:    1000,
	})
	if err != nil {
		f.t.Fatalf("reading events: %v", err)
	}
	var fleet []types.BaseEvent
	for _, e := range all {
		if vm := e.GetEvent().Vm; vm != nil && f.hostOf[vm.Vm] != "" {
			fleet = append(fleet, e)
		}
	}
	sort.Slice(fleet, func(i, j int) bool { return fleet[i].GetEvent().Key < fleet[j].GetEvent().Key })
	return fleet
}

func (f *simFleet) lastEventKey(ctx context.Context) int32 {
	evs := f.powerEvents(ctx)
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].GetEvent().Key
}

// fakeRemote stands in for the SSH host: tests have no SSH to the
// simulator. It records when the lab waited for it and refuses commands.
type fakeRemote struct {
	hc      lab.HostConfig
	power   Power
	journal *journal
}

func (r *fakeRemote) Name() string            { return r.hc.Name }
func (r *fakeRemote) Roles() []lab.Role       { return r.hc.Roles }
func (r *fakeRemote) HasRole(x lab.Role) bool { return hasRole(r.hc.Roles, x) }
func (r *fakeRemote) Address() string         { return r.hc.Address }
func (r *fakeRemote) Run(context.Context, string) (lab.Result, error) {
	return lab.Result{}, fmt.Errorf("test host %s runs no commands", r.hc.Name)
}
func (r *fakeRemote) StopService(context.Context, string) error {
	return fmt.Errorf("test host %s has no services", r.hc.Name)
}
func (r *fakeRemote) StartService(context.Context, string) error {
	return fmt.Errorf("test host %s has no services", r.hc.Name)
}
func (r *fakeRemote) Dial(context.Context, string, string) (net.Conn, error) {
	return nil, fmt.Errorf("test host %s dials nothing", r.hc.Name)
}
func (r *fakeRemote) Signal(context.Context, string, syscall.Signal) error {
	return fmt.Errorf("test host %s has no services", r.hc.Name)
}
func (r *fakeRemote) Services(context.Context) ([]lab.ServiceState, error) {
	return nil, fmt.Errorf("test host %s has no services", r.hc.Name)
}
func (r *fakeRemote) PowerOff(ctx context.Context) error {
	r.journal.add("power off " + r.hc.Name)
	return r.power.Off(ctx)
}
func (r *fakeRemote) PowerOn(ctx context.Context) error {
	if err := r.power.On(ctx); err != nil {
		return err
	}
	return r.WaitReachable(ctx)
}
func (r *fakeRemote) WaitReachable(ctx context.Context) error {
	r.journal.add("reachable " + r.hc.Name)
	return nil
}

// journal records, in order, what the lab waited on, with the power states
// vCenter reported at each cluster check.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, s)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.entries...)
}

// openSim opens the lab on the simulated fleet with the SSH wait and the
// cluster check injected; the cluster check records which hosts vCenter
// reports powered on at the moment it is asked.
func (f *simFleet) openSim(ctx context.Context, c *lab.Config) (*Lab, *journal, map[lab.Role][]string) {
	f.t.Helper()
	j := &journal{}
	onAtCheck := map[lab.Role][]string{}
	var mu sync.Mutex
	l, err := Open(ctx, c,
		WithRemoteHosts(func(hc lab.HostConfig, _ *lab.Config, power Power) (RemoteHost, error) {
			return &fakeRemote{hc: hc, power: power, journal: j}, nil
		}),
		WithClusterCheck(func(ctx context.Context, group lab.Role) error {
			j.add("cluster " + string(group))
			var on []string
			for h, s := range f.powerStates(ctx) {
				if s == types.VirtualMachinePowerStatePoweredOn {
					on = append(on, h)
				}
			}
			sort.Strings(on)
			mu.Lock()
			onAtCheck[group] = on
			mu.Unlock()
			return nil
		}),
		WithPollInterval(50*time.Millisecond),
		WithBootTimeout(time.Minute),
		WithShutdownWait(10*time.Second),
	)
	if err != nil {
		f.t.Fatalf("opening the simulated fleet: %v", err)
	}
	f.t.Cleanup(func() { _ = l.Close() })
	return l, j, onAtCheck
}
