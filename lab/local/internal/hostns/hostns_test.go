package hostns

import (
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/faultline/faultline/lab/local/internal/addressing"
	"github.com/vishvananda/netlink"
)

func TestSplitIptablesRule(t *testing.T) {
	got := splitIptablesRule(`FORWARD -i flmab -o flmab -m comment --comment "faultline lab pair" -j ACCEPT`)
	want := []string{"FORWARD", "-i", "flmab", "-o", "flmab", "-m", "comment", "--comment", "faultline lab pair", "-j", "ACCEPT"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}

// A link's MAC address is its own and the same every time the link is
// made, and is a locally administered unicast address.
func TestStableMAC(t *testing.T) {
	a, b := stableMAC("pair", "fm1234", "root"), stableMAC("pair", "fm1234", "host")
	if a.String() != stableMAC("pair", "fm1234", "root").String() {
		t.Error("one link got two MAC addresses")
	}
	if a.String() == b.String() {
		t.Error("the two ends of a veth share a MAC address")
	}
	for _, mac := range []net.HardwareAddr{a, b} {
		if mac[0]&0x02 == 0 || mac[0]&0x01 != 0 {
			t.Errorf("%s is not a locally administered unicast address", mac)
		}
	}
}

// A node's route to the service range is on the pod link, with no
// gateway: kube-proxy's OUTPUT rules rewrite the address before the
// packet leaves.
func TestServiceRouteCoversTheServiceRangeOnThePodLink(t *testing.T) {
	p := &addressing.Plan{Services: netip.MustParsePrefix("10.250.14.0/24")}
	r := serviceRoute(p, 7)
	if r.LinkIndex != 7 || r.Dst.String() != "10.250.14.0/24" || r.Gw != nil || r.Scope != netlink.SCOPE_LINK {
		t.Errorf("route %+v, want 10.250.14.0/24 on link 7, scope link, no gateway", r)
	}
}
