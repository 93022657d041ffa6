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
		{s.Images(), "/var/lib/faultline/pair/images.json"},
		{s.UTS("w1"), "/var/lib/faultline/pair/ns/w1.uts"},
		{s.ContainerdSocket("w1"), "/var/lib/faultline/pair/run/w1/containerd/containerd.sock"},
		{NetnsPath(NetnsName("pair", "w1")), "/run/netns/fl-pair-w1"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

// KernelNames lists every machine-wide name of a lab's objects, each
// once, and two labs of lab11's shape under other lab names share none.
func TestKernelNamesOfTwoLabsOfOneShapeAreApart(t *testing.T) {
	hosts := []string{"etcd1", "etcd2", "etcd3", "etcd4", "etcd5", "cp1", "cp2", "cp3", "worker1", "worker2", "worker3"}
	a, b := KernelNames("lab11", hosts), KernelNames("lab11b", hosts)
	if want := 3 + 4*len(hosts); len(a) != want || len(b) != want {
		t.Fatalf("%d and %d names, want %d each (two bridges, a comment, and per host a namespace, a cgroup and two veths)", len(a), len(b), want)
	}
	for name := range a {
		if _, shared := b[name]; shared {
			t.Errorf("lab11 and lab11b both name %s", name)
		}
	}
	for _, want := range []string{
		"network namespace fl-lab11-worker1", "cgroup /fl-lab11-worker1",
		"link " + ManagementBridgeName("lab11"), "link " + PodBridgeName("lab11"),
		"link " + ManagementVethName("lab11", "cp2"), "link " + PodVethName("lab11", "cp2"),
		"iptables comment faultline lab lab11",
	} {
		if _, ok := a[want]; !ok {
			t.Errorf("KernelNames lacks %s", want)
		}
	}
}

// Names joined with "-" from DNS labels, which may hold "-", can meet:
// lab "a" with host "b-c" and lab "a-b" with host "c". KernelNames shows
// it, so that such labs are never up at once.
func TestKernelNamesShowWhereDashedNamesMeet(t *testing.T) {
	a, b := KernelNames("a", []string{"b-c"}), KernelNames("a-b", []string{"c"})
	var shared []string
	for name := range a {
		if _, ok := b[name]; ok {
			shared = append(shared, name)
		}
	}
	if len(shared) != 2 || a["network namespace fl-a-b-c"] == "" || a["cgroup /fl-a-b-c"] == "" {
		t.Errorf("shared %v, want the namespace and the cgroup fl-a-b-c", shared)
	}
}
