package local

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/faultline/faultline/lab"
)

func loadTopology(t *testing.T, name string) *lab.Config {
	t.Helper()
	c, err := lab.LoadConfig(filepath.Join("..", "..", "testdata", "labs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAddressPlan(t *testing.T) {
	c := loadTopology(t, "lab11")
	p, err := planAddresses(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.rootAddress.String(); got != "10.231.11.1/24" {
		t.Errorf("root address %s", got)
	}
	// etcd hosts run no kubelet; cp and workers are nodes 1..6.
	if len(p.nodeOrder) != 6 || p.nodeOrder[0] != "cp1" || p.nodeOrder[5] != "worker3" {
		t.Fatalf("nodes %v", p.nodeOrder)
	}
	w3 := p.nodes["worker3"]
	if w3.transport.String() != "10.240.0.6/24" || w3.podSubnet.String() != "10.240.6.0/24" {
		t.Errorf("worker3: transport %s pods %s", w3.transport, w3.podSubnet)
	}
	if _, ok := p.nodes["etcd1"]; ok {
		t.Error("an etcd host got a pod subnet")
	}
	if got := p.serviceIP(1).String(); got != "10.250.11.1" {
		t.Errorf("kubernetes service IP %s", got)
	}
}

func TestAddressPlanRejectsOverlaps(t *testing.T) {
	c := loadTopology(t, "pair")
	c.Network.Pods = "10.231.0.0/16" // contains the management network
	if _, err := planAddresses(c); err == nil {
		t.Fatal("overlapping pod and management networks were accepted")
	}
}

func TestSplitIptablesRule(t *testing.T) {
	got := splitIptablesRule(`FORWARD -i flmab -o flmab -m comment --comment "faultline lab pair" -j ACCEPT`)
	want := []string{"FORWARD", "-i", "flmab", "-o", "flmab", "-m", "comment", "--comment", "faultline lab pair", "-j", "ACCEPT"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	if got := unescapeMountinfo(`/var/lib/a\040b\134c`); got != `/var/lib/a b\c` {
		t.Errorf("got %q", got)
	}
}

func TestNewTouchesNothingAndNamesBadHosts(t *testing.T) {
	c := loadTopology(t, "pair")
	c.StateDir = filepath.Join(t.TempDir(), "state")
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Host("nope"); err == nil {
		t.Error("unknown host accepted")
	}
	if recordExists(c.StateDir) {
		t.Error("New wrote state")
	}
	c2 := *c
	c2.Kind = "static"
	if _, err := New(&c2); err == nil {
		t.Error("a static lab was opened as local")
	}
}
