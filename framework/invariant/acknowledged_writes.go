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

// linearizabilityTimeout bounds the porcupine check; a history it cannot
// decide in that time is INSUFFICIENT_DATA, never PRESERVED.
const linearizabilityTimeout = 60 * time.Second

// AcknowledgedWritesSurvive: every write the API acknowledged during the
// run is there after heal.
//
// Reads: register/history from the "writer" source: the register writer
// fixture's log of reads, creates and compare-and-swaps on one ConfigMap
// key through the virtual address, each with its invoke and return times
// and outcome (ok, fail, unknown). The writer keeps going after heal, so
// its own reads after heal show what survived.
//
// Checks the history with porcupine as a linearizable register (see
// register_model.go). Fires when it is not linearizable: the reason says
// which acknowledged writes are missing from the chain of writes that
// leads to the value read after heal, or, if none is, that a read returned
// a value no linearizable order allows (a stale or lost read).
//
// Why: an acknowledged write to the API is committed to an etcd quorum and
// must survive any failure that keeps a quorum's data; consistent reads
// and resourceVersion preconditions make the API a linearizable register.
//
// INSUFFICIENT_DATA when the history is unreadable or empty, when the
// checker cannot decide within its time, or, after heal, when no read of
// the register began after the heal (nothing then shows what survived).
// The writer stamps times with its own node's clock and the heal is
// stamped with faultline's: under clock skew on the writer's node, "after
// heal" is the writer's reckoning.
func AcknowledgedWritesSurvive() Invariant { return acknowledgedWrites{} }

type acknowledgedWrites struct{}

func (acknowledgedWrites) Name() string         { return AcknowledgedWritesSurviveName }
func (acknowledgedWrites) Phase() verdict.Phase { return verdict.Convergence }
func (acknowledgedWrites) Reads() []Reading {
	return []Reading{{Sources: "writer", Question: evidence.RegisterHistory}}
}

func (acknowledgedWrites) Judge(in Input) verdict.Judgement {
	snaps := ordered(in.Snapshots)
	if len(snaps) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no snapshot to judge"}
	}
	obs, gaps := collect[evidence.RegisterHistoryValue](snaps[len(snaps)-1:], "writer", evidence.RegisterHistory)
	if len(obs) == 0 {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "the writer's history was not readable: " + orNone(gapSummary(gaps))}
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
	for i := range ops {
		op := ops[i]
		if op.Op == "read" && op.Outcome == outcomeOK && !healedAt.IsZero() && op.Invoke.After(healedAt) {
			if finalRead == nil || op.Invoke.After(finalRead.Invoke) {
				finalRead = &ops[i]
			}
		}
	}
	if in.Moment == Final && finalRead == nil {
		why := "no heal is on the timeline"
		if !healedAt.IsZero() {
			why = "no read of the register began after the heal at " + stamp(healedAt)
		}
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why + ", so nothing shows which writes survived", Sources: src}
	}

	switch porcupine.CheckOperationsTimeout(registerModel(ops), hist, linearizabilityTimeout) {
	case porcupine.Ok:
		reason := fmt.Sprintf("the writer's history (%d ops, %d acknowledged writes) is linearizable", len(ops), acked)
		if finalRead != nil {
			reason += fmt.Sprintf("; after heal the register read %q at %s", finalRead.Value, stamp(finalRead.Invoke))
		}
		return verdict.Judgement{Verdict: verdict.Preserved, Reason: reason, Sources: src}
	case porcupine.Unknown:
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: fmt.Sprintf("the linearizability checker could not decide the %d-op history within %s", len(hist), linearizabilityTimeout), Sources: src}
	}
	if finalRead != nil {
		if lost := lostWrites(ops, *finalRead); len(lost) > 0 {
			var names []string
			for _, op := range lost[:min(len(lost), 3)] {
				names = append(names, fmt.Sprintf("%q (%s %s acknowledged at %s)", op.Value, op.Writer, op.Op, stamp(op.Return)))
			}
			return verdict.Judgement{Verdict: verdict.Violated,
				Reason: fmt.Sprintf("%d acknowledged write(s) missing after heal: the register read %q at %s, and the chain of writes leading to it lacks %s",
					len(lost), finalRead.Value, stamp(finalRead.Invoke), strings.Join(names, ", ")),
				Sources: src, At: finalRead.Invoke}
		}
	}
	return verdict.Judgement{Verdict: verdict.Violated,
		Reason:  fmt.Sprintf("the writer's history (%d ops) is not linearizable: no acknowledged write is missing from the chain after heal, but some read returned a value no linearizable order allows", len(ops)),
		Sources: src}
}
