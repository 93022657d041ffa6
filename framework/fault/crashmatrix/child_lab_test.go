//go:build lab

package crashmatrix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/faultline/faultline/framework/crashpoint"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/fault"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/verdict"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/lab/local"
)

// childEnv hands the run to kill its lab file and its fault.
const childEnv = "FAULTLINE_CRASH_CHILD"

// childSpec is the run a child makes.
type childSpec struct {
	Lab    string          `json:"lab"`
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
}

// childWindow is the window of every run the matrix kills: long enough
// for the slowest probe (a partition's 3 s connect) to return once, short
// enough that the heal cells do not wait long for it.
const childWindow = 8 * time.Second

// noReset is the local lab with its Reset left out: the matrix checks the
// lab against its clean fingerprint after every cell and resets it only
// when a cell left something, so a reset at each run's start (20 s and
// more on lab11) would find nothing to do. Every other method, and every
// optional interface the local lab implements, is the lab's own.
type noReset struct{ *local.Lab }

func (noReset) Reset(context.Context) error { return nil }

// emptySampler takes snapshots with no answers: the matrix is about where
// a run dies and what it leaves, not what it judges.
type emptySampler struct{}

func (emptySampler) Sample(context.Context, lab.Lab) (evidence.Snapshot, []evidence.Event, error) {
	return evidence.NewSnapshot(time.Now()), nil, nil
}

// judgesNothing is the one invariant the engine needs a scenario to have;
// with no evidence it is INSUFFICIENT_DATA in every run.
type judgesNothing struct{}

func (judgesNothing) Name() string         { return "judges-nothing" }
func (judgesNothing) Phase() verdict.Phase { return verdict.Safety }
func (judgesNothing) Reads() []invariant.Reading {
	return []invariant.Reading{{Sources: "none", Question: "none"}}
}
func (judgesNothing) Judge(invariant.Input) verdict.Judgement {
	return verdict.Judgement{Verdict: verdict.InsufficientData, Reason: "the crash matrix judges nothing"}
}

// TestCrashChild is the run the matrix kills: the engine's Runner running
// one scenario of the fault it is handed, with FAULTLINE_CRASH_AT naming
// where it dies. It does nothing unless run by the matrix.
func TestCrashChild(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("run only by the crash matrix, as the run it kills")
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	if err := crashpoint.Check(); err != nil {
		t.Fatal(err)
	}
	l, err := lab.OpenFile(spec.Lab)
	if err != nil {
		t.Fatal(err)
	}
	ll, ok := l.(*local.Lab)
	if !ok {
		t.Fatalf("%s is a %T, not a local lab", spec.Lab, l)
	}
	f, err := fault.Decode(spec.Kind, spec.Params)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	suite := scenario.Suite{
		Name:          "crash-matrix",
		OpenLab:       func(context.Context) (lab.Lab, error) { return noReset{ll}, nil },
		Sampler:       emptySampler{},
		SampleEvery:   500 * time.Millisecond,
		Applicability: invariant.Table{},
	}
	rn, err := scenario.NewRunner(ctx, suite, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	sc := scenario.Scenario{ID: "crash-" + spec.Kind, Title: "killed " + fault.Describe(f), Fault: f,
		Window: childWindow, Settle: 30 * time.Second, Invariants: []invariant.Invariant{judgesNothing{}}}
	if inner, isNull := fault.StandsFor(f); isNull {
		// A null fault runs as its scenario's null arm, as a suite's does.
		sc.Fault, sc.Arm = inner, scenario.NullArm
		if decoy, ok := fault.DecoyOf(f); ok {
			sc.Decoy = decoy
		}
	}
	res, err := rn.Run(ctx, sc)
	fmt.Printf("the run ended: %s (%s); skipped %q; failure %q; error %v\n", res.Record.RunVerdict, res.Record.RunReason, res.Skipped, res.Failure, err)
}
