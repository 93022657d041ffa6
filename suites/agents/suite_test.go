package agents_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/faultline/faultline/kits/dataplane"

	"github.com/faultline/faultline/kits/dataplane/readers"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	// The images the local lab loads into its nodes.
	_ "github.com/faultline/faultline/fixtures/images"
	"github.com/faultline/faultline/framework/evidence"
	"github.com/faultline/faultline/framework/evidence/sampler"
	"github.com/faultline/faultline/framework/evidence/source"
	_ "github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	_ "github.com/faultline/faultline/lab/backends"
	"github.com/faultline/faultline/lab/topology"
	_ "github.com/faultline/faultline/reports"
	"github.com/faultline/faultline/suites/agents"
)

func TestAgents(t *testing.T) {
	if !scenario.LabGiven() {
		t.Skip("the agents suite runs against a lab: set " + scenario.EnvLab + " to a lab file or a topology name such as lab11 (or " + scenario.EnvLabs + " to several, one per ginkgo process)")
	}
	RegisterFailHandler(Fail)
	scenario.RunSuite(t, "agents: do the agents on each node apply what the API server records?")
}

var suiteSampler = sampler.New(sampler.Options{Extras: agents.Extras()})

var _ = scenario.Register(scenario.Suite{
	Name:        "agents",
	OpenLab:     scenario.OpenLabFromEnv,
	Sampler:     suiteSampler,
	SampleEvery: agents.SampleEvery,
	Shape:       lab11Shape,
	Prepare:     installFixtures,
	// The feasibility check runs first: if the detector cannot see a node
	// keep old rules, nothing after it can be read.
	TableOrder: true,
	// Once every run is recorded, every positive control must have come
	// out VIOLATED on what it controls and no null arm VIOLATED.
	SelfCheck: true,
}, table())

// fixturesTimeout bounds installing the fixtures and waiting for every
// client node to program the service.
const fixturesTimeout = 2 * time.Minute

// adminRequestTimeout bounds one request of the suite's own admin client
// (fixtures and changes).
const adminRequestTimeout = 10 * time.Second

func adminClient(l lab.Lab) (kubernetes.Interface, error) { return adminClientOf(l, "") }

// adminClientOf is an admin client of the API server on target alone (""
// for the lab's usual address).
func adminClientOf(l lab.Lab, target string) (kubernetes.Interface, error) {
	path, err := l.Kubeconfig(target)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}
	cs, _, err := source.ClientFromKubeconfig(path, adminRequestTimeout)
	return cs, err
}

// installFixtures installs the backend, the service and the client pods,
// then waits until every client node's kube-proxy forwards the service to
// the backend, so the baseline starts agreed.
func installFixtures(ctx context.Context, l lab.Lab, sc scenario.Scenario) error {
	if n := suiteSampler.DiscardEvents(); n > 0 {
		fmt.Fprintf(GinkgoWriter, "timeline: %d events of the reset left out\n", n)
	}
	// The readers keep what they looked up (the client pods' and the
	// target's addresses, the service's): a reset makes new pods, so
	// every reader is made again for the run.
	if err := suiteSampler.Reset(); err != nil {
		return fmt.Errorf("installing the agents' fixtures: %w", err)
	}
	cs, err := adminClient(l)
	if err != nil {
		return fmt.Errorf("installing the agents' fixtures: %w", err)
	}
	start := time.Now()
	var lastErr error
	for time.Since(start) < fixturesTimeout {
		if lastErr = agents.Install(ctx, cs, fixturesTimeout-time.Since(start)); lastErr == nil {
			break
		}
		fmt.Fprintf(GinkgoWriter, "fixtures: %v; trying again\n", lastErr)
		time.Sleep(2 * time.Second)
	}
	if lastErr != nil {
		return fmt.Errorf("installing the agents' fixtures: %w", lastErr)
	}
	// The clients whose connections to the target must have their
	// recorded outcome before the baseline, by node.
	clients := map[string][]string{}
	for _, n := range agents.ClientNodes {
		clients[n] = append(clients[n], agents.ClientPod(n))
	}
	for _, np := range startPolicies[sc.ID] {
		p := np()
		if err := agents.CreatePolicy(ctx, cs, p); err != nil {
			return fmt.Errorf("installing the agents' fixtures: %w", err)
		}
		if p.Name == agents.DenyNewcomer {
			// The witness shows the policy handled before the newcomer
			// starts: its egress must be rejected before the baseline.
			if err := agents.InstallWitness(ctx, cs); err != nil {
				return fmt.Errorf("installing the agents' fixtures: %w", err)
			}
			clients[agents.NewcomerNode] = append(clients[agents.NewcomerNode], agents.Witness)
		}
	}
	if err := waitProgrammed(ctx, l, cs, fixturesTimeout-time.Since(start)); err != nil {
		return err
	}
	return waitEnforced(ctx, l, cs, clients, fixturesTimeout-time.Since(start))
}

// waitEnforced waits until every client pod's connection to the target
// (clients by node) has the outcome the recorded policies give it.
func waitEnforced(ctx context.Context, l lab.Lab, cs kubernetes.Interface, clients map[string][]string, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		exp, _, err := agents.ReadPolicyExpectation(ctx, cs)
		if err != nil {
			last = err.Error()
			time.Sleep(time.Second)
			continue
		}
		done := true
		for n, pods := range clients {
			h, err := l.Host(n)
			if err != nil {
				return err
			}
			for _, pod := range pods {
				d := readers.NewPodDialer(h, cs, dataplane.AgentPolicyProbe, agents.Namespace, pod,
					func(ctx context.Context) (string, error) { return agents.PodAddress(ctx, cs, agents.Target) }, "/hostname", time.Second)
				ans := d.Read(ctx)[dataplane.AgentPolicyProbe]
				var v dataplane.DialValue
				if err := ans.Decode(&v); err != nil {
					done, last = false, pod+": "+ans.Reason
					continue
				}
				for _, p := range exp.Pairs {
					// A denial holds only when the connection is rejected:
					// a timeout is a lost or slow path.
					if p.From == v.From && p.Target == v.Target && (p.Allowed != v.Answered() || (!p.Allowed && !v.Rejected())) {
						done, last = false, fmt.Sprintf("%s → %s: allowed %v, answered %v (%s)", p.From, p.Target, p.Allowed, v.Answered(), v.Error)
					}
				}
			}
		}
		if done {
			return nil
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the policies were not enforced as recorded within %s: %s", within.Round(time.Second), last)
}

// waitProgrammed waits until every client node forwards the service to
// the first backend and nothing else.
func waitProgrammed(ctx context.Context, l lab.Lab, cs kubernetes.Interface, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		eps, _, err := readReady(ctx, cs)
		if err != nil {
			last = err.Error()
		} else {
			done := len(eps) == 1
			for _, n := range agents.ClientNodes {
				h, err := l.Host(n)
				if err != nil {
					return err
				}
				ans := source.ProxyFor(l, source.NewServiceProxy("kube-proxy/"+evidence.Source(n), h, dataplane.AgentServiceTranslation, agents.Namespace, agents.Service)).Read(ctx)[dataplane.AgentServiceTranslation]
				var v evidence.ProxyBackendsValue
				if err := ans.Decode(&v); err != nil {
					done, last = false, fmt.Sprintf("%s: %s", n, ans.Reason)
					continue
				}
				var got []string
				for _, p := range v.Ports {
					got = append(got, p.Backends...)
				}
				if len(eps) != 1 || !slices.Equal(got, []string{eps[0] + ":8080"}) {
					done, last = false, fmt.Sprintf("%s forwards to %v, the API records %v", n, got, eps)
				}
			}
			if done {
				return nil
			}
		}
		time.Sleep(time.Second)
	}
	return fmt.Errorf("the client nodes did not program the agents' service within %s: %s", within.Round(time.Second), last)
}

func readReady(ctx context.Context, cs kubernetes.Interface) ([]string, string, error) {
	v, rv, err := agents.ReadServiceEndpoints(ctx, cs)
	if err != nil {
		return nil, "", err
	}
	return v.Ready, rv, nil
}

// lab11Shape is the shape the suite and its scenarios need (label
// topology:lab11): lab11's hosts and roles, the lab paper 1 runs on too.
var lab11Shape = scenario.Shape{Name: topology.Lab11.Name, Check: topology.Lab11.CheckLab}
