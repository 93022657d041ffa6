package invariants

import (
	"fmt"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/kits/storeddata"
	"github.com/faultline/faultline/kits/storeddata/checker"
)

// FencingMonotonicName names the fencing-monotonic invariant.
const FencingMonotonicName = "fencing-monotonic"

// Violations of fencing-monotonic.
const (
	// TokenWentDown: the store accepted a write with a lower token than
	// one it had accepted before.
	TokenWentDown = "token-went-down"
	// SharedToken: the store accepted two holders' writes with one token.
	SharedToken = "shared-token"
)

// FencingMonotonic: a fenced store accepts writes in the order of their
// leaders' tokens, and one token belongs to one holder.
//
// Reads: elector/history from the "elector" source, the latest readable
// answer in the input (a PRESERVED only from the last snapshot's, as
// single-writer-at-storage's). For fenced arms only (the writers' starts say
// fencing lease-transitions): each write carries the token its leader
// read from the Lease when it became leader (leaseTransitions, holder),
// and the store refuses a token below the highest it accepted. Checked
// with checker.CheckFencing: the acknowledged writes in the order of the
// store revisions they committed at (the store's own order, no clock). A
// write of unknown outcome may or may not have been accepted and is not
// counted, unless a later read proves it accepted (the read returned the
// value only that write wrote): then it counts for a shared token. A
// refused write changed nothing.
//
// Fires with Violation "shared-token" (SharedToken) when writes of two
// holders were accepted with one leaseTransitions (two leaders read one
// value of it: a Lease forked between API servers, say, which the
// store's "not lower" rule lets through), else "token-went-down"
// (TokenWentDown) when a write was accepted with a lower leaseTransitions
// than one accepted before it.
//
// The two halves are not alike. The fenced store's transaction refuses a
// token below the highest it accepted, so on its history a token cannot
// go down by construction: token-went-down fires only where the store did
// not run that transaction (a store that lost its token key, a writer not
// fenced after all), and its PRESERVED is the transaction's, no finding.
// A shared token the transaction does not refuse: that half is the
// finding, and only it exercises the invariant.
//
// Why: leader election alone does not stop a deposed leader that does not
// yet know it is deposed (client-go's doc says it does not fence); a
// fencing token checked by the store does, as long as tokens rise with
// each leadership and no two leaders share one.
//
// INSUFFICIENT_DATA when no history is readable or the latest is
// malformed, when the latest readable is not the last snapshot's and
// shows no violation, and when no writer of it fenced (an unfenced arm:
// the invariant does not apply to it, and the suite should not list it
// there).
//
// Exercised when the store accepted writes of two or more holders and the
// run's fault can give the Lease holders outside one election's history
// (invariant.Input.LeaseHistoriesSplittable: a split brain, whose copies of etcd
// each keep a Lease, or an operator's write of it). With one Lease in one
// etcd written only by client-go's election, leaseTransitions rises on
// every change of holder, by an update conditional on the record read, so
// no two holders can share a token: that PRESERVED is by construction and
// says "not exercised: one Lease history" (the frozen leader's rows).
// Refusals are the transaction doing what it is built to do and exercise
// nothing; a run with one holder accepted (one leader) cannot fire and
// says "not exercised". VIOLATED is always exercised.
func FencingMonotonic() invariant.Invariant {
	return invariant.New(FencingMonotonicName, verdict.Safety,
		[]invariant.Reading{{Sources: string(electorSource), Question: storeddata.ElectorHistory}}, judgeFencing)
}

func judgeFencing(in invariant.Input) verdict.Judgement {
	hs, v, tail, why := latestElectorHistory(invariant.Ordered(in.Snapshots))
	if why != "" {
		return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: why}
	}
	hold := func(j verdict.Judgement) verdict.Judgement { return tail.hold(j, "elector history") }
	src := []string{string(electorSource)}
	f, err := checker.CheckFencing(hs)
	switch {
	case err != nil:
		return hold(verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src, Reason: fmt.Sprintf("the elector's history under %s is malformed: %v", v.Prefix, err)})
	case f.Looked.Fenced == 0:
		return hold(verdict.Judgement{Verdict: verdict.InsufficientData, Sources: src,
			Reason: fmt.Sprintf("no writer of the elector's history under %s fenced its writes (%d writer(s)): fencing-monotonic applies only to fenced arms", v.Prefix, len(hs))})
	case f.Shared != nil:
		return hold(verdict.Judgement{Verdict: verdict.Violated, Violation: SharedToken, Sources: src, At: f.At(f.Shared[1]),
			Reason:    fmt.Sprintf("one token, two holders: %s was accepted after %s; %s", f.Describe(f.Shared[1]), f.Describe(f.Shared[0]), f),
			Exercised: verdict.Exercised(), Exercise: f.Accepted() + ", two of them under one token"})
	case f.Down != nil:
		return hold(verdict.Judgement{Verdict: verdict.Violated, Violation: TokenWentDown, Sources: src, At: f.Down[1].Op.Return,
			Reason:    fmt.Sprintf("token went down, which the fenced store's transaction should refuse by construction: %s was accepted after %s; %s", f.Down[1], f.Down[0], f),
			Exercised: verdict.Exercised(), Exercise: f.Accepted() + ", a token below one accepted before"})
	}
	exercised, exercise, held := f.Exercise(in.LeaseHistoriesSplittable())
	return hold(verdict.Judgement{Verdict: verdict.Preserved, Sources: src,
		Reason:    held + "; no accepted token went down, which the store's transaction enforces by construction (no finding): " + f.String(),
		Exercised: &exercised, Exercise: exercise})
}
