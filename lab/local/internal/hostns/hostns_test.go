package hostns

import (
	"net"
	"reflect"
	"testing"
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
