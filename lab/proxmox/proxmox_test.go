package proxmox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/internal/sshdtest"
	"github.com/faultline/faultline/lab/proxmox"
)

func TestResolveVMID(t *testing.T) {
	cases := []struct {
		hc      lab.HostConfig
		want    int
		wantErr string
	}{
		{lab.HostConfig{Address: "10.0.0.131"}, 131, ""},
		{lab.HostConfig{Address: "10.0.0.131", VMID: 9001}, 9001, ""},
		{lab.HostConfig{Address: "10.0.0.12"}, 0, "last octet of 10.0.0.12 is 12"},
		{lab.HostConfig{Address: "node.example", VMID: 0}, 0, "not an IPv4 address"},
		{lab.HostConfig{Address: "node.example", VMID: 104}, 104, ""},
		{lab.HostConfig{Address: "10.0.0.131", VMID: 5}, 0, "below 100"},
	}
	for _, c := range cases {
		got, err := proxmox.ResolveVMID(c.hc)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("ResolveVMID(%+v) = %d, %v; want error containing %q", c.hc, got, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ResolveVMID(%+v) = %d, %v; want %d", c.hc, got, err, c.want)
		}
	}
}

// qmScript stands in for Proxmox's qm on the hypervisor: it records every
// call, and powers a "VM" off and on by killing and starting the sshd that
// plays it (each vm<vmid>.dir file names that sshd's directory).
const qmScript = `#!/bin/sh
state="$(dirname "$0")"
echo "$*" >> "$state/qm.calls"
vmid=$2
dir=$(cat "$state/vm$vmid.dir" 2>/dev/null) || { echo "Configuration file 'nodes/pve/qemu-server/$vmid.conf' does not exist" >&2; exit 2; }
running() { [ -f "$dir/sshd.pid" ] && kill -0 "$(cat "$dir/sshd.pid")" 2>/dev/null; }
case "$1" in
status) if running; then echo "status: running"; else echo "status: stopped"; fi ;;
stop) if running; then pid=$(cat "$dir/sshd.pid"); pkill -KILL -P "$pid"; kill -KILL "$pid"; rm -f "$dir/sshd.pid"; fi ;;
start) if running; then echo "VM $vmid already running" >&2; exit 255; fi
	/usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log" ;;
*) echo "qm: unknown command $1" >&2; exit 255 ;;
esac
`

type pair struct {
	lab   lab.Lab
	bin   string
	nodes map[int]*sshdtest.Server
}

// newPair builds the drill's pair: a hypervisor and two VMs, each an sshd
// on its own loopback address, all on one port as in a real lab.
func newPair(t *testing.T) *pair {
	t.Helper()
	sshdtest.Require(t)
	dir := t.TempDir()
	client := sshdtest.NewKey(t, dir, "id_ed25519")
	addrs := []string{"127.0.0.10", "127.0.0.111", "127.0.0.121"}
	port := sshdtest.FreePort(t, addrs)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "qm"), []byte(qmScript), 0o755); err != nil {
		t.Fatal(err)
	}
	auth := []sshdtest.Key{client}
	hyper := sshdtest.Start(t, sshdtest.Config{Addresses: addrs[:1], Port: port, AuthorizedKeys: auth, PathPrefix: bin})
	cp := sshdtest.Start(t, sshdtest.Config{Addresses: addrs[1:2], Port: port, AuthorizedKeys: auth})
	worker := sshdtest.Start(t, sshdtest.Config{Addresses: addrs[2:3], Port: port, AuthorizedKeys: auth})
	nodes := map[int]*sshdtest.Server{111: cp, 205: worker}
	for vmid, s := range nodes {
		os.WriteFile(filepath.Join(bin, fmt.Sprintf("vm%d.dir", vmid)), []byte(s.Dir), 0o644)
	}
	known := filepath.Join(dir, "known_hosts")
	os.WriteFile(known, []byte(hyper.KnownHostsLine(addrs[0])+cp.KnownHostsLine(addrs[1])+worker.KnownHostsLine(addrs[2])), 0o600)

	file := fmt.Sprintf(`
name: pair-test
kind: proxmox
lab: true
stateDir: %[1]s/state
kubeconfig: %[1]s/kubeconfig
network: {management: 127.0.0.0/8}
hosts:
  - {name: pair-cp, roles: [etcd, control-plane], address: 127.0.0.111}
  - {name: pair-worker, roles: [worker], address: 127.0.0.121, vmid: 205}
ssh: {user: root, port: %[2]d, identityFile: %[3]s, knownHosts: %[4]s, commandTimeout: 20s}
proxmox: {host: 127.0.0.10}
`, dir, port, client.Path, known)
	c, err := lab.ParseConfig([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &pair{lab: l, bin: bin, nodes: nodes}
}

func (p *pair) calls(t *testing.T) []string {
	b, _ := os.ReadFile(filepath.Join(p.bin, "qm.calls"))
	os.Remove(filepath.Join(p.bin, "qm.calls"))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestPowerCyclesAVMThroughQm(t *testing.T) {
	p := newPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := p.lab.Host("pair-cp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Run(ctx, "true"); err != nil {
		t.Fatal(err)
	}

	if err := cp.PowerOff(ctx); err != nil {
		t.Fatalf("PowerOff: %v", err)
	}
	if got := p.calls(t); strings.Join(got, ",") != "stop 111,status 111" {
		t.Fatalf("qm calls for PowerOff: %q", got)
	}
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	_, err = cp.Run(short, "true")
	cancelShort()
	if err == nil {
		t.Fatal("pair-cp answered over SSH after it was powered off")
	}

	st, err := p.lab.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	power := map[string]string{}
	for _, h := range st.Hosts {
		power[h.Name] = h.Power
	}
	if power["pair-cp"] != "off" || power["pair-worker"] != "on" || st.Up {
		t.Fatalf("status after powering pair-cp off: %+v", st)
	}
	p.calls(t)

	if err := cp.PowerOn(ctx); err != nil {
		t.Fatalf("PowerOn: %v", err)
	}
	if got := p.calls(t); strings.Join(got, ",") != "status 111,start 111" {
		t.Fatalf("qm calls for PowerOn: %q", got)
	}
	// PowerOn returns once SSH answers.
	if res, err := cp.Run(ctx, "echo back"); err != nil || res.Stdout != "back\n" {
		t.Fatalf("Run after PowerOn = %+v, %v", res, err)
	}

	// Powering on a running VM does not call qm start (it would fail).
	worker, _ := p.lab.Host("pair-worker")
	if err := worker.PowerOn(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.calls(t); strings.Join(got, ",") != "status 205" {
		t.Fatalf("qm calls for powering on a running VM: %q", got)
	}
}

func TestQmFailureIsReported(t *testing.T) {
	p := newPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	os.Remove(filepath.Join(p.bin, "vm205.dir")) // the hypervisor no longer knows the VM
	worker, _ := p.lab.Host("pair-worker")
	err := worker.PowerOff(ctx)
	if err == nil || !strings.Contains(err.Error(), "qm stop 205") || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("PowerOff of an unknown VM: %v, want qm's error", err)
	}
}

func TestInfoSaysTheResetIsACleanup(t *testing.T) {
	p := newPair(t)
	info := p.lab.Info()
	if info.Kind != proxmox.Kind || info.ResetKind != lab.ResetCleanup {
		t.Fatalf("Info = %+v, want kind proxmox with a cleanup reset", info)
	}
}

func TestOpenNamesTheVMIDField(t *testing.T) {
	file := `
name: bad
kind: proxmox
lab: true
kubeconfig: /dev/null
network: {management: 10.0.0.0/24}
hosts:
  - {name: cp, roles: [control-plane], address: 10.0.0.150}
  - {name: w1, roles: [worker], address: w1.example}
ssh: {user: root, identityFile: /dev/null, knownHosts: /dev/null}
proxmox: {host: pve.example}
`
	c, err := lab.ParseConfig([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	_, err = lab.Open(c)
	if err == nil || !strings.Contains(err.Error(), "hosts[1].vmid") {
		t.Fatalf("Open with an unresolvable vmid: %v, want an error naming hosts[1].vmid", err)
	}
}

func TestExampleLabFile(t *testing.T) {
	c, err := lab.LoadConfig("../../testdata/labs/proxmox-pair.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Open(c)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := l.(*proxmox.Lab)
	for host, want := range map[string]int{"pair-cp": 101, "pair-worker": 102} {
		if got, _ := p.VMID(host); got != want {
			t.Errorf("vmid of %s = %d, want %d (its last octet)", host, got, want)
		}
	}
	if l.Info().ResetKind != lab.ResetCleanup {
		t.Errorf("Info = %+v, want a cleanup reset", l.Info())
	}
}

func TestPowerOnAllStartsOnlyStoppedVMs(t *testing.T) {
	p := newPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	worker, _ := p.lab.Host("pair-worker")
	if err := worker.PowerOff(ctx); err != nil {
		t.Fatal(err)
	}
	p.calls(t)
	if err := p.lab.(*proxmox.Lab).PowerOnAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.calls(t); strings.Join(got, ",") != "status 111,status 205,status 205,start 205" {
		t.Fatalf("qm calls: %q", got)
	}
	if _, err := worker.Run(ctx, "true"); err != nil {
		t.Fatalf("worker after PowerOnAll: %v", err)
	}
}

func TestResetRefusesALabFileWithoutLabTrueBeforeQm(t *testing.T) {
	p := newPair(t)
	p.lab.Config().Lab = false
	err := p.lab.Reset(context.Background())
	if err == nil || !strings.Contains(err.Error(), "lab: true") {
		t.Fatalf("Reset = %v, want a refusal", err)
	}
	if got := p.calls(t); strings.Join(got, "") != "" {
		t.Fatalf("qm was called before the refusal: %q", got)
	}
}
