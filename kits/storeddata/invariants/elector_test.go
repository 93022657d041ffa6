package invariants

import (
	"testing"

	"github.com/faultline/faultline/fixtures/electorlog"
	"github.com/faultline/faultline/fixtures/electorlog/electortest"
	"github.com/faultline/faultline/fixtures/history"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
)

// The elector invariants are judged over histories the workload's own
// history client recorded (electortest), the store's answers given by
// each test.

const (
	eOK      = history.OutcomeOK
	eUnknown = history.OutcomeUnknown
	eFenced  = electorlog.FencingLeaseTransitions
)

func electorValue(b *electortest.Bench) storeddata.ElectorHistoryValue {
	v := storeddata.ElectorHistoryValue{Prefix: electortest.Prefix, Revision: 9}
	for _, kv := range b.KVs() {
		v.KVs = append(v.KVs, storeddata.StoredKV{Key: kv.Key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision})
	}
	return v
}

// electorRounds reads the history in rounds at the given seconds; the
// last one unreadable when unreadableLast is set.
func electorRounds(t *testing.T, b *electortest.Bench, unreadableLast bool, at ...float64) invariant.Input {
	r := newRun(t)
	for i, s := range at {
		if unreadableLast && i == len(at)-1 {
			r.Round(s).Unreadable(electorSource, storeddata.ElectorHistory, 0.2, "context deadline exceeded")
			continue
		}
		r.Round(s).Value(electorSource, storeddata.ElectorHistory, 0.2, electorValue(b), "")
	}
	return r.Input(invariant.WindowToSettle)
}

// Leadership changes hands once, cleanly: one order, the tokens rising,
// the stale leader's write refused.
func cleanHandover(t *testing.T, fencing string) *electortest.Bench {
	b := electortest.New(t, t0)
	a, c := b.Writer("a", "worker1", fencing).Lead(1), b.Writer("c", "worker2", fencing)
	a.Increment("", "1", eOK)
	a.Increment("1", "2", eOK)
	c.Read("2")
	c.Lead(2).Increment("2", "3", eOK)
	a.End(a.Begin(electortest.Key, "3", "4"), history.OutcomeFail, "0000000002/"+c.Holder)
	return b
}

// Two leaders at once: both read 2 and both write 3, the higher token's
// write first.
func twoLeadersAtOnce(t *testing.T, fencing string) *electortest.Bench {
	b := electortest.New(t, t0)
	a, c := b.Writer("a", "worker1", fencing).Lead(1), b.Writer("c", "worker2", fencing).Lead(2)
	a.Increment("", "1", eOK)
	a.Increment("1", "2", eOK)
	opA := a.Begin(electortest.Key, "2", "3")
	c.End(c.Begin(electortest.Key, "2", "3"), eOK, "")
	a.End(opA, eOK, "")
	return b
}

func TestSingleHistoryPreservedWhenLeadershipChangesHands(t *testing.T) {
	j := expect(t, SingleHistory(), electorRounds(t, cleanHandover(t, eFenced), false, 11, 12), verdict.Preserved,
		"every key's history fits one order", "linearizable", "3 increments acknowledged")
	wantExercised(t, j, true, "increments of 2 writers")

	one := electortest.New(t, t0)
	one.Writer("a", "worker1", eFenced).Lead(1).Increment("", "1", eOK)
	j = expect(t, SingleHistory(), electorRounds(t, one, false, 11), verdict.Preserved)
	wantExercised(t, j, false, "no key had increments of two writers")
}

func TestSingleHistoryViolatedByTwoLeadersAtOnce(t *testing.T) {
	j := expect(t, SingleHistory(), electorRounds(t, twoLeadersAtOnce(t, electorlog.FencingNone), false, 11), verdict.Violated,
		"fits no order of one copy", "lost update", "worker1", "worker2", `replaced "2"`)
	if j.Violation != NotLinearizableKey {
		t.Errorf("violation %q", j.Violation)
	}
}

// An increment of unknown outcome is never read as a value: a read of
// the value before it still fits, and so does one of its value.
func TestSingleHistoryCountsNoUnknownOutcomeAsAValue(t *testing.T) {
	for _, read := range []string{"1", "2"} {
		b := electortest.New(t, t0)
		a, c := b.Writer("a", "worker1", eFenced).Lead(1), b.Writer("c", "worker2", eFenced)
		a.Increment("", "1", eOK)
		a.Increment("1", "2", eUnknown)
		c.Read(read)
		expect(t, SingleHistory(), electorRounds(t, b, false, 11), verdict.Preserved, "1 unknown")
	}
}

func TestSingleHistoryInsufficientWithoutAReadableHistory(t *testing.T) {
	expect(t, SingleHistory(), electorRounds(t, cleanHandover(t, eFenced), true, 11), verdict.InsufficientData, "could not read", "deadline")
	// A readable answer before a failed last one cannot preserve: what
	// was written after it was never read.
	expect(t, SingleHistory(), electorRounds(t, cleanHandover(t, eFenced), true, 11, 12), verdict.InsufficientData,
		"read at 10:00:11.200", "1 read(s) after it", "deadline")
	empty := electortest.New(t, t0)
	empty.Writer("a", "worker1", eFenced)
	expect(t, SingleHistory(), electorRounds(t, empty, false, 11), verdict.InsufficientData, "no operation that took effect")
	broken := electorValue(cleanHandover(t, eFenced))
	broken.KVs = broken.KVs[1:]
	r := newRun(t)
	r.Round(11).Value(electorSource, storeddata.ElectorHistory, 0.2, broken, "")
	expect(t, SingleHistory(), r.Input(invariant.WindowToSettle), verdict.InsufficientData, "parts missing")
}

// A history read long before the stretch it judges cannot preserve it: a
// clean handover read at 11 s, every read from 12 s to 40 s failed (a
// thawed leader's increments at 25 s, say, were never read). What an
// earlier read shows happened still stands.
func TestElectorInvariantsPreserveOnlyFromTheLastSnapshotsHistory(t *testing.T) {
	early := func(b *electortest.Bench) invariant.Input {
		r := newRun(t)
		r.Round(11).Value(electorSource, storeddata.ElectorHistory, 0.2, electorValue(b), "")
		for s := 12.0; s <= 40; s++ {
			r.Round(s).Unreadable(electorSource, storeddata.ElectorHistory, 0.2, "context deadline exceeded")
		}
		return r.Input(invariant.WindowToSettle)
	}
	in := early(cleanHandover(t, eFenced))
	for _, inv := range []invariant.Invariant{SingleHistory(), FencingMonotonic()} {
		expect(t, inv, in, verdict.InsufficientData, "read at 10:00:11.200", "29 read(s) after it", "through the last snapshot at 10:00:40.000", "context deadline exceeded")
	}

	j := expect(t, SingleHistory(), early(twoLeadersAtOnce(t, electorlog.FencingNone)), verdict.Violated, "lost update", "read at 10:00:11.200", "29 read(s) after it")
	wantExercised(t, j, true)
	expect(t, FencingMonotonic(), early(twoLeadersAtOnce(t, eFenced)), verdict.Violated, "token went down", "29 read(s) after it")
}

// One Lease in one etcd, written only by the election, raises its
// leaseTransitions on every change of holder: two holders accepted there
// cannot share a token, and the PRESERVED is by construction, not
// exercised (the frozen leader's rows). Only a fault that can give the
// Lease two histories (a fork of etcd under one API server) or write it
// outside the election (an operator) exercises it.
func TestFencingMonotonicPreservedWhenTheStaleLeaderIsRefused(t *testing.T) {
	in := electorRounds(t, cleanHandover(t, eFenced), false, 11)
	for _, classes := range [][]string{nil, {"process-freeze"}} {
		in.FaultClasses = classes
		j := expect(t, FencingMonotonic(), in, verdict.Preserved,
			"each token accepted has one holder", "by construction", "1 refused")
		wantExercised(t, j, false, "not exercised: one Lease history, tokens unique by construction", "2 holder(s)")
	}
	for _, class := range []string{"split-brain", "operator-action"} {
		in.FaultClasses = []string{"partition", class}
		j := expect(t, FencingMonotonic(), in, verdict.Preserved, "each token accepted has one holder", "1 refused")
		wantExercised(t, j, true, "2 holder(s) with 2 token value(s), and refused 1", class)
	}
}

func TestFencingMonotonicViolatedWhenATokenGoesDown(t *testing.T) {
	// A store that took the lower token after the higher (the control:
	// fenced writers whose store let the stale write through).
	j := expect(t, FencingMonotonic(), electorRounds(t, twoLeadersAtOnce(t, eFenced), false, 11), verdict.Violated,
		"token went down", "worker1", "token 1")
	if j.Violation != TokenWentDown {
		t.Errorf("violation %q", j.Violation)
	}
	b := electortest.New(t, t0)
	a, c := b.Writer("a", "worker1", eFenced).Lead(5), b.Writer("c", "worker2", eFenced).Lead(5)
	a.Increment("", "1", eOK)
	c.Increment("1", "2", eOK)
	j = expect(t, FencingMonotonic(), electorRounds(t, b, false, 11), verdict.Violated, "one token, two holders", "worker2")
	if j.Violation != SharedToken {
		t.Errorf("violation %q", j.Violation)
	}
}

// An unknown write of a lower token is never counted as accepted.
func TestFencingMonotonicCountsNoUnknownWrite(t *testing.T) {
	b := electortest.New(t, t0)
	a, c := b.Writer("a", "worker1", eFenced).Lead(1), b.Writer("c", "worker2", eFenced).Lead(2)
	a.Increment("", "1", eOK)
	c.Increment("1", "2", eOK)
	a.Increment("2", "3", eUnknown)
	expect(t, FencingMonotonic(), electorRounds(t, b, false, 11), verdict.Preserved, "1 unknown (not counted)")
}

// A shared token proven by a read: the other holder's write timed out,
// and a follower read the value only it wrote.
func TestFencingMonotonicViolatedByAnUnknownWriteAReadProves(t *testing.T) {
	b := electortest.New(t, t0)
	a, c, f := b.Writer("a", "worker1", eFenced).Lead(4), b.Writer("c", "worker2", eFenced).Lead(4), b.Writer("f", "worker3", eFenced)
	a.Increment("", "1", eOK)
	c.Increment("1", "2", eUnknown)
	f.Read("2")
	j := expect(t, FencingMonotonic(), electorRounds(t, b, false, 11), verdict.Violated, "one token, two holders", "worker2", "proven accepted by")
	if j.Violation != SharedToken {
		t.Errorf("violation %q", j.Violation)
	}
}

// The store's transaction refuses a lower token by construction: refusals
// and a token that never went down exercise nothing here. One holder
// accepted cannot share its token.
func TestFencingMonotonicOneHolderAcceptedIsNotExercised(t *testing.T) {
	b := electortest.New(t, t0)
	a, c := b.Writer("a", "worker1", eFenced).Lead(2), b.Writer("c", "worker2", eFenced).Lead(1)
	a.Increment("", "1", eOK)
	c.End(c.Begin(electortest.Key, "1", "2"), history.OutcomeFail, "0000000002/"+a.Holder)
	a.Increment("1", "2", eOK)
	j := expect(t, FencingMonotonic(), electorRounds(t, b, false, 11), verdict.Preserved, "by construction", "not exercised")
	wantExercised(t, j, false, "accepted writes of 1 holder(s)")
}

func TestFencingMonotonicInsufficientForAnUnfencedArm(t *testing.T) {
	expect(t, FencingMonotonic(), electorRounds(t, twoLeadersAtOnce(t, electorlog.FencingNone), false, 11), verdict.InsufficientData,
		"applies only to fenced arms")
	expect(t, FencingMonotonic(), electorRounds(t, cleanHandover(t, eFenced), true, 11), verdict.InsufficientData, "could not read")
}
