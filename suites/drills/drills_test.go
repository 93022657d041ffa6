//go:build lab

// The drills run against a lab: go test -tags lab ./suites/drills with
// FAULTLINE_LAB naming a lab of the pair or racks shape.

package drills_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	// The images the local lab loads into its nodes: this suite's fixtures.
	_ "github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
	_ "github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/suites/drills"
)

func TestDrills(t *testing.T) {
	RegisterFailHandler(Fail)
	scenario.RunSuite(t, "drills")
}

// The hosts as the drills' topologies (testdata/labs/pair.yaml, racks.yaml)
// name them; a copy of a topology under another lab name keeps them.
var (
	pairWorker = "pair-worker"
	racks      = drills.RacksShape{M1: "m1", W1: "w1", M2: "m2", W2: "w2"}
)

// sampler is the framework's, with the drills' questions; the positive
// control's forced deletion and the placements note what they did on it.
var sampler = drills.NewSampler()

var _ = scenario.Register(scenario.Suite{
	Name:    "drills",
	OpenLab: scenario.OpenLabFromEnv,
	Sampler: sampler,
	Prepare: prepare,
	// The pair drill's control (6.C2) runs before its experiment (6.C1),
	// as the drill asks, and both land in this run's folder.
	TableOrder: true,
}, table())

func table() []scenario.Scenario {
	p, err := drills.TimersOf()
	if err != nil {
		panic(fmt.Sprintf("drills: reading the lab's timers: %v", err))
	}
	t, err := drills.WithFaults(drills.Table(p, sampler), pairWorker, racks, sampler.Note)
	if err != nil {
		panic(err.Error())
	}
	return t
}

// prepare installs the drill's workload after reset, the one for the shape
// the scenario needs (the engine has checked the lab has it).
func prepare(ctx context.Context, l lab.Lab, sc scenario.Scenario) error {
	if err := sampler.Reset(); err != nil {
		return err
	}
	path, err := l.Kubeconfig("")
	if err != nil {
		return err
	}
	cs, _, err := source.ClientFromKubeconfig(path, 10*time.Second)
	if err != nil {
		return err
	}
	switch sc.Shape.Name {
	case drills.Pair.Name:
		s, err := drills.PairShapeOf(l)
		if err != nil {
			return err
		}
		ns, deps, sets, pods := drills.PairObjects(s.Worker)
		return drills.Install(ctx, cs, ns, deps, sets, pods, 3*time.Minute)
	case drills.Racks.Name:
		s, err := drills.RacksShapeOf(l)
		if err != nil {
			return err
		}
		ns, deps, sets, pods := drills.RacksObjects(s)
		if err := drills.Install(ctx, cs, ns, deps, sets, pods, 3*time.Minute); err != nil {
			return err
		}
		p, err := l.Timers()
		if err != nil {
			return err
		}
		if err := drills.PlaceLeaders(ctx, l, cs, s, p.LeaderLeaseDuration, sampler.Note); err != nil {
			return err
		}
		return drills.PlaceVirtualAddress(ctx, l, s, sampler.Note)
	}
	return fmt.Errorf("scenario %s needs neither the %s nor the %s shape", sc.ID, drills.Pair.Name, drills.Racks.Name)
}
