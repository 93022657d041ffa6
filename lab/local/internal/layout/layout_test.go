package layout

import "testing"

func TestInterfaceNamesFitTheKernelLimit(t *testing.T) {
	longest := "abcdefghijk" // the longest host name a local lab allows
	names := []string{
		ManagementBridgeName("a-very-long-lab-name-indeed"),
		PodBridgeName("a-very-long-lab-name-indeed"),
		ManagementVethName("a-very-long-lab-name-indeed", longest),
		PodVethName("a-very-long-lab-name-indeed", longest),
	}
	for _, n := range names {
		if len(n) > 15 {
			t.Errorf("interface name %q is longer than 15 bytes", n)
		}
	}
	if ManagementVethName("lab11", "worker1") == ManagementVethName("lab11", "worker2") {
		t.Error("two hosts share a veth name")
	}
	if ManagementVethName("lab11", "worker1") == ManagementVethName("racks", "worker1") {
		t.Error("two labs share a veth name")
	}
}

// The state dir is laid out as lab/local's README says, and as a lab that
// is already up was laid out: down and reset must find its files.
func TestStateDirLayout(t *testing.T) {
	s := State("/var/lib/faultline/pair")
	for _, c := range []struct{ got, want string }{
		{s.Record(), "/var/lib/faultline/pair/lab.json"},
		{s.Data("w1"), "/var/lib/faultline/pair/hosts/w1"},
		{s.PodLogs("w1"), "/var/lib/faultline/pair/hosts/w1/pod-logs"},
		{s.Runtime("w1"), "/var/lib/faultline/pair/run/w1"},
		{s.Logs(), "/var/lib/faultline/pair/logs"},
		{s.PKI(), "/var/lib/faultline/pair/pki"},
		{s.SSH(), "/var/lib/faultline/pair/ssh"},
		{s.Cold(), "/var/lib/faultline/pair/cold"},
		{s.UTS("w1"), "/var/lib/faultline/pair/ns/w1.uts"},
		{s.ContainerdSocket("w1"), "/var/lib/faultline/pair/run/w1/containerd/containerd.sock"},
		{NetnsPath(NetnsName("pair", "w1")), "/run/netns/fl-pair-w1"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
