package vsphere

import (
	"strings"
	"testing"
)

func TestStatusReportsPowerFromVCenter(t *testing.T) {
	ctx := testContext(t)
	f := newSimFleet(t)
	l, _, _ := f.openSim(ctx, f.config())
	f.powerOn(ctx, "etcd4")

	st, err := l.Status(ctx)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if st.Info.Kind != "vsphere" || st.Info.ResetKind != "cold-snapshot" {
		t.Errorf("status info %+v", st.Info)
	}
	if st.Up {
		t.Error("Status says up with ten VMs off")
	}
	if len(st.Hosts) != len(fleetHosts) {
		t.Fatalf("%d hosts in status, want %d", len(st.Hosts), len(fleetHosts))
	}
	for i, hs := range st.Hosts {
		if hs.Name != fleetHosts[i].name {
			t.Errorf("status host %d is %s, want %s (config order)", i, hs.Name, fleetHosts[i].name)
		}
		want := "off"
		if hs.Name == "etcd4" {
			want = "on"
			// The test host runs no commands: its status says why.
			if !strings.Contains(hs.Detail, "has no services") {
				t.Errorf("etcd4 detail %q, want the services error", hs.Detail)
			}
		}
		if hs.Power != want {
			t.Errorf("%s power %q, want %q", hs.Name, hs.Power, want)
		}
	}
}
