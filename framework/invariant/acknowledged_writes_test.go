package invariant

import (
	"fmt"
	"strings"
	"testing"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

const writerSrc = evidence.Source("writer")

// registerLog builds a writer's log: one read-then-swap round per second,
// starting from a create.
type registerLog struct {
	ops   []evidence.RegisterOp
	round int
}

func (h *registerLog) add(op, value, expect, outcome string, at float64, found bool) {
	h.round++
	f := found
	o := evidence.RegisterOp{Writer: "w", Round: h.round, Op: op, Invoke: sec(at), Return: sec(at + 0.05), Value: value, Expect: expect, Outcome: outcome}
	if op == "read" {
		o.Found = &f
	}
	h.ops = append(h.ops, o)
}

// steady writes w-1 .. w-n with cas, reading before each.
func steady(n int, from float64) *registerLog {
	h := &registerLog{}
	h.add("read", "", "", "ok", from, false)
	h.add("create", "w-1", "", "ok", from+0.1, false)
	for i := 2; i <= n; i++ {
		at := from + float64(i)
		h.add("read", fmt.Sprintf("w-%d", i-1), "", "ok", at, true)
		h.add("cas", fmt.Sprintf("w-%d", i), fmt.Sprintf("w-%d", i-1), "ok", at+0.1, false)
	}
	return h
}

func finalWith(t *testing.T, h *registerLog, healAt float64) Input {
	r := newRun(t)
	r.Round(30).Value(writerSrc, evidence.RegisterHistory, 0.2, evidence.RegisterHistoryValue{Ops: h.ops}, "")
	in := r.input(Final)
	in.Timeline = evidence.Timeline{{At: sec(healAt), Source: "faultline", Kind: FaultHealedEvent}}
	return in
}

func TestAcknowledgedWritesPreservedOnALinearizableHistory(t *testing.T) {
	h := steady(10, 0)
	// Writes during the fault time out (unknown) and one conflicts (fail).
	h.add("read", "w-10", "", "ok", 11, true)
	h.add("cas", "w-11", "w-10", "unknown", 11.1, false)
	h.add("read", "w-11", "", "ok", 13, true) // it did take effect
	h.add("cas", "w-12", "w-10", "fail", 13.1, false)
	h.add("read", "w-11", "", "ok", 20, true) // after heal
	expect(t, AcknowledgedWritesSurvive(), finalWith(t, h, 19), verdict.Preserved, "is linearizable", `after heal the register read "w-11"`)
}

func TestAcknowledgedWritesViolatedWhenAnAcknowledgedWriteIsLost(t *testing.T) {
	h := steady(10, 0)
	// After heal the register is back at w-7: w-8..w-10 were acknowledged
	// and are gone (say, etcd restored from an old member).
	h.add("read", "w-7", "", "ok", 20, true)
	j := expect(t, AcknowledgedWritesSurvive(), finalWith(t, h, 19), verdict.Violated, "3 acknowledged write(s) missing after heal", `"w-8"`)
	if !j.At.Equal(sec(20)) {
		t.Errorf("at %s, want the post-heal read at 20 s", Stamp(j.At))
	}
}

func TestAcknowledgedWritesAnUnknownWriteMayBeMissing(t *testing.T) {
	// The edge: a write that timed out was never acknowledged; its absence
	// after heal is allowed.
	h := steady(5, 0)
	h.add("cas", "w-6", "w-5", "unknown", 6, false)
	h.add("read", "w-5", "", "ok", 20, true)
	expect(t, AcknowledgedWritesSurvive(), finalWith(t, h, 19), verdict.Preserved)
}

func TestAcknowledgedWritesAStaleReadLosesNothing(t *testing.T) {
	// A read during the fault returned w-3 after w-6 had been
	// acknowledged; after heal every acknowledged write is there. The
	// writes survived: PRESERVED, with the stale read kept in view.
	h := steady(6, 0)
	h.add("read", "w-3", "", "ok", 8, true) // stale, during the fault
	h.add("read", "w-6", "", "ok", 20, true)
	j := expect(t, AcknowledgedWritesSurvive(), finalWith(t, h, 19), verdict.Preserved,
		"every acknowledged write", "stale read", `returned "w-3"`, `"w-6"`)
	if j.Violation != "" {
		t.Errorf("a PRESERVED carries no violation kind, got %q", j.Violation)
	}
	if !strings.HasPrefix(j.Exercise, StaleReadSeen+": ") {
		t.Errorf("the stale read is not marked in the exercise: %q", j.Exercise)
	}
	if len(j.Anomalies) != 1 || j.Anomalies[0] != StaleReadSeen {
		t.Errorf("anomalies %v, want [%s]", j.Anomalies, StaleReadSeen)
	}
}

func TestAcknowledgedWritesALostWriteIsNamedSo(t *testing.T) {
	h := steady(10, 0)
	h.add("read", "w-7", "", "ok", 20, true)
	j := expect(t, AcknowledgedWritesSurvive(), finalWith(t, h, 19), verdict.Violated, "lost write")
	if j.Violation != LostWrite {
		t.Errorf("violation kind %q, want %q", j.Violation, LostWrite)
	}
	wantExercised(t, j, true)

	// Before the fault the latest read decides: a write already lost then
	// is a lost write too (the engine makes it DETECTOR_INVALID).
	pre := steady(5, 0)
	pre.add("read", "w-3", "", "ok", 6, true)
	r := newRun(t)
	r.Round(7).Value(writerSrc, evidence.RegisterHistory, 0.2, evidence.RegisterHistoryValue{Ops: pre.ops}, "")
	j = expect(t, AcknowledgedWritesSurvive(), r.input(PreFault), verdict.Violated, "lost write")
	if j.Violation != LostWrite {
		t.Errorf("pre-fault violation kind %q, want %q", j.Violation, LostWrite)
	}
}

func TestAcknowledgedWritesIsExercisedByWritesAcknowledgedBeforeTheHeal(t *testing.T) {
	// Writes acknowledged before the fault and while it was in place, read
	// after heal: exercised.
	h := steady(10, 0)
	h.add("read", "w-10", "", "ok", 20, true)
	in := finalWith(t, h, 19)
	in.Timeline = append(evidence.Timeline{
		{At: sec(5), Source: "faultline", Kind: FaultInjectedEvent},
		{At: sec(18), Source: "faultline", Kind: HealStartedEvent},
	}, in.Timeline...)
	j := expect(t, AcknowledgedWritesSurvive(), in, verdict.Preserved)
	wantExercised(t, j, true, "10 acknowledged write(s)", "before the heal began", "6 while the fault was in place")

	// The writer only wrote after the heal: nothing carried across the
	// fault, whatever the read after heal shows.
	late := steady(3, 30)
	late.add("read", "w-3", "", "ok", 40, true)
	in = finalWith(t, late, 19)
	j = expect(t, AcknowledgedWritesSurvive(), in, verdict.Preserved)
	wantExercised(t, j, false, "no acknowledged write")
}

func TestAcknowledgedWritesInsufficientWithoutAReadAfterHeal(t *testing.T) {
	h := steady(5, 0)
	expect(t, AcknowledgedWritesSurvive(), finalWith(t, h, 19), verdict.InsufficientData, "no read of the register began after the heal")

	r := newRun(t)
	r.Round(30).Unreadable(writerSrc, evidence.RegisterHistory, 1, "not deployed: no writer pod")
	expect(t, AcknowledgedWritesSurvive(), r.input(Final), verdict.InsufficientData, "not deployed")
}

func TestAcknowledgedWritesBeforeTheFaultNeedsNoHeal(t *testing.T) {
	h := steady(3, 0)
	r := newRun(t)
	r.Round(5).Value(writerSrc, evidence.RegisterHistory, 0.2, evidence.RegisterHistoryValue{Ops: h.ops}, "")
	expect(t, AcknowledgedWritesSurvive(), r.input(PreFault), verdict.Preserved)
}

func TestAcknowledgedWritesAHistoryMayStartOnAnExistingRegister(t *testing.T) {
	// A writer that starts on a register left by an earlier one reads that
	// value first; it is a possible start, not a violation.
	h := &registerLog{}
	h.add("read", "old-7", "", "ok", 0, true)
	h.add("cas", "w-1", "old-7", "ok", 0.1, false)
	h.add("read", "w-1", "", "ok", 20, true)
	expect(t, AcknowledgedWritesSurvive(), finalWith(t, h, 19), verdict.Preserved)

	// But a value that some write of the history produced is not a start.
	h = steady(3, 1)
	back := &registerLog{}
	back.add("read", "w-2", "", "ok", 0, true)
	back.ops = append(back.ops, h.ops...)
	back.add("read", "w-3", "", "ok", 20, true)
	// Reading w-2 before it was written is no start; it is a read no
	// linearizable order allows, though nothing acknowledged is lost.
	j := expect(t, AcknowledgedWritesSurvive(), finalWith(t, back, 19), verdict.Preserved, "no linearizable order allows")
	if !strings.HasPrefix(j.Exercise, StaleReadSeen+": ") {
		t.Errorf("the impossible read is not marked in the exercise: %q", j.Exercise)
	}
}

func TestAcknowledgedWritesAfterTheFinalReadAreNotLost(t *testing.T) {
	h := steady(5, 0)
	h.add("read", "w-2", "", "ok", 20, true) // w-3..w-5 lost
	h.add("cas", "w-6", "w-2", "ok", 20.1, false)
	j := expect(t, AcknowledgedWritesSurvive(), finalWith(t, h, 19), verdict.Violated, "3 acknowledged write(s) missing")
	if strings.Contains(j.Reason, `"w-6"`) {
		t.Errorf("w-6 was acknowledged after the final read began; it cannot be missing from it: %s", j.Reason)
	}
}
