//go:build lab

// The drills run against a lab: go test -tags lab ./suites/drills with
// FAULTLINE_LAB naming a lab of the pair or racks shape.

package drills_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	// The images the local lab loads into its nodes: this suite's fixtures.
	_ "github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/evidence"
	evsampler "github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
	"github.com/faultline/faultline/suites/drills"
)

func TestDrills(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "drills")
}

// The hosts as the drills' topologies (testdata/labs/pair.yaml, racks.yaml)
// name them; a copy of a topology under another lab name keeps them.
var (
	pairWorker = "pair-worker"
	racks      = drills.RacksShape{M1: "m1", W1: "w1", M2: "m2", W2: "w2"}
)

var sampler = drills.NewSampler(func(l lab.Lab) (evidence.Sampler, error) {
	subjects := evidence.Subjects{PodNamespace: drills.Namespace, ServiceNamespace: drills.Namespace, ServiceName: drills.DeploymentName}
	if s, err := drills.PairShapeOf(l); err == nil {
		subjects.Node, subjects.PodName = s.Worker, drills.OrphanName
	} else if r, err := drills.RacksShapeOf(l); err == nil {
		subjects.Node, subjects.PodName = r.W1, drills.StatefulPodName
	} else {
		return nil, fmt.Errorf("lab %s has neither the pair nor the racks shape", l.Info().Name)
	}
	return evsampler.New(evsampler.Options{Sources: source.Options{Subjects: subjects}}), nil
})

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

// prepare installs the drill's workload after reset, the one that fits the
// lab's shape, and skips a scenario written for the other shape.
func prepare(ctx context.Context, l lab.Lab) error {
	if err := sampler.Reset(); err != nil {
		return err
	}
	labels := CurrentSpecReport().Labels()
	path, err := l.Kubeconfig("")
	if err != nil {
		return err
	}
	cs, _, err := source.ClientFromKubeconfig(path, 10*time.Second)
	if err != nil {
		return err
	}
	switch {
	case slices.Contains(labels, drills.LabelPair):
		s, err := drills.PairShapeOf(l)
		if err != nil {
			Skip(err.Error())
		}
		ns, deps, sets, pods := drills.PairObjects(s.Worker)
		return drills.Install(ctx, cs, ns, deps, sets, pods, 3*time.Minute)
	case slices.Contains(labels, drills.LabelRacks):
		s, err := drills.RacksShapeOf(l)
		if err != nil {
			Skip(err.Error())
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
	return fmt.Errorf("scenario has neither label %s nor %s", drills.LabelPair, drills.LabelRacks)
}
