package invariant

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// AcknowledgedWritesSurviveName names the acknowledged-writes-survive
// invariant.
const AcknowledgedWritesSurviveName = "acknowledged-writes-survive"

// FaultHealedEvent is the timeline event the scenario engine records once
// the fault is healed.
const FaultHealedEvent = "fault-healed"

// HealStartedEvent is the timeline event the scenario engine records as it
// begins to heal the fault; the heal's own effects (a node powered on, a
// kubelet started) follow it, so moments caused by the return are
// measured from it.
const HealStartedEvent = "heal-started"

// FaultInjectedEvent is the timeline event the scenario engine records
// once the fault is injected.
const FaultInjectedEvent = "fault-injected"

// LostWrite is the Violation of an acknowledged-writes-survive VIOLATED.
const LostWrite = "lost-write"

// StaleReadSeen is the anomaly (Judgement.Anomalies) of an
// acknowledged-writes-survive judgement whose history had a read no
// linearizable order allows; its Exercise opens with it too.
const StaleReadSeen = "stale-read"

// LinearizabilityTimeout bounds a porcupine check; a history it cannot
// decide in that time is INSUFFICIENT_DATA, never PRESERVED.
const LinearizabilityTimeout = 60 * time.Second

// AcknowledgedWritesSurvive: every write the API acknowledged during the
// run is there after heal.
//
// Reads: register/history from the "writer" source: the register writer
// fixture's log of reads, creates and compare-and-swaps on one ConfigMap
// key through the virtual address, each with its invoke and return times
// and outcome (ok, fail, unknown). The writer keeps going after heal, so
// its own reads after heal show what survived.
//
// The deciding read is the latest read of the register that began after
// the heal (judged before the fault, with no heal yet: the latest read of
// the history). Every write acknowledged before it began must be in the
// chain of writes leading to the value it read (each compare-and-swap
// names the value it replaces, and no write deletes). Fires, with
// Violation "lost-write" (LostWrite), when one is missing: the reason
// names the missing writes, the read and its moment. Whether the deciding
// read was itself stale cannot be told from the history; it is the latest
// the writer made, and what it shows is taken as what survived.
//
// The history is also checked with porcupine as a linearizable register
// (see register_model.go). A history that is not linearizable with no
// acknowledged write missing is PRESERVED: some read returned a value no
// linearizable order allows (a stale read, say, during the fault), but
// every write survived, and survival is what this invariant promises;
// counting the stale read here would put a fault of reads into the rate
// of lost writes. So the stale read stays in view rather than in the
// verdict: the reason names it (the read, and the newer write
// acknowledged before it began), and the Exercise opens with
// "stale-read: " and its Anomalies name StaleReadSeen, for reports to
// count apart.
//
// Why: an acknowledged write to the API is committed to an etcd quorum and
// must survive any failure that keeps a quorum's data; consistent reads
// and resourceVersion preconditions make the API a linearizable register.
//
// INSUFFICIENT_DATA when the history is unreadable or empty, when the
// checker cannot decide within its time and no write is missing, or,
// after heal, when no read of the register began after the heal (nothing
// then shows what survived). The writer stamps times with its own node's
// clock and the heal is stamped with faultline's: under clock skew on the
// writer's node, "after heal" is the writer's reckoning.
//
// Exercised when the deciding read began after the heal and tests a write
// acknowledged before the heal began (heal-started; fault-healed on
// timelines without it): a write carried across the fault, acknowledged
// before it or while it was in place (the Exercise counts both). Not
// exercised when every acknowledged write it tests came after the heal,
// or there was no heal (judged before the fault). VIOLATED is always
// exercised.
func AcknowledgedWritesSurvive() Invariant { return acknowledgedWrites{} }

type acknowledgedWrites struct{}

func (acknowledgedWrites) Name() string         { return AcknowledgedWritesSurviveName }
func (acknowledgedWrites) Phase() verdict.Phase { return verdict.Convergence }
func (acknowledgedWrites) Reads() []Reading {
	return []Reading{{Sources: "writer", Question: evidence.RegisterHistory}}
}

func (acknowledgedWrites) Judge(in Input) verdict.Judgement {
	snaps := Ordered(in.Snapshots)
	if len(snaps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no snapshot to judge"}
	}
	obs, gaps := Collect[evidence.RegisterHistoryValue](snaps[len(snaps)-1:], "writer", evidence.RegisterHistory)
	if len(obs) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "the writer's history was not readable: " + orNone(GapSummary(gaps))}
	}
	src := []string{string(obs[0].Source)}
	ops := obs[0].Value.Ops
	hist, err := historyOf(ops)
	if err != nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "the writer's history is malformed: " + err.Error(), Sources: src}
	}
	acked := 0
	for _, op := range ops {
		if op.Op != "read" && op.Outcome == outcomeOK {
			acked++
		}
	}
	if len(hist) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: fmt.Sprintf("the writer's history has no operation that took effect (%d logged)", len(ops)), Sources: src}
	}

	// The reads after heal are what shows survival.
	var healedAt time.Time
	if heals := in.Timeline.OfKind(FaultHealedEvent); len(heals) > 0 {
		healedAt = heals[len(heals)-1].At
	}
	var finalRead *evidence.RegisterOp
	if !healedAt.IsZero() {
		finalRead = latestRead(ops, healedAt)
	}
	if in.Moment == Final && finalRead == nil {
		why := "no heal is on the timeline"
		if !healedAt.IsZero() {
			why = "no read of the register began after the heal at " + Stamp(healedAt)
		}
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why + ", so nothing shows which writes survived", Sources: src}
	}
	deciding, readWhen := finalRead, "after heal"
	if deciding == nil {
		deciding, readWhen = latestRead(ops, time.Time{}), "in the writer's latest read"
	}
	exercised, exercise := carriedAcross(ops, deciding, in.Timeline)

	// A write missing from the chain is lost whatever the checker says,
	// and whether or not it could decide in time.
	if deciding != nil {
		if lost := lostWrites(ops, *deciding); len(lost) > 0 {
			var names []string
			for _, op := range lost[:min(len(lost), 3)] {
				names = append(names, fmt.Sprintf("%q (%s %s acknowledged at %s)", op.Value, op.Writer, op.Op, Stamp(op.Return)))
			}
			if !exercised {
				exercise = fmt.Sprintf("%d acknowledged write(s) lost", len(lost))
			}
			return verdict.Judgement{Verdict: verdict.Violated, Violation: LostWrite,
				Reason: fmt.Sprintf("lost write: %d acknowledged write(s) missing %s: the register read %q at %s, and the chain of writes leading to it lacks %s",
					len(lost), readWhen, deciding.Value, Stamp(deciding.Invoke), strings.Join(names, ", ")),
				Sources: src, At: deciding.Invoke, Exercised: verdict.Exercised(), Exercise: exercise}
		}
	}

	switch porcupine.CheckOperationsTimeout(registerModel(ops), hist, LinearizabilityTimeout) {
	case porcupine.Ok:
		reason := fmt.Sprintf("the writer's history (%d ops, %d acknowledged writes) is linearizable", len(ops), acked)
		if finalRead != nil {
			reason += fmt.Sprintf("; after heal the register read %q at %s", finalRead.Value, Stamp(finalRead.Invoke))
		}
		return verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: src, Exercised: &exercised, Exercise: exercise}
	case porcupine.Unknown:
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: fmt.Sprintf("the linearizability checker could not decide the %d-op history within %s, and no acknowledged write is missing from the chain", len(hist), LinearizabilityTimeout), Sources: src}
	}
	if deciding == nil {
		return verdict.Judgement{Verdict: verdict.InsufficientData,
			Reason:  fmt.Sprintf("the writer's history (%d ops) is not linearizable, but it has no read to show which writes survived", len(ops)),
			Sources: src}
	}
	stale := "some read returned a value no linearizable order allows (none returned a value an acknowledged write had already replaced)"
	if reads := staleReads(ops); len(reads) > 0 {
		r := reads[0]
		stale = fmt.Sprintf("the read begun at %s returned %s though %q had been acknowledged at %s (%d such read(s) in all)",
			Stamp(r.read.Invoke), describeRead(r.read), r.newer.Value, Stamp(r.newer.Return), len(reads))
	}
	return verdict.Judgement{Verdict: verdict.Preserved,
		Reason: fmt.Sprintf("every acknowledged write survived: the register read %q %s, at %s, and the chain of writes leading to it holds every write acknowledged before; but the writer's history (%d ops) is not linearizable: stale read: %s",
			deciding.Value, readWhen, Stamp(deciding.Invoke), len(ops), stale),
		Sources: src, Exercised: &exercised, Exercise: StaleReadSeen + ": " + stale + "; " + exercise,
		Anomalies: []string{StaleReadSeen}}
}

// latestRead returns the successful read invoked last, after since when
// since is set.
func latestRead(ops []evidence.RegisterOp, since time.Time) *evidence.RegisterOp {
	var latest *evidence.RegisterOp
	for i := range ops {
		op := ops[i]
		if op.Op != "read" || op.Outcome != outcomeOK || (!since.IsZero() && !op.Invoke.After(since)) {
			continue
		}
		if latest == nil || op.Invoke.After(latest.Invoke) {
			latest = &ops[i]
		}
	}
	return latest
}

// carriedAcross applies the exercise rule: the deciding read began after
// the heal and tests a write acknowledged before the heal began.
func carriedAcross(ops []evidence.RegisterOp, deciding *evidence.RegisterOp, tl evidence.Timeline) (bool, string) {
	var injected, healStart, healed time.Time
	if e := tl.OfKind(FaultInjectedEvent); len(e) > 0 {
		injected = e[0].At
	}
	if e := tl.OfKind(FaultHealedEvent); len(e) > 0 {
		healed = e[len(e)-1].At
	}
	healStart = healed
	if e := tl.OfKind(HealStartedEvent); len(e) > 0 {
		healStart = e[len(e)-1].At
	}
	switch {
	case healed.IsZero():
		return false, "no heal on the timeline: no write was carried across a fault"
	case deciding == nil || !deciding.Invoke.After(healed):
		return false, "no read after the heal tests the writes"
	}
	var before, during int
	for _, op := range ops {
		if op.Op == "read" || op.Outcome != outcomeOK || !op.Return.Before(healStart) {
			continue
		}
		if !injected.IsZero() && op.Return.After(injected) {
			during++
		} else {
			before++
		}
	}
	if before+during == 0 {
		return false, fmt.Sprintf("no acknowledged write before the heal began at %s: the read after heal tests only writes made after it", Stamp(healStart))
	}
	split := ""
	if !injected.IsZero() {
		split = fmt.Sprintf(" (%d before the fault, %d while the fault was in place)", before, during)
	}
	return true, fmt.Sprintf("%d acknowledged write(s) before the heal began at %s%s, tested by the read at %s", before+during, Stamp(healStart), split, Stamp(deciding.Invoke))
}
