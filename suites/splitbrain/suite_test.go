package splitbrain_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	// The images the local lab loads into its nodes.
	_ "github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	_ "github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
	_ "github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/suites/splitbrain"
)

func TestSplitbrain(t *testing.T) {
	if !scenario.LabGiven() {
		t.Skip("the splitbrain suite runs against a lab with storage: set " + scenario.EnvLab + " to a lab file or a topology name such as lab11s (or " + scenario.EnvLabs + " to several, one per ginkgo process)")
	}
	RegisterFailHandler(Fail)
	scenario.RunSuite(t, "splitbrain: what becomes of stored data when two copies each act as the only one")
}

// profile holds the bounds derived from the timers of the lab file the
// environment names (splitbrain.BoundsFor): the waits of node faults come
// from the node controller's timers.
var profile = func() splitbrain.Bounds {
	p, err := scenario.TimersFromEnv()
	if err != nil {
		panic(err.Error())
	}
	return splitbrain.BoundsFor(p)
}()

var suiteSampler = sampler.New(sampler.Options{Extras: splitbrain.Extras()})

var _ = scenario.Register(scenario.Suite{
	Name:        "splitbrain",
	OpenLab:     scenario.OpenLabFromEnv,
	Sampler:     suiteSampler,
	SampleEvery: splitbrain.SampleEvery,
	Shape:       splitbrain.Lab11S,
	Prepare:     installFixtures,
}, table())

// fixturesTimeout bounds installing a workload: a claim bound, a volume
// attached and staged, the pod ready.
const fixturesTimeout = 2 * time.Minute

// installFixtures installs the workloads the scenario names (its
// workload: labels), each on the claim class of its volume: label, and
// waits until they run on worker1. The readers learn the same workloads
// and volume from the run's labels, which the engine hands the sampler
// (sampler.Env.Run).
func installFixtures(ctx context.Context, l lab.Lab, sc scenario.Scenario) error {
	if n := suiteSampler.DiscardEvents(); n > 0 {
		fmt.Fprintf(GinkgoWriter, "timeline: %d events of the reset left out\n", n)
	}
	ws, err := splitbrain.WorkloadsOf(sc.Labels)
	if err != nil {
		return fmt.Errorf("scenario %s: %w", sc.ID, err)
	}
	if err := suiteSampler.Reset(); err != nil {
		return fmt.Errorf("installing the workloads: %w", err)
	}
	sd, ok := l.(lab.StoredData)
	if !ok {
		return fmt.Errorf("installing the workloads: lab %s offers no storage", l.Config().Name)
	}
	info, err := sd.StorageInfo()
	if err != nil {
		return fmt.Errorf("installing the workloads: %w", err)
	}
	class, err := classOf(sc, info)
	if err != nil {
		return fmt.Errorf("installing the workloads: %w", err)
	}
	cs, err := adminClient(l)
	if err != nil {
		return fmt.Errorf("installing the workloads: %w", err)
	}
	for _, w := range ws {
		install, _ := splitbrain.InstallerOf(w)
		if err := install(ctx, cs, splitbrain.Install{Labels: sc.Labels, Class: class, Lab: l, Info: info, Timeout: fixturesTimeout}); err != nil {
			return fmt.Errorf("installing %s: %w", w, err)
		}
	}
	return nil
}

// classOf is the StorageClass of the kind of volume a scenario stores on
// (splitbrain.VolumeOf its labels, as the readers read it); empty when it
// names none (a workload that keeps its data off the cluster's volumes).
func classOf(sc scenario.Scenario, info lab.StorageInfo) (string, error) {
	kind := splitbrain.VolumeOf(sc.Labels)
	if kind == "" {
		return "", nil
	}
	class := map[string]string{"shared": info.SharedClass, "block": info.BlockClass, "block-mmp": info.BlockMMPClass, "block-fenced": info.BlockFencedClass}[kind]
	if class == "" {
		return "", fmt.Errorf("scenario %s stores on a %s volume, which the lab's storage does not offer", sc.ID, kind)
	}
	return class, nil
}

// quiesce is the Quiesce of a scenario with labels: it stops the
// scenario's workloads after heal and waits until no node mounts the
// volumes of those its labels name (splitbrain.Quiesce), so the final
// reads see the stored state as it stays.
func quiesce(labels []string) func(ctx context.Context, l lab.Lab) error {
	return func(ctx context.Context, l lab.Lab) error {
		ws, err := splitbrain.WorkloadsOf(labels)
		if err != nil {
			return fmt.Errorf("quiesce: %w", err)
		}
		sd, ok := l.(lab.StoredData)
		if !ok {
			return fmt.Errorf("quiesce: lab %s offers no storage", l.Config().Name)
		}
		cs, err := adminClient(l)
		if err != nil {
			return fmt.Errorf("quiesce: %w", err)
		}
		return splitbrain.Quiesce(ctx, cs, sd, ws, splitbrain.QuiesceTimeout, func(f string, a ...any) {
			fmt.Fprintf(GinkgoWriter, f+"\n", a...)
		})
	}
}

// adminClient is a client of the lab's admin kubeconfig.
func adminClient(l lab.Lab) (kubernetes.Interface, error) {
	path, err := l.Kubeconfig("")
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	cs, _, err := source.ClientFromKubeconfig(path, 10*time.Second)
	return cs, err
}
