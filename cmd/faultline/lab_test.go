package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/lab"
)

// recordingLab is a lab double for the CLI's own tests: it records what the
// commands asked of it. It is linked only into this test binary.
type recordingLab struct {
	info     lab.Info
	stateDir string
	calls    []string
	failWith error
	closed   bool
	progress io.Writer
}

func (l *recordingLab) Info() lab.Info                     { return l.info }
func (l *recordingLab) Config() *lab.Config                { return nil }
func (l *recordingLab) Hosts() []lab.Host                  { return nil }
func (l *recordingLab) Host(name string) (lab.Host, error) { return nil, errors.New("no hosts") }
func (l *recordingLab) Kubeconfig(target string) (string, error) {
	if target == "" {
		return "/state/admin.kubeconfig", nil
	}
	return "/state/" + target + ".kubeconfig", nil
}
func (l *recordingLab) StateDir() string { return l.stateDir }
func (l *recordingLab) Timers() (lab.Timers, error) {
	return lab.Timers{}, lab.Unsupported(l.info.Kind, "timers", "it runs no cluster")
}
func (l *recordingLab) Close() error { l.closed = true; return nil }

// SetProgress makes the lab a progress reporter: Up says one step.
func (l *recordingLab) SetProgress(w io.Writer) { l.progress = w }

func (l *recordingLab) Reset(ctx context.Context) error {
	l.calls = append(l.calls, "reset")
	return l.failWith
}

func (l *recordingLab) Status(ctx context.Context) (lab.Status, error) {
	l.calls = append(l.calls, "status")
	return lab.Status{Info: l.info, Up: true, Hosts: []lab.HostStatus{
		{Name: "cp1", Roles: []lab.Role{lab.RoleControlPlane, lab.RoleEtcd}, Address: "10.231.11.21", Power: "on",
			Services: []lab.ServiceState{{Name: "kube-apiserver", State: "running", PID: 42}, {Name: "etcd", State: "frozen"},
				{Name: "kube-scheduler", State: "running", PID: 43, Restarts: 2}}},
		{Name: "worker1", Roles: []lab.Role{lab.RoleWorker}, Address: "10.231.11.31", Power: "off", Detail: "powered off by a fault"},
	}}, l.failWith
}

type recordingProvisioner struct{ recordingLab }

func (p *recordingProvisioner) Up(ctx context.Context) error {
	p.calls = append(p.calls, "up")
	if p.progress != nil {
		fmt.Fprintln(p.progress, "lab lab11: starting etcd")
	}
	return p.failWith
}

func (p *recordingProvisioner) Down(ctx context.Context) error {
	p.calls = append(p.calls, "down")
	return p.failWith
}

var _ lab.Provisioner = (*recordingProvisioner)(nil)

// useLab makes the commands open l, recording the --lab argument and
// profile, or "up:<name>" for a lab opened because it is the one up.
func useLab(t *testing.T, l lab.Lab) *[]string {
	t.Helper()
	var opened []string
	prev, prevUp := openLab, openUpLab
	openLab = func(arg, profile string) (lab.Lab, error) {
		opened = append(opened, arg+"|"+profile)
		return l, nil
	}
	openUpLab = func(u lab.UpLab) (lab.Lab, error) {
		opened = append(opened, "up:"+u.Name)
		return l, nil
	}
	t.Cleanup(func() { openLab, openUpLab = prev, prevUp })
	return &opened
}

func runInProcess(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("FAULTLINE_LAB", "")
	return runWithEnv(t, args...)
}

// runWithEnv runs a command line with the environment as the test set it.
func runWithEnv(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// fakeUpLabs makes a state root holding the records of the named
// topologies' local labs, as each leaves while it is up, and points
// $FAULTLINE_STATE_DIR at it. No lab is brought up.
func fakeUpLabs(t *testing.T, topologies ...string) string {
	t.Helper()
	root := t.TempDir()
	t.Setenv(lab.EnvStateDir, root)
	for _, name := range topologies {
		c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		c.StateDir = filepath.Join(root, c.Name)
		b, err := json.Marshal(map[string]any{"config": c})
		if err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(c.StateDir, "lab.json"), string(b))
	}
	return root
}

func TestLabUpNeedsAProvisioner(t *testing.T) {
	l := &recordingLab{info: lab.Info{Name: "fleet", Kind: "vsphere"}}
	useLab(t, l)
	for _, op := range []string{"up", "down"} {
		code, _, errs := runInProcess(t, "lab", op, "--lab", "fleet.yaml")
		if code != exitError || !strings.Contains(errs, "lab fleet: a vsphere lab is not provisioned by faultline, so it cannot be brought "+op) {
			t.Errorf("lab %s on a vsphere lab: exit %d, %q", op, code, errs)
		}
	}
	if len(l.calls) != 0 {
		t.Errorf("nothing may be done to a lab faultline does not provision: %v", l.calls)
	}
	if !l.closed {
		t.Error("the lab was not closed")
	}
}

func TestLabUpDownResetDriveTheLab(t *testing.T) {
	p := &recordingProvisioner{recordingLab{info: lab.Info{Name: "lab11", Kind: "local", TimerProfile: "kubernetes-defaults", ResetKind: lab.ResetColdSnapshot}}}
	opened := useLab(t, p)

	code, out, errs := runInProcess(t, "lab", "up", "--topology", "lab11", "--profile", "kubernetes-defaults")
	if !strings.Contains(errs, "lab lab11: starting etcd") {
		t.Errorf("up: the lab's progress did not reach stderr: %q", errs)
	}
	if code != exitOK || out != "lab lab11 is up (timer profile kubernetes-defaults)\nexport KUBECONFIG=/state/admin.kubeconfig   # for kubectl: the cluster's address\n" {
		t.Errorf("up: exit %d, out %q, err %q", code, out, errs)
	}
	// With no lab named, reset acts on the one lab that is up.
	fakeUpLabs(t, "lab11")
	code, out, errs = runInProcess(t, "lab", "reset")
	if code != exitOK || out != "lab lab11 is reset (cold-snapshot)\n" || !strings.Contains(errs, "acting on lab lab11, the one lab that is up") {
		t.Errorf("reset: exit %d, out %q, err %q", code, out, errs)
	}
	code, out, _ = runInProcess(t, "lab", "down", "--lab", "lab11")
	if code != exitOK || out != "lab lab11 is down\n" {
		t.Errorf("down: exit %d, out %q", code, out)
	}
	if strings.Join(p.calls, ",") != "up,reset,down" {
		t.Errorf("calls %v, want up,reset,down", p.calls)
	}
	// --topology is --lab; with neither, reset opens the lab that is up
	// from its record; only up takes a profile.
	if strings.Join(*opened, ",") != "lab11|kubernetes-defaults,up:lab11,lab11|" {
		t.Errorf("opened %v", *opened)
	}

	// With no lab named, up brings up the default lab, whatever is up.
	fakeUpLabs(t, "pair")
	*opened = nil
	p.calls, p.failWith = nil, errors.New("etcd3 did not start")
	code, _, errs = runInProcess(t, "lab", "up")
	if code != exitError || !strings.Contains(errs, "bringing lab lab11 up: etcd3 did not start") {
		t.Errorf("failing up: exit %d, %q", code, errs)
	}
	if strings.Join(*opened, ",") != "lab11|" {
		t.Errorf("up with pair up and no lab named opened %v, want the default lab11", *opened)
	}
}

func TestLabStatus(t *testing.T) {
	p := &recordingProvisioner{recordingLab{info: lab.Info{Name: "lab11", Kind: "local", Topology: "lab11", TimerProfile: "fast",
		ResetKind: lab.ResetColdSnapshot, KubernetesVersion: "v1.36.3", EtcdVersion: "v3.6.8"}}}
	useLab(t, p)

	code, out, errs := runInProcess(t, "lab", "status", "--lab", "lab11")
	if code != exitOK {
		t.Fatalf("status: exit %d, %s", code, errs)
	}
	for _, want := range []string{
		"lab lab11: up",
		"kind local, topology lab11, reset cold-snapshot, timer profile fast",
		"Kubernetes v1.36.3, etcd v3.6.8",
		"cp1      control-plane,etcd  10.231.11.21  on     kube-apiserver=running etcd=frozen kube-scheduler=running(restarted 2x)",
		"worker1  worker              10.231.11.31  off    -",
		"powered off by a fault",
		"export KUBECONFIG=/state/admin.kubeconfig   # for kubectl: the cluster's address",
		"  cp1's API server alone: /state/cp1.kubeconfig",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = runInProcess(t, "lab", "status", "--json", "--lab", "lab11")
	var st lab.Status
	if code != exitOK {
		t.Fatalf("status --json: exit %d", code)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	if st.Info.Name != "lab11" || !st.Up || len(st.Hosts) != 2 || st.Hosts[0].Services[0].PID != 42 || st.Hosts[1].Power != "off" {
		t.Errorf("status --json: %+v", st)
	}

	p.failWith = errors.New("ssh to cp1: connection refused")
	code, _, errs = runInProcess(t, "lab", "status", "--lab", "lab11")
	if code != exitError || !strings.Contains(errs, "reading the status of lab lab11: ssh to cp1: connection refused") {
		t.Errorf("failing status: exit %d, %q", code, errs)
	}
}

func TestInterruptedContextReachesTheLab(t *testing.T) {
	p := &recordingProvisioner{recordingLab{info: lab.Info{Name: "lab11", Kind: "local"}}}
	var seen error
	prev := openLab
	openLab = func(string, string) (lab.Lab, error) { return &contextCheckingLab{p, &seen}, nil }
	t.Cleanup(func() { openLab = prev })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"lab", "up"}, &out, &errb); code != exitError {
		t.Errorf("exit %d", code)
	}
	if !errors.Is(seen, context.Canceled) {
		t.Errorf("the lab saw context error %v, want canceled", seen)
	}
}

// contextCheckingLab reports the context its Up was given.
type contextCheckingLab struct {
	*recordingProvisioner
	seen *error
}

func (l *contextCheckingLab) Up(ctx context.Context) error {
	*l.seen = ctx.Err()
	return ctx.Err()
}

// snapshottingLab is a lab double that can take a cold snapshot.
type snapshottingLab struct {
	recordingLab
}

func (l *snapshottingLab) ColdSnapshot(ctx context.Context, replace bool) error {
	l.calls = append(l.calls, fmt.Sprintf("cold-snapshot replace=%v", replace))
	return l.failWith
}

func TestLabSnapshotCold(t *testing.T) {
	plain := &recordingLab{info: lab.Info{Name: "pair", Kind: "static"}}
	useLab(t, plain)
	if code, _, errs := runInProcess(t, "lab", "snapshot", "--cold", "--lab", "pair"); code != exitError || !strings.Contains(errs, "a static lab does not take cold snapshots") {
		t.Errorf("snapshot of a lab without snapshots: exit %d, %q", code, errs)
	}

	s := &snapshottingLab{recordingLab{info: lab.Info{Name: "fleet", Kind: "vsphere"}}}
	useLab(t, s)
	if code, _, errs := runInProcess(t, "lab", "snapshot", "--lab", "fleet"); code != exitUsage || !strings.Contains(errs, "say --cold") {
		t.Errorf("snapshot without --cold: exit %d, %q", code, errs)
	}
	if len(s.calls) != 0 {
		t.Fatalf("a refused snapshot command touched the lab: %v", s.calls)
	}
	if code, out, errs := runInProcess(t, "lab", "snapshot", "--cold", "--replace", "--lab", "fleet"); code != exitOK || !strings.Contains(out, "cold snapshot taken") {
		t.Errorf("snapshot --cold: exit %d, %q %q", code, out, errs)
	}
	s.failWith = errors.New("VM etcd3 is still powered on")
	if code, _, errs := runInProcess(t, "lab", "snapshot", "--cold", "--lab", "fleet"); code != exitError || !strings.Contains(errs, "etcd3 is still powered on") {
		t.Errorf("failed snapshot: exit %d, %q", code, errs)
	}
	want := []string{"cold-snapshot replace=true", "cold-snapshot replace=false"}
	if fmt.Sprint(s.calls) != fmt.Sprint(want) {
		t.Errorf("calls %v, want %v", s.calls, want)
	}
}

// lab service takes one of its four forms and a host, or is a usage error
// that touches no lab.
func TestLabServiceCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"lab", "service", "list"},
		{"lab", "service", "--host", "worker1", "frob", "kubelet"},
		{"lab", "service", "--host", "worker1", "stop"},
		{"lab", "service", "--host", "worker1", "signal", "kubelet"},
	} {
		code, _, errs := runInProcess(t, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d (%s), want a usage error", args, code, errs)
		}
	}
}

// lab check --requirements prints the tables without a lab.
func TestLabCheckRequirementsNeedsNoLab(t *testing.T) {
	code, out, errs := runInProcess(t, "lab", "check", "--requirements")
	if code != exitOK || !strings.Contains(out, "| `power-off` | `ssh`, `power` |") {
		t.Errorf("exit %d, %s\n%s", code, errs, out)
	}
}
