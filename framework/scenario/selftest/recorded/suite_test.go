package recorded

import (
	"context"
	"os"
	"testing"
	"time"

	dataplane "github.com/faultline/faultline/kits/dataplane/invariants"
	storedinv "github.com/faultline/faultline/kits/storeddata/invariants"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/reports" // summary.md in each run folder
)

func TestRecorded(t *testing.T) {
	if os.Getenv("FAULTLINE_SELFTEST_STATE") == "" {
		t.Skip("run by hand to record a run folder: set FAULTLINE_SELFTEST_STATE to a memlab state dir")
	}
	RegisterFailHandler(Fail)
	scenario.RunSuite(t, "recorded")
}

// sampleEvery is the suite's tick; the bounds are a few ticks, so that
// the pre-fault window each needs stays short.
const sampleEvery = 100 * time.Millisecond

// bounds are the bounds of the core invariants: three ticks each, named
// as a suite names its own.
var bounds = invariant.Bounds{
	Agreement: map[evidence.Question]invariant.Bound{
		evidence.NodeReady:        {Limit: 300 * time.Millisecond, Why: "three ticks"},
		evidence.PodObject:        {Limit: 300 * time.Millisecond, Why: "three ticks"},
		evidence.ServiceEndpoints: {Limit: 300 * time.Millisecond, Why: "three ticks"},
	},
	Ordering:  invariant.Bound{Limit: 300 * time.Millisecond, Why: "three ticks"},
	Endpoints: 300 * time.Millisecond,
}

// every are the core nine, two of paper 2's with their bounds and one of
// paper 3's: on memlab only single-copy's evidence is answered, so the
// others judge INSUFFICIENT_DATA, as they do wherever their sources are
// not deployed.
func every() []invariant.Invariant {
	return append(invariant.All(bounds),
		dataplane.ServiceRoutesTruthful(invariant.Bound{Limit: 400 * time.Millisecond, Why: "four ticks"}),
		dataplane.DNSTruthful(invariant.Bound{Limit: 300 * time.Millisecond, Why: "three ticks"}, 500*time.Millisecond),
		storedinv.AcknowledgedDataSurvives(),
	)
}

const secondCopy = "container-on-w2"

var table = append(scenario.WithNullArms(scenario.Scenario{
	ID:         "every-invariant",
	Title:      "a flag set while the stateful pod runs once",
	Labels:     []string{"paper:recorded"},
	Fault:      memlab.Flag{Name: "a"},
	Window:     600 * time.Millisecond,
	Settle:     time.Second,
	Invariants: every(),
}),
	scenario.Scenario{
		ID:     "second-copy",
		Title:  "a second copy of the stateful pod starts in the window",
		Labels: []string{"paper:recorded"},
		Fault:  memlab.Flag{Name: "b"},
		Window: 800 * time.Millisecond,
		Settle: time.Second,
		Change: &scenario.Change{Name: "a second copy on memlab-w2", After: 200 * time.Millisecond, Make: func(_ context.Context, l lab.Lab) error {
			return l.(*memlab.Lab).Update(func(s *memlab.State) { s.Copies[memlab.Nodes[1]] = secondCopy })
		}},
		Invariants: []invariant.Invariant{invariant.SingleCopy(), invariant.EndpointsTruthful(bounds.Endpoints)},
	},
	scenario.Scenario{
		ID:         "two-copies-before",
		Title:      "the stateful pod runs twice before the fault",
		Labels:     []string{"paper:recorded", "two-copies"},
		Fault:      memlab.Flag{Name: "d"},
		Window:     400 * time.Millisecond,
		Settle:     time.Second,
		Invariants: []invariant.Invariant{invariant.SingleCopy(), invariant.Convergence()},
	},
	scenario.Scenario{
		ID:         "ineffective",
		Title:      "a fault whose effect no probe can see",
		Labels:     []string{"paper:recorded"},
		Fault:      memlab.Flag{Name: "c", Hidden: true},
		Window:     400 * time.Millisecond,
		Settle:     time.Second,
		Invariants: []invariant.Invariant{invariant.SingleCopy()},
	},
)

// prepare places the stateful pod on one node, or on two for the
// scenario labelled two-copies.
func prepare(_ context.Context, l lab.Lab, sc scenario.Scenario) error {
	copies := map[string]string{memlab.Nodes[0]: "container-on-w1"}
	for _, label := range sc.Labels {
		if label == "two-copies" {
			copies[memlab.Nodes[1]] = secondCopy
		}
	}
	return l.(*memlab.Lab).Update(func(s *memlab.State) { s.Copies = copies })
}

var _ = scenario.Register(scenario.Suite{
	Name: "recorded",
	OpenLab: func(context.Context) (lab.Lab, error) {
		return memlab.Open(os.Getenv("FAULTLINE_SELFTEST_STATE"), true), nil
	},
	Sampler:     memlab.Sampler{},
	SampleEvery: sampleEvery,
	Prepare:     prepare,
	TableOrder:  true,
}, table)
