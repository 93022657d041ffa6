package vsphere

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmware/govmomi/vim25/types"

	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/internal/sshdtest"
)

// TestResetWaitsForHostsOverRealSSH runs the whole path a real fleet takes,
// with nothing injected: the simulated vCenter holds the VMs, one real sshd
// on eleven loopback addresses stands in for the eleven guests, and an API
// server on loopback answers client-go.
func TestResetWaitsForHostsOverRealSSH(t *testing.T) {
	sshdtest.Require(t)
	ctx := testContext(t)
	f := newSimFleet(t)

	var addrs []string
	for i := range fleetHosts {
		addrs = append(addrs, fmt.Sprintf("127.0.0.%d", 11+i))
	}
	client := sshdtest.NewKey(t, f.dir, "id_ed25519")
	// Sessions get a HOME of their own: bash sourcing the test machine's
	// root dotfiles over SSH is no part of what is tested here.
	home := t.TempDir()
	srv := sshdtest.Start(t, sshdtest.Config{Addresses: addrs, AuthorizedKeys: []sshdtest.Key{client}, Extra: []string{"SetEnv HOME=" + home}})
	var known strings.Builder
	for _, a := range addrs {
		known.WriteString(srv.KnownHostsLine(a))
	}
	if err := os.WriteFile(filepath.Join(f.dir, "known_hosts"), []byte(known.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	api := &fakeAPIServer{ready: true, marker: "simfleet"}
	for _, h := range fleetHosts {
		if h.role != lab.RoleEtcd {
			api.nodes = append(api.nodes, node(h.name, true))
		}
	}
	apiSrv := httptest.NewTLSServer(api)
	t.Cleanup(apiSrv.Close)
	kubeconfig := kubeconfigFor(t, apiSrv.URL)

	text := strings.ReplaceAll(f.configYAML("cold"), "192.0.2.", "127.0.0.")
	text = strings.Replace(text, "kubeconfig: "+filepath.Join(f.dir, "kubeconfig"), "kubeconfig: "+kubeconfig, 1)
	text = strings.Replace(text, "  user: ops\n", fmt.Sprintf("  user: root\n  port: %d\n  commandTimeout: 20s\n", srv.Port), 1)
	c := f.writeConfig(text, simUser, simPassword)

	l, err := Open(ctx, c, WithPollInterval(50*time.Millisecond), WithBootTimeout(time.Minute))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })

	if err := l.ColdSnapshot(ctx, false); err != nil {
		t.Fatalf("ColdSnapshot: %v", err)
	}
	if err := l.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v\nsshd log:\n%s", err, srv.Log())
	}
	api.set(func(s *fakeAPIServer) {
		if s.readyzN == 0 || s.nodesN == 0 {
			t.Errorf("Reset asked the API server /readyz %d times and for nodes %d times", s.readyzN, s.nodesN)
		}
	})
	h, err := l.Host("cp3")
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Run(ctx, "echo $SSH_CONNECTION")
	if err != nil {
		t.Fatalf("Run on cp3: %v", err)
	}
	// The command reached the sshd through cp3's own address.
	if fields := strings.Fields(res.Stdout); len(fields) < 3 || fields[2] != "127.0.0.18" {
		t.Errorf("cp3's command ran on a connection to %q, want 127.0.0.18", res.Stdout)
	}
	if err := h.PowerOff(ctx); err != nil {
		t.Fatalf("PowerOff: %v", err)
	}
	if s := f.powerStates(ctx)["cp3"]; s != types.VirtualMachinePowerStatePoweredOff {
		t.Errorf("after PowerOff cp3 is %s", s)
	}
	if err := h.PowerOn(ctx); err != nil {
		t.Fatalf("PowerOn: %v", err)
	}
	if _, err := h.Run(ctx, "true"); err != nil {
		t.Errorf("Run after PowerOn: %v", err)
	}
}
