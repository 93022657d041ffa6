package disagree_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/faultline/faultline/fixtures"
	// The images the local lab loads into its nodes: this suite's fixtures.
	_ "github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/evidence/sampler"
	_ "github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
	"github.com/faultline/faultline/lab/topology"
	_ "github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/suites/disagree"
)

func TestDisagree(t *testing.T) {
	if !scenario.LabGiven() {
		t.Skip("the disagree suite runs against a lab: set " + scenario.EnvLab + " to a lab file or a topology name such as lab11 (or " + scenario.EnvLabs + " to several, one per ginkgo process)")
	}
	RegisterFailHandler(Fail)
	scenario.RunSuite(t, "disagree: Kubernetes' guarantees when its components disagree")
}

// profile holds the bounds derived from the timers of the lab file
// FAULTLINE_LAB names; every window and settle bound of the table is one.
var profile = func() disagree.Bounds {
	p, err := scenario.TimersFromEnv()
	if err != nil {
		panic(err.Error())
	}
	return disagree.BoundsFor(p)
}()

// lab11Shape is the shape every scenario of the paper needs, for the
// engine to check before it touches the lab (label topology:lab11):
// lab11's hosts and roles, which paper 2 runs on too.
var lab11Shape = scenario.Shape{Name: topology.Lab11.Name, Check: topology.Lab11.CheckLab}

// suiteSampler takes every snapshot; faults that act through the API as a
// user would (a forced deletion) note what they did on its timeline
// (Sampler.Note).
var suiteSampler = sampler.New(sampler.Options{})

// The suite refuses a lab without lab11's shape before it touches it, and
// its self-check (every positive control VIOLATED, every null arm clean)
// fails the suite when a control does not come out as it must.
var _ = scenario.Register(scenario.Suite{
	Name:        "disagree",
	OpenLab:     scenario.OpenLabFromEnv,
	Sampler:     suiteSampler,
	SampleEvery: disagree.SampleEvery,
	Shape:       lab11Shape,
	VerifyLab:   verifyLab,
	Prepare:     installFixtures,
	SelfCheck:   true,
}, table())

// verifyLab refuses a lab whose timers are not the ones the table's
// bounds came from (the engine checks the lab's shape, Suite.Shape).
func verifyLab(_ context.Context, l lab.Lab) error {
	got, err := l.Timers()
	if err != nil {
		return fmt.Errorf("the lab's timers: %w", err)
	}
	if got != profile.Timers {
		return fmt.Errorf("the lab runs timers %+v (profile %q) but the scenario bounds were derived from %+v (profile %q, its lab file's); bring the lab up with the profile its file names",
			got, got.Profile, profile.Timers, profile.Profile)
	}
	return nil
}

// installFixtures installs the workloads every scenario reads: the
// stateful pod pinned to worker1 as a preference (so a replacement may go
// elsewhere, which single-copy needs to be able to see), the test
// Deployment and Service, the orphan on worker2, and the register writer
// on worker3 writing through the virtual address (or through the one API
// server the scenario's Writer names).
func installFixtures(ctx context.Context, l lab.Lab, sc scenario.Scenario) error {
	// What the timeline watcher saw while the lab was put back belongs to
	// no run.
	if n := suiteSampler.DiscardEvents(); n > 0 {
		fmt.Fprintf(GinkgoWriter, "timeline: %d events of the reset left out\n", n)
	}
	path, err := l.Kubeconfig("")
	if err != nil {
		return fmt.Errorf("installing fixtures: admin kubeconfig: %w", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return fmt.Errorf("installing fixtures: reading %s: %w", path, err)
	}
	o := fixtures.Options{
		StatefulNode: "worker1",
		OrphanNode:   "worker2",
		WriterNode:   "worker3",
		Timeout:      profile.Fixtures,
	}
	// The virtual address, unless the scenario routes its writer to one
	// API server.
	if o.APIServer, err = disagree.WriterAPIServer(sc.Writer, l); err != nil {
		return fmt.Errorf("installing fixtures: %w", err)
	}
	// Right after a reset the virtual address may still move between API
	// servers and reset connections; Install is idempotent (what exists is
	// kept), so it is tried again until the fixtures bound runs out.
	start := time.Now()
	deadline := start.Add(profile.Fixtures)
	for attempt := 1; ; attempt++ {
		err := fixtures.Install(ctx, cfg, o)
		if err == nil {
			fmt.Fprintf(GinkgoWriter, "fixtures ready after %s (attempt %d)\n", time.Since(start).Round(time.Second), attempt)
			return waitConverged(ctx, l, time.Until(deadline))
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("after %d attempts in %s: %w", attempt, time.Since(start).Round(time.Second), err)
		}
		fmt.Fprintf(GinkgoWriter, "fixtures, attempt %d: %v; trying again\n", attempt, err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

// waitConverged lets the fixtures settle (kube-proxy programming their
// endpoints on every node) before the engine takes its baseline, within
// what is left of the fixtures bound.
func waitConverged(ctx context.Context, l lab.Lab, bound time.Duration) error {
	start := time.Now()
	unsettled, err := scenario.WaitConverged(ctx, suiteSampler, l, invariant.All(profile.Invariants), max(bound, 30*time.Second), time.Second)
	if err != nil {
		return err
	}
	if len(unsettled) > 0 {
		fmt.Fprintf(GinkgoWriter, "fixtures not settled after %s: %s\n", time.Since(start).Round(time.Second), strings.Join(unsettled, "; "))
	} else {
		fmt.Fprintf(GinkgoWriter, "fixtures settled after %s\n", time.Since(start).Round(time.Second))
	}
	return nil
}
