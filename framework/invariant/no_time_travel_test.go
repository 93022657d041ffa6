package invariant

import (
	"strings"
	"testing"
	"time"

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

// orderedWithin is no-time-travel asking its comparisons to leave no
// stretch longer than d uncovered.
func orderedWithin(d time.Duration) Invariant {
	return NoTimeTravel(Bound{Limit: d, Why: "the test's bound"})
}

func TestNoTimeTravelPreservedWhenVersionsOnlyGrow(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "100").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "100").Value(vip, evidence.NodeReady, 0.1, readyTrue, "100")
	r.Round(1).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "105").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "105").Value(vip, evidence.NodeReady, 0.1, readyTrue, "105")
	r.Round(2).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "105").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "110").Value(vip, evidence.NodeReady, 0.1, readyTrue, "110")
	j := expect(t, orderedWithin(5*time.Second), r.input(Window), verdict.Preserved, "apiserver/cp1", "apiserver/vip")
	// worker1's node advanced while clients read it from three servers.
	wantExercised(t, j, true, "worker1/ready", "resourceVersion 100", "105")
}

func TestNoTimeTravelNotExercisedWhenNothingAdvanced(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s <= 3; s++ {
		r.Round(s).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "100").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "100")
	}
	j := expect(t, orderedWithin(5*time.Second), r.input(Window), verdict.Preserved)
	wantExercised(t, j, false, "no object's resourceVersion advanced")
}

func TestNoTimeTravelViolatedWhenTheVirtualAddressGoesBack(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(vip, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u1"}, "200")
	// The virtual address moved to a server whose answer is older.
	r.Round(1).Value(vip, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u1"}, "190")
	j := expect(t, orderedWithin(5*time.Second), r.input(Window), verdict.Violated, "apiserver/vip returned statefulpod/object at resourceVersion 190", "resourceVersion 200")
	wantExercised(t, j, true)
}

func TestNoTimeTravelViolatedAcrossServersInRealTimeOrder(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "300").Value(cp2, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "300")
	// cp2 answers with an older lease to a read begun after cp1 returned 310.
	r.Round(1).Value(cp1, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "310").Value(cp2, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "305")
	r.Round(2).Value(cp2, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "305")
	j := expect(t, orderedWithin(5*time.Second), r.input(Window), verdict.Violated, "after apiserver/cp1 had returned resourceVersion 310")
	if !j.At.Equal(sec(2.1)) {
		t.Errorf("at %s, want the read at 2.1 s", Stamp(j.At))
	}
}

func TestNoTimeTravelConcurrentReadsAreNeverCompared(t *testing.T) {
	// In one round cp2's read began before cp1's returned: the two reads
	// overlap, and a linearizable store may order cp2's first.
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "410").Value(cp2, evidence.NodeReady, 0.5, readyTrue, "400")
	r.Round(1).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "410").Value(cp2, evidence.NodeReady, 0.1, readyTrue, "410")
	expect(t, orderedWithin(5*time.Second), r.input(Window), verdict.Preserved)
}

func TestNoTimeTravelAStaleCacheIsNotTimeTravelButAnOlderOneIs(t *testing.T) {
	stale := newRun(t)
	stale.Round(0).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "500").Value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "480")
	stale.Round(1).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "520").Value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "480")
	stale.Round(2).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "520").Value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "500")
	expect(t, orderedWithin(5*time.Second), stale.input(Window), verdict.Preserved)

	older := newRun(t)
	older.Round(0).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "500").Value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "500")
	older.Round(1).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "520").Value(inf, evidence.PodObject, 0.1, evidence.PodValue{Exists: true}, "490")
	expect(t, orderedWithin(5*time.Second), older.input(Window), verdict.Violated, "informer showed statefulpod/object at resourceVersion 490", "its cache went back")
}

func TestNoTimeTravelComparesNumbersNotStrings(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "99")
	r.Round(1).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "100")
	expect(t, orderedWithin(5*time.Second), r.input(Window), verdict.Preserved)
}

func TestNoTimeTravelInsufficientWithoutTwoOrderedReads(t *testing.T) {
	r := newRun(t)
	r.Round(0).Value(cp1, evidence.NodeReady, 0.1, readyTrue, "100").Unreadable(cp2, evidence.NodeReady, 1.5, "timeout")
	r.Round(2).Unreadable(cp1, evidence.NodeReady, 1.5, "timeout").Unreadable(cp2, evidence.NodeReady, 1.5, "timeout")
	expect(t, orderedWithin(5*time.Second), r.input(Window), verdict.InsufficientData, "could be put in order", "timeout")

	// A missing object has no resourceVersion: nothing to compare.
	gone := newRun(t)
	gone.Round(0).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "")
	gone.Round(1).Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{}, "")
	expect(t, orderedWithin(5*time.Second), gone.input(Window), verdict.InsufficientData)
}

func TestNoTimeTravelTheInformerAloneNeverPreserves(t *testing.T) {
	r := newRun(t)
	for s := 0.0; s <= 3; s++ {
		r.Round(s).Value(inf, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, []string{"100", "101", "102", "103"}[int(s)]).
			Unreadable(cp1, evidence.NodeLease, 2, "timeout: no answer within 2s")
	}
	expect(t, orderedWithin(5*time.Second), r.input(Window), verdict.InsufficientData, "informer", "API server")
}

func TestNoTimeTravelNeedsEveryServerOrderedAcrossTheInput(t *testing.T) {
	// cp1 is ordered for two rounds, then its reads time out for ten
	// seconds: a client it served then may have gone back unseen.
	lapsed := newRun(t)
	lapsed.Round(0).Value(cp1, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "100")
	lapsed.Round(1).Value(cp1, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, "101")
	for s := 2.0; s <= 12; s++ {
		lapsed.Round(s).Unreadable(cp1, evidence.NodeLease, 2, "timeout: no answer within 2s")
	}
	expect(t, orderedWithin(5*time.Second), lapsed.input(Window), verdict.InsufficientData, "apiserver/cp1", "10:00:02.000", "5s", "the test's bound")

	// cp3 timed out in every round: it may serve an old state to a
	// client that moves to it.
	slow := newRun(t)
	for s := 0.0; s <= 8; s++ {
		rv := []string{"100", "101", "102", "103", "104", "105", "106", "107", "108"}[int(s)]
		slow.Round(s).Value(cp1, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, rv).
			Value(cp2, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, rv).
			Unreadable(cp3, evidence.NodeLease, 2, "timeout: no answer within 2s")
	}
	expect(t, orderedWithin(5*time.Second), slow.input(Window), verdict.InsufficientData, "apiserver/cp3")

	// A server that refused every read serves no client anything.
	refusing := newRun(t)
	for s := 0.0; s <= 8; s++ {
		rv := []string{"100", "101", "102", "103", "104", "105", "106", "107", "108"}[int(s)]
		refusing.Round(s).Value(cp1, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, rv).
			Value(cp2, evidence.NodeLease, 0.1, evidence.LeaseValue{Exists: true}, rv).
			Unreadable(cp3, evidence.NodeLease, 0.01, "connection refused: dial tcp 10.231.0.13:6443")
	}
	j := expect(t, orderedWithin(5*time.Second), refusing.input(Window), verdict.Preserved, "refused throughout, serving no client: apiserver/cp3")
	if strings.Contains(j.Reason, "from [apiserver/cp1 apiserver/cp2 apiserver/cp3") {
		t.Errorf("a server that answered nothing is among the readers: %s", j.Reason)
	}
}
