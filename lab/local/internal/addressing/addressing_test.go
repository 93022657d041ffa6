package addressing

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/lab"
)

// The local backend imports this package, so its tests cannot link it; the
// topologies are read through a backend of the local kind that only parses.
func init() {
	lab.Register(lab.Backend{Kind: "local", Open: func(c *lab.Config) (lab.Lab, error) {
		return nil, errors.New("addressing tests open no lab")
	}})
}

func loadTopology(t *testing.T, name string) *lab.Config {
	t.Helper()
	c, err := lab.LoadConfig(filepath.Join("..", "..", "..", "..", "testdata", "labs", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAddressPlan(t *testing.T) {
	c := loadTopology(t, "lab11")
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.RootAddress.String(); got != "10.231.11.1/24" {
		t.Errorf("root address %s", got)
	}
	// etcd hosts run no kubelet; cp and workers are nodes 1..6.
	if len(p.NodeOrder) != 6 || p.NodeOrder[0] != "cp1" || p.NodeOrder[5] != "worker3" {
		t.Fatalf("nodes %v", p.NodeOrder)
	}
	w3 := p.Nodes["worker3"]
	if w3.Transport.String() != "10.240.0.6/24" || w3.PodSubnet.String() != "10.240.6.0/24" {
		t.Errorf("worker3: transport %s pods %s", w3.Transport, w3.PodSubnet)
	}
	if _, ok := p.Nodes["etcd1"]; ok {
		t.Error("an etcd host got a pod subnet")
	}
	if got := p.ServiceIP(1).String(); got != "10.250.11.1" {
		t.Errorf("kubernetes service IP %s", got)
	}
}

func TestAddressPlanRejectsOverlaps(t *testing.T) {
	c := loadTopology(t, "pair")
	c.Network.Pods = "10.231.0.0/16" // contains the management network
	if _, err := New(c); err == nil {
		t.Fatal("overlapping pod and management networks were accepted")
	}
}
