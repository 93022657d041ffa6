package controls

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/fault/faults"
)

func TestCutThenForceDeleteDecodesToTheSameCutForHealing(t *testing.T) {
	f := CutThenForceDelete(faults.HostFromControlPlane("worker1"), Pod{Node: "worker1", Namespace: "faultline", Name: "stateful-0", TaintWait: 66 * time.Second}, nil)
	got, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Params(), f.Params()) {
		t.Errorf("decoded params %s, want %s", got.Params(), f.Params())
	}
	// The partition's rules are named by its tag: a heal in another process
	// must decode the very same cut, not a new one.
	inner := got.(*cutForceDelete).cut
	if !bytes.Equal(inner.Params(), f.(*cutForceDelete).cut.Params()) || inner.Kind() != "partition" {
		t.Errorf("decoded cut %s %s, want %s", inner.Kind(), inner.Params(), f.(*cutForceDelete).cut.Params())
	}
	if got.Class() != f.Class() || f.Class() != "partition" {
		t.Errorf("class %s, decoded %s", f.Class(), got.Class())
	}
	// Two controls cut with rules of their own.
	if other := CutThenForceDelete(faults.HostFromControlPlane("worker1"), Pod{Node: "worker1", Namespace: "faultline", Name: "stateful-0", TaintWait: time.Minute}, nil); bytes.Equal(other.(*cutForceDelete).cut.Params(), inner.Params()) {
		t.Errorf("two faults share the cut %s", inner.Params())
	}
}

func TestCutThenForceDeleteRefusesIncompleteParams(t *testing.T) {
	f := CutThenForceDelete(faults.HostFromControlPlane("worker1"), Pod{Node: "worker1", Namespace: "faultline", Name: "stateful-0", TaintWait: time.Minute}, nil)
	for name, raw := range map[string]string{
		"no pod":      strings.Replace(string(f.Params()), `"pod":"stateful-0"`, `"pod":""`, 1),
		"unknown cut": strings.Replace(string(f.Params()), `"kind":"partition"`, `"kind":"nothing"`, 1),
		"not json":    "{",
	} {
		if _, err := fault.Decode(KindCutThenForceDelete, []byte(raw)); err == nil {
			t.Errorf("%s: decoded %s", name, raw)
		}
	}
}

func TestCutThenDeleteNodeDecodesToTheSameCutForHealing(t *testing.T) {
	f := CutThenDeleteNode(faults.HostFromControlPlane("worker1"), "worker1")
	got, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Params(), f.Params()) || got.Class() != "partition" {
		t.Errorf("decoded %s %s, want %s", got.Class(), got.Params(), f.Params())
	}
	if _, err := fault.Decode(KindCutThenDeleteNode, []byte(strings.Replace(string(f.Params()), `"node":"worker1"`, `"node":""`, 1))); err == nil {
		t.Error("a fault naming no node decoded")
	}
}

// The racks drill's control: a rack's cut wrapped the same way, healed by
// the very rules it added.
func TestARackCutDecodesToTheSameCut(t *testing.T) {
	f := CutThenForceDelete(faults.RackFromRest("r1"), Pod{Node: "w1", Namespace: "drill", Name: "p-0", Observer: "m2", TaintWait: time.Minute}, nil)
	got, err := fault.Decode(f.Kind(), f.Params())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.(*cutForceDelete).cut.Params(), f.(*cutForceDelete).cut.Params()) || got.(*cutForceDelete).p.Observer != "m2" {
		t.Errorf("decoded %s, want %s", got.Params(), f.Params())
	}
}
