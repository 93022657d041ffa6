package smallest

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/framework/scenario/internal/memlab"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/reports" // summary.md in each run folder
)

func TestSmallest(t *testing.T) {
	if os.Getenv("FAULTLINE_SELFTEST_STATE") == "" {
		t.Skip("run by the scenario package's tests, which set FAULTLINE_SELFTEST_STATE")
	}
	RegisterFailHandler(Fail)
	scenario.RunSuite(t, "smallest")
}

// The table: one scenario, judged with and without its fault.
var table = scenario.WithNullArms(scenario.Scenario{
	ID:         "flag-set",
	Title:      "a flag set while the stateful pod runs once",
	Labels:     []string{"paper:smallest"},
	CI:         true,
	Fault:      memlab.Flag{Name: "a"},
	Window:     300 * time.Millisecond,
	Settle:     2 * time.Second,
	Invariants: []invariant.Invariant{invariant.SingleCopy()},
})

// The fixture: the stateful pod, running on one node.
func prepare(_ context.Context, l lab.Lab, _ scenario.Scenario) error {
	return l.(*memlab.Lab).Update(func(s *memlab.State) {
		s.Copies = map[string]string{memlab.Nodes[0]: "container-on-w1"}
	})
}

var _ = scenario.Register(scenario.Suite{
	Name: "smallest",
	OpenLab: func(context.Context) (lab.Lab, error) {
		return memlab.Open(os.Getenv("FAULTLINE_SELFTEST_STATE"), true), nil
	},
	Sampler:     memlab.Sampler{},
	SampleEvery: 100 * time.Millisecond,
	Prepare:     prepare,
	SelfCheck:   true,
}, table)
