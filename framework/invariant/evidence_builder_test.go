package invariant

import (
	"testing"
	"time"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/evidencetest"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/framework/verdict/verdicttest"
)

// The core's tests build their input with evidencetest, as the kits' do
// with invarianttest (which cannot be linked here: it imports this
// package).
var (
	t0  = evidencetest.T0
	sec = evidencetest.Sec
)

// run builds snapshots by hand (evidencetest.Run) and hands them to an
// invariant as its Input.
type run struct{ *evidencetest.Run }

type round = evidencetest.Round

func newRun(t *testing.T) *run { return &run{evidencetest.NewRun(t)} }

func (r *run) input(m Moment) Input {
	in := Input{Moment: m, Snapshots: r.Snaps}
	if len(r.Snaps) > 0 {
		b := r.Snaps[0]
		in.Baseline = &b
	}
	return in
}

// expect judges inv through the guarded Judge and checks the verdict and
// that the reason mentions every word given.
func expect(t *testing.T, inv Invariant, in Input, want verdict.Verdict, words ...string) verdict.Judgement {
	t.Helper()
	j := Judge(inv, in)
	verdicttest.WantVerdict(t, j, want, words...)
	return j
}

// runtimeWith is a runtime answer holding the given containers of the pod
// (ID → state) in one ready sandbox of uid.
func runtimeWith(uid string, containers map[string]string) evidence.RuntimePodValue {
	v := evidence.RuntimePodValue{Sandboxes: []evidence.RuntimeSandbox{}, Containers: []evidence.RuntimeContainer{}}
	if len(containers) == 0 {
		return v
	}
	v.Sandboxes = append(v.Sandboxes, evidence.RuntimeSandbox{ID: "sb-" + uid, Name: "stateful-0", Namespace: "faultline", UID: uid, State: "SANDBOX_READY"})
	for id, st := range containers {
		v.Containers = append(v.Containers, evidence.RuntimeContainer{ID: id, Name: "app", SandboxID: "sb-" + uid, PodUID: uid, State: st})
		if st == "CONTAINER_RUNNING" {
			v.Running = true
		}
	}
	return v
}

const running, exited = "CONTAINER_RUNNING", "CONTAINER_EXITED"

// testBound is a bound for the agents' invariants, with a mechanism the
// reasons must state.
func testBound(d time.Duration) Bound { return Bound{Limit: d, Why: "test mechanism"} }

// wantExercised checks that a PRESERVED or VIOLATED judgement says
// whether it was exercised, as want, and that its Exercise mentions every
// word.
var wantExercised = verdicttest.WantExercised

// notVerdict judges inv and fails when it gives bad: for evidence that
// supports more than one verdict but never bad.
func notVerdict(t *testing.T, inv Invariant, in Input, bad verdict.Verdict) verdict.Judgement {
	t.Helper()
	j := Judge(inv, in)
	verdicttest.NotVerdict(t, j, bad)
	return j
}

// missedAt is a timeline of ticks at which no snapshot was taken.
func missedAt(secs ...float64) evidence.Timeline {
	var tl evidence.Timeline
	for _, s := range secs {
		tl = append(tl, evidence.Event{At: sec(s), Source: "faultline", Subject: "scenario/x", Kind: SampleFailedEvent, Detail: "opening the lab's sources: connection refused"})
	}
	return tl
}
