package invariant

import (
	"fmt"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/verdict"
)

// The missed-tick rule reaches every stretch invariant that proves
// something from consecutive reads: ticks at which no snapshot was taken
// (3, 4, 5) break the proof as unreadable rounds do.
func TestMissedTicksBreakEveryProof(t *testing.T) {
	gap := missedAt(3, 4, 5)
	t.Run("api-agreement", func(t *testing.T) {
		r := newRun(t)
		for _, s := range []float64{0, 1, 2, 6, 7, 8} {
			r.Round(s).
				Value(cp1, evidence.PodObject, 0.1, evidence.PodValue{Exists: true, UID: "u2", NodeName: "worker2"}, "").
				Value(cp3, evidence.PodObject, 0.2, evidence.PodValue{Exists: true, UID: "u1", NodeName: "worker1"}, "")
		}
		in := r.input(Window)
		in.Timeline = gap
		expect(t, agreeWithin(5*time.Second), in, verdict.InsufficientData, "could not be shown to agree")
	})
	t.Run("endpoints-truthful", func(t *testing.T) {
		r := newRun(t)
		for _, s := range []float64{0, 1, 2, 6, 7, 8} {
			status := "True"
			if s >= 1 {
				status = "Unknown"
			}
			r.Round(s).Value(cp2, evidence.ServiceEndpoints, 0.1, ready("10.244.1.5"), "").
				Value(cp2, evidence.PodObject, 0.1, podAt("u1", "worker1", "10.244.1.5"), "").
				Value(cp2, evidence.NodeReady, 0.1, nodeReady(status), "").
				Unreadable(cri1, q, 0.3, "timeout: no answer within 2s")
		}
		in := r.input(Window)
		in.Timeline = gap
		expect(t, EndpointsTruthful(5*time.Second), in, verdict.InsufficientData, "without it being shown to point at a live pod")
	})
	t.Run("no-time-travel coverage", func(t *testing.T) {
		r := newRun(t)
		rv := 100
		for _, s := range []float64{0, 1, 2, 10, 11, 12} {
			rv++
			v := fmt.Sprint(rv)
			r.Round(s).Value(cp1, evidence.NodeReady, 0.1, readyTrue, v).Value(cp2, evidence.NodeReady, 0.2, readyTrue, v)
		}
		in := r.input(Window)
		in.Timeline = missedAt(3, 4, 5, 6, 7, 8, 9)
		expect(t, orderedWithin(5*time.Second), in, verdict.InsufficientData, "were not put in order with any other")
	})
}
