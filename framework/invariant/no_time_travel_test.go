package invariant

import (
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

const (
	cp1 = evidence.Source("apiserver/cp1")
	cp2 = evidence.Source("apiserver/cp2")
	cp3 = evidence.Source("apiserver/cp3")
	vip = evidence.Source("apiserver/vip")
	inf = evidence.Source("informer")
)

var readyTrue = evidence.NodeReadyValue{Exists: true, Status: "True"}

func TestNoTimeTravelPreservedWhenVersionsOnlyGrow(t *testing.T) {
	r := newRun(t)
	r.round(0).value(cp1, evidence.NodeReady, 0.1, readyTrue, "100").value(cp2, evidence.NodeReady, 0.1, readyTrue, "100").value(vip, evidence.NodeReady, 0.1, readyTrue, "100")
	r.round(1).value(cp1, evidence.NodeReady, 0.1, readyTrue, "105").value(cp2, evidence.NodeReady, 0.1, readyTrue, "105").value(vip, evidence.NodeReady, 0.1, readyTrue, "105")
	r.round(2).value(cp1, evidence.NodeReady, 0.1, readyTrue, "105").value(cp2, evidence.NodeReady, 0.1, readyTrue, "110").value(vip, evidence.NodeReady, 0.1, readyTrue, "110")
	expect(t, NoTimeTravel(), r.input(Window), verdict.Preserved, "apiserver/cp1", "apiserver/vip")
}

func TestNoTimeTravelViolatedWhenTheVirtualAddressGoesBack(t *testing.T) {
	r := newRun(t)
	r.round(0).value(vip, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u1"}, "200")
	// The virtual address moved to a server whose answer is older.
	r.round(1).value(vip, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u1"}, "190")
	expect(t, NoTimeTravel(), r.input(Window), verdict.Violated, "apiserver/vip returned statefulpod/object at resourceVersion 190", "resourceVersion 200")
}

func TestNoTimeTravelViolatedAcrossServersInRealTimeOrder(t *testing.T) {
	r := newRun(t)
	r.round(0).value(cp1, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "300").value(cp2, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "300")
	// cp2 answers with an older lease to a read begun after cp1 returned 310.
	r.round(1).value(cp1, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "310").value(cp2, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "305")
	r.round(2).value(cp2, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "305")
	j := expect(t, NoTimeTravel(), r.input(Window), verdict.Violated, "after apiserver/cp1 had returned resourceVersion 310")
	if !j.At.Equal(sec(2.1)) {
		t.Errorf("at %s, want the read at 2.1 s", stamp(j.At))
	}
}

func TestNoTimeTravelConcurrentReadsAreNeverCompared(t *testing.T) {
	// In one round cp2's read began before cp1's returned: the two reads
	// overlap, and a linearizable store may order cp2's first.
	r := newRun(t)
	r.round(0).value(cp1, evidence.NodeReady, 0.1, readyTrue, "410").value(cp2, evidence.NodeReady, 0.5, readyTrue, "400")
	r.round(1).value(cp1, evidence.NodeReady, 0.1, readyTrue, "410").value(cp2, evidence.NodeReady, 0.1, readyTrue, "410")
	expect(t, NoTimeTravel(), r.input(Window), verdict.Preserved)
}

func TestNoTimeTravelAStaleCacheIsNotTimeTravelButAnOlderOneIs(t *testing.T) {
	stale := newRun(t)
	stale.round(0).value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "500").value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "480")
	stale.round(1).value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "520").value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "480")
	stale.round(2).value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "520").value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "500")
	expect(t, NoTimeTravel(), stale.input(Window), verdict.Preserved)

	older := newRun(t)
	older.round(0).value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "500").value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "500")
	older.round(1).value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "520").value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "490")
	expect(t, NoTimeTravel(), older.input(Window), verdict.Violated, "informer showed statefulpod/object at resourceVersion 490", "its cache went back")
}

func TestNoTimeTravelComparesNumbersNotStrings(t *testing.T) {
	r := newRun(t)
	r.round(0).value(cp1, evidence.NodeReady, 0.1, readyTrue, "99")
	r.round(1).value(cp1, evidence.NodeReady, 0.1, readyTrue, "100")
	expect(t, NoTimeTravel(), r.input(Window), verdict.Preserved)
}

func TestNoTimeTravelInsufficientWithoutTwoOrderedReads(t *testing.T) {
	r := newRun(t)
	r.round(0).value(cp1, evidence.NodeReady, 0.1, readyTrue, "100").unreadable(cp2, evidence.NodeReady, 1.5, "timeout")
	r.round(2).unreadable(cp1, evidence.NodeReady, 1.5, "timeout").unreadable(cp2, evidence.NodeReady, 1.5, "timeout")
	expect(t, NoTimeTravel(), r.input(Window), verdict.InsufficientData, "could be put in order", "timeout")

	// A missing object has no resourceVersion: nothing to compare.
	gone := newRun(t)
	gone.round(0).value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "")
	gone.round(1).value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "")
	expect(t, NoTimeTravel(), gone.input(Window), verdict.InsufficientData)
}
