package agents_test

import (
	"context"
	"time"

	"github.com/faultline/faultline/framework/fault/faults"
	"github.com/faultline/faultline/framework/invariant"
	"github.com/faultline/faultline/framework/scenario"
	"github.com/faultline/faultline/lab"
	"github.com/faultline/faultline/suites/agents"
)

// replaceBackend is the feasibility check's change: the service's only
// backend replaced by another on the same node.
var replaceBackend = &scenario.Change{
	Name:  "replace the only backend of " + agents.Namespace + "/" + agents.Service,
	After: 5 * time.Second,
	Make: func(ctx context.Context, l lab.Lab) error {
		cs, err := adminClient(l)
		if err != nil {
			return err
		}
		return agents.ReplaceBackend(ctx, cs)
	},
}

// table is the paper in the order it runs: the feasibility check first.
func table() []scenario.Scenario {
	return scenario.WithNullArms(
		scenario.Scenario{
			ID:         "feasibility-kube-proxy-frozen",
			Title:      "kube-proxy frozen on worker1 while the service's only backend is replaced: worker1 keeps the old backend",
			Labels:     []string{"paper:agents", "component:kube-proxy", "feasibility"},
			CI:         true,
			Shape:      disagreeShape,
			Fault:      faults.Freeze("worker1", lab.ServiceKubeProxy),
			Change:     replaceBackend,
			Window:     40 * time.Second,
			Settle:     30 * time.Second,
			Invariants: agents.Invariants(),
			// The check tests the detector: with kube-proxy frozen the
			// node must be seen keeping the old backend, or the paper
			// cannot tell a node that applies from one that does not.
			ControlOf: []string{invariant.ServiceRoutesTruthfulName},
		},
	)
}
