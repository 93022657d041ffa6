package invariant_test

import (
	"fmt"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/verdict"
)

// NodeReadyAtEnd: every API server that answered records worker1 Ready in
// the sample a convergence invariant is judged on.
//
// Reads: worker1/ready from every API server ("apiserver/*").
//
// Fires when a server that answered in the last sample records the node
// not Ready.
//
// Why: a node that came back from a fault should be Ready again.
//
// INSUFFICIENT_DATA when no server answered in the last sample.
//
// Exercised when an earlier sample recorded the node not Ready.
func NodeReadyAtEnd() invariant.Invariant {
	reads := []invariant.Reading{{Sources: invariant.ConsistentReaders, Question: evidence.NodeReady}}
	return invariant.New("node-ready-at-end", verdict.Convergence, reads, func(in invariant.Input) verdict.Judgement {
		snaps := invariant.Ordered(in.Snapshots)
		if len(snaps) == 0 {
			return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no sample to judge"}
		}
		obs, gaps := invariant.Collect[evidence.NodeReadyValue](snaps, reads[0].Sources, evidence.NodeReady)
		left := verdict.NotExercised()
		var last []invariant.Observation[evidence.NodeReadyValue]
		for _, o := range obs {
			switch {
			case o.Snapshot == len(snaps)-1:
				last = append(last, o)
			case o.Value.Status != "True":
				left = verdict.Exercised()
			}
		}
		if len(last) == 0 {
			return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "no server answered in the last sample: " + invariant.GapSummary(gaps)}
		}
		for _, o := range last {
			if o.Value.Status != "True" {
				return verdict.Judgement{Verdict: verdict.Violated, At: o.ReadAt, Exercised: verdict.Exercised(),
					Reason: fmt.Sprintf("%s recorded worker1 %s at %s", o.Source, o.Value.Status, invariant.Stamp(o.ReadAt))}
			}
		}
		return verdict.Judgement{Verdict: verdict.Preserved, Reason: "every server that answered recorded worker1 Ready", Exercised: left}
	})
}

// An invariant over one question, written outside the framework with
// New and the kit's building blocks.
func ExampleNew() {
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	answer := func(status string, at time.Time) evidence.Answer {
		a, _ := evidence.ValueAnswer(evidence.NodeReadyValue{Exists: true, Status: status}, at, "")
		return a
	}
	before, after := evidence.NewSnapshot(t0), evidence.NewSnapshot(t0.Add(time.Second))
	before.Set("apiserver/cp1", evidence.NodeReady, answer("Unknown", t0.Add(100*time.Millisecond)))
	after.Set("apiserver/cp1", evidence.NodeReady, answer("False", t0.Add(1100*time.Millisecond)))
	j := invariant.Judge(NodeReadyAtEnd(), invariant.Input{Moment: invariant.Final, Snapshots: []evidence.Snapshot{before, after}})
	fmt.Println(j.Verdict, j.Reason)
	// Output: VIOLATED apiserver/cp1 recorded worker1 False at 10:00:01.100
}
