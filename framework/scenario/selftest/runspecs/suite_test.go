package runspecs

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
	_ "github.com/faultline/faultline/reports"
)

func TestRunSpecs(t *testing.T) {
	if os.Getenv("FAULTLINE_SELFTEST_STATE") == "" {
		t.Skip("run by the scenario package's tests, which set FAULTLINE_SELFTEST_STATE")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "runspecs")
}

var _ = scenario.Register(scenario.Suite{
	Name: "runspecs",
	OpenLab: func(context.Context) (lab.Lab, error) {
		return memlab.Open(os.Getenv("FAULTLINE_SELFTEST_STATE"), true), nil
	},
	Sampler:     memlab.Sampler{},
	SampleEvery: 100 * time.Millisecond,
}, scenario.WithNullArms(scenario.Scenario{
	ID:         "flag-set",
	Title:      "a flag set while the stateful pod runs once",
	Fault:      memlab.Flag{Name: "a"},
	Window:     300 * time.Millisecond,
	Settle:     2 * time.Second,
	Invariants: []invariant.Invariant{invariant.SingleCopy()},
}))
