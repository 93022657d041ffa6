package scenario

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
)

// WaitConverged samples l until no convergence invariant of invs is
// violated by a snapshot on its own, or bound runs out. A suite calls it
// from Suite.Prepare after installing its fixtures: the fixtures' pods are
// ready before every node's kube-proxy has programmed their endpoints, and
// a baseline taken in between would call the detector invalid for what is
// only the fixtures settling. It returns what was still unsettled when
// bound ran out (the engine's pre-fault judgement then says so), or nil.
func WaitConverged(ctx context.Context, s evidence.Sampler, l lab.Lab, invs []invariant.Invariant, bound, every time.Duration) ([]string, error) {
	deadline := time.Now().Add(bound)
	for {
		snap, _, err := s.Sample(ctx, l)
		if err != nil {
			return nil, fmt.Errorf("sampling while waiting for the fixtures to settle: %w", err)
		}
		unsettled := Unsettled(snap, invs)
		if len(unsettled) == 0 || !time.Now().Before(deadline) {
			return unsettled, nil
		}
		select {
		case <-ctx.Done():
			return unsettled, ctx.Err()
		case <-time.After(every):
		}
	}
}

// Unsettled lists the convergence invariants of invs that snap alone
// violates, with their reasons.
func Unsettled(snap evidence.Snapshot, invs []invariant.Invariant) []string {
	in := invariant.Input{Moment: invariant.PreFault, Snapshots: []evidence.Snapshot{snap}, Baseline: &snap}
	var out []string
	for _, inv := range invs {
		if inv.Phase() != verdict.Convergence {
			continue
		}
		if j := invariant.Judge(inv, in); j.Verdict == verdict.Violated {
			out = append(out, inv.Name()+": "+strings.TrimSpace(j.Reason))
		}
	}
	return out
}
